"""rlkit.persistence.env_state: a venv's episode in progress, captured and written into a freshly
built one, steps on exactly as the original does; what it cannot hold in full it does not claim."""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from envs.pixels import make_pixel_env
from rlkit.errors import InvalidDataError
from rlkit.persistence.env_state import capture, restore
from rlkit.wrappers import RewardVecEnvWrapper


def state_reward(obs, acts, next_obs, dones):
    """A learned reward stands in: any function of the transition."""
    return np.tanh(next_obs.reshape(len(next_obs), -1).mean(axis=1)).astype(np.float32)


def hopper(seed: int) -> VecEnv:
    return RewardVecEnvWrapper(make_vec_env("Hopper-v5", n_envs=2, seed=seed), state_reward)


def pixel_pendulum(seed: int) -> VecEnv:
    venv = make_vec_env(lambda: make_pixel_env("rlkit/PixelPendulum-v0", size=16, max_episode_steps=30),
                        n_envs=2, seed=seed)
    return RewardVecEnvWrapper(venv, state_reward)


def pixel_point_mass(seed: int) -> VecEnv:
    return make_vec_env(lambda: make_pixel_env("rlkit/PixelPointMass-v0", size=16, max_episode_steps=30),
                        n_envs=1, seed=seed)


def copy_rngs(source: VecEnv, target: VecEnv) -> None:
    """The caller's part (``rlkit.factories.resumable`` keeps the env RNGs as data)."""
    for index, generator in enumerate(source.get_attr("np_random")):
        fresh = target.get_attr("np_random", indices=[index])[0]
        fresh.bit_generator.state = generator.bit_generator.state
        target.set_attr("np_random", fresh, indices=[index])


@pytest.mark.parametrize("make", [hopper, pixel_pendulum, pixel_point_mass])
def test_a_fresh_venv_given_the_state_steps_on_as_the_original(make: Callable[[int], VecEnv]):
    rng = np.random.default_rng(0)
    original = make(5)
    original.reset()
    n, shape = original.num_envs, original.action_space.shape
    for _ in range(17):  # part way through an episode
        original.step(rng.uniform(-1, 1, (n, *shape)).astype(np.float32))
    state = capture(original)
    assert state is not None
    fresh = make(5)  # as a resumed run builds it: never reset
    copy_rngs(original, fresh)
    restore(fresh, state, "state.npz")
    ended = 0
    for step in range(80):  # on past episode ends (early falls, time limits) into new episodes
        actions = rng.uniform(-1, 1, (n, *shape)).astype(np.float32)
        obs_a, rew_a, done_a, info_a = original.step(actions)
        obs_b, rew_b, done_b, info_b = fresh.step(actions)
        np.testing.assert_array_equal(obs_a, obs_b, err_msg=f"step {step}")
        np.testing.assert_array_equal(rew_a, rew_b, err_msg=f"step {step}")
        np.testing.assert_array_equal(done_a, done_b, err_msg=f"step {step}")
        for a, b in zip(info_a, info_b, strict=True):
            if "episode" in a:  # the return of the episode the state was captured in, too
                ended += 1
                assert (a["episode"]["r"], a["episode"]["l"]) == (b["episode"]["r"], b["episode"]["l"])
                assert a.get("learned_episode_return") == b.get("learned_episode_return")
    assert ended >= 2


def test_rl_zoo3s_time_limit_which_importing_it_puts_in_gymnasiums_place_is_kept_as_gymnasiums():
    import rl_zoo3.gym_patches  # noqa: F401  (rlkit imports it for the zoo's hyperparameters)

    venv = make_vec_env("Hopper-v5", n_envs=1, seed=0)
    venv.reset()
    venv.step(np.zeros((1, 3), dtype=np.float32))
    state = capture(venv)  # a point saved where rl-zoo3 was imported resumes where it was not
    assert state is not None and state["env0/1:TimeLimit/elapsed_steps"] == 1


def test_without_the_state_the_fresh_venv_does_not_step_on_alike():
    """The comparison above can fail: a venv reset from the same RNGs is elsewhere."""
    original = hopper(5)
    original.reset()
    for _ in range(17):
        original.step(np.zeros((2, 3), dtype=np.float32))
    fresh = hopper(5)
    copy_rngs(original, fresh)
    fresh.reset()
    zeros = np.zeros((2, 3), dtype=np.float32)
    assert not np.array_equal(original.step(zeros)[0], fresh.step(zeros)[0])


def test_what_it_cannot_hold_in_full_is_none():
    unknown = make_vec_env(lambda: gym.wrappers.RescaleAction(gym.make("Pendulum-v1"), -1.0, 1.0), n_envs=1)
    unknown.reset()
    assert capture(unknown) is None  # a wrapper it does not know
    ant = make_vec_env("Ant-v5", n_envs=1)
    ant.reset()
    assert capture(ant) is None  # reads body positions left from the step before: not kept
    observed = RewardVecEnvWrapper(make_vec_env("Pendulum-v1", n_envs=1), state_reward,
                                   observers=[lambda *args: None])
    observed.reset()
    assert capture(observed) is None  # what observers hold is theirs
    normalised = VecNormalize(hopper(0))  # its statistics are not kept, though it passes on
    normalised.reset()  # attribute lookups to the reward wrapper inside, which can say its state
    assert capture(normalised) is None
    assert capture(hopper(0)) is None  # never reset: no episode to keep


def test_a_state_for_other_layers_or_shapes_is_refused_naming_them():
    original = hopper(1)
    original.reset()
    state = capture(original)
    assert state is not None
    with pytest.raises(InvalidDataError, match=r"state\.npz: an env state of the layers .*HopperEnv.*"
                                               r"this env's are .*PendulumEnv"):
        restore(make_vec_env("Pendulum-v1", n_envs=2), state, "state.npz")
    with pytest.raises(InvalidDataError, match="'env7/0:Monitor', which is not one of this env's layers"):
        restore(hopper(1), {**state, "env7/0:Monitor/rewards": np.zeros(2)}, "state.npz")
    short = {**state, "vec0:RewardVecEnvWrapper/prev_obs": np.zeros((1, 11))}
    with pytest.raises(InvalidDataError, match=r"vec0:RewardVecEnvWrapper does not fit this env .*\(1, 11\)"):
        restore(hopper(1), short, "state.npz")
    mujoco = {**state, "env0/4:HopperEnv/integration": np.zeros(3)}
    with pytest.raises(InvalidDataError, match="env0/4:HopperEnv does not fit this env"):
        restore(hopper(1), mujoco, "state.npz")

"""The fixed-horizon wrapper: equal-length episodes, zero-reward flagged absorbing steps."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.classic_control import CartPoleEnv
from gymnasium.utils.env_checker import check_env

from envs.fixed_horizon import FixedHorizon, make_fixed_horizon
from rlkit.errors import InvalidDataError


def run_episode(env: gym.Env, seed: int) -> tuple[np.ndarray, np.ndarray, list[dict], bool]:
    obs, _ = env.reset(seed=seed)
    observations, rewards, infos = [obs], [], []
    env.action_space.seed(seed)
    while True:
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        observations.append(obs)
        rewards.append(reward)
        infos.append(info)
        if terminated or truncated:
            return np.array(observations), np.array(rewards), infos, terminated


def test_episodes_have_equal_length_and_absorb_after_termination():
    env = FixedHorizon(CartPoleEnv(), horizon=60)  # random CartPole falls in ~20 steps
    assert env.observation_space.shape == (5,)
    for seed in range(3):
        obs, rewards, infos, terminated = run_episode(env, seed)
        assert len(rewards) == 60 and not terminated
        end = next(i for i, info in enumerate(infos) if info.get("inner_terminated"))
        assert end < 59
        # up to and including the terminal step: real states, flag 0, the env's reward
        assert (obs[: end + 2, -1] == 0).all() and (rewards[: end + 1] == 1.0).all()
        # afterwards: the absorbing state, flag 1, zero reward
        assert (obs[end + 2 :, -1] == 1).all() and (obs[end + 2 :, :-1] == 0).all()
        assert (rewards[end + 1 :] == 0).all()
        assert all(info.get("absorbing") for info in infos[end + 1 :])


def test_unpadded_episodes_end_at_termination_with_the_same_observations():
    padded = FixedHorizon(CartPoleEnv(), horizon=60)
    unpadded = FixedHorizon(CartPoleEnv(), horizon=60, pad=False)
    assert unpadded.observation_space == padded.observation_space
    for seed in range(3):
        obs, rewards, infos, terminated = run_episode(unpadded, seed)
        whole, _, whole_infos, _ = run_episode(padded, seed)
        end = next(i for i, info in enumerate(whole_infos) if info.get("inner_terminated"))
        # the padded episode's real part, then the episode ends (terminated: no bootstrap)
        assert terminated and len(rewards) == end + 1 and infos[-1]["inner_terminated"]
        np.testing.assert_array_equal(obs, whole[: end + 2])
        assert (obs[:, -1] == 0).all() and (rewards == 1.0).all()


def test_the_real_part_of_a_padded_trajectory_is_the_unpadded_episode():
    from rlkit.apec.rollouts import real_part
    from rlkit.data import Trajectory

    def trajectory(env: gym.Env, seed: int) -> Trajectory:
        obs, rewards, _, terminated = run_episode(env, seed)
        return Trajectory(obs=obs, acts=np.zeros((len(rewards), 1)), rews=rewards, terminal=terminated)

    for seed in range(3):
        cut = real_part(trajectory(FixedHorizon(CartPoleEnv(), horizon=60), seed))
        episode = trajectory(FixedHorizon(CartPoleEnv(), horizon=60, pad=False), seed)
        np.testing.assert_array_equal(cut.obs, episode.obs)
        np.testing.assert_array_equal(cut.rews, episode.rews)
        assert cut.terminal and episode.terminal
    never_ends = trajectory(FixedHorizon(gym.make("Pendulum-v1"), horizon=50), 0)
    assert real_part(never_ends) is never_ends


def test_episode_without_termination_just_gets_the_flag():
    env = FixedHorizon(gym.make("Pendulum-v1"), horizon=200)
    obs, rewards, _, _ = run_episode(env, 0)
    assert len(rewards) == 200 and (obs[:, -1] == 0).all() and (rewards < 0).all()


@pytest.mark.filterwarnings("ignore:.*different from the unwrapped:UserWarning")
@pytest.mark.filterwarnings("ignore:.*Box observation space m:UserWarning")  # CartPole's inf bounds
def test_passes_the_gymnasium_env_checker():
    check_env(FixedHorizon(CartPoleEnv(), horizon=30), skip_render_check=True)


def test_stepping_past_the_horizon_and_bad_inputs_fail_clearly():
    env = FixedHorizon(CartPoleEnv(), horizon=3)
    run_episode(env, 0)
    with pytest.raises(RuntimeError, match="horizon=3"):
        env.step(0)
    with pytest.raises(InvalidDataError, match="max_episode_steps=200"):
        FixedHorizon(gym.make("Pendulum-v1"), horizon=1000)
    with pytest.raises(InvalidDataError, match="horizon"):
        FixedHorizon(CartPoleEnv(), horizon=0)


def test_make_fixed_horizon_defaults_to_and_lifts_the_time_limit():
    assert make_fixed_horizon("CartPole-v1").horizon == 500
    env = make_fixed_horizon("Pendulum-v1", horizon=300)  # registered limit 200, lifted to 300
    assert len(run_episode(env, 0)[1]) == 300

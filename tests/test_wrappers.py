"""The gymnasium and SB3 reward wrappers: the agent sees the learned reward, logs see the truth."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from rlkit.errors import InvalidDataError
from rlkit.logging import attach_to_sb3
from rlkit.wrappers import RewardVecEnvWrapper, RewardWrapper

Array = np.ndarray


class RecordingReward:
    """``-obs[:, 0] + acts[:, 0] + 10 * dones``, so a wrong obs/act/done shows in the reward;
    every call's inputs are kept so tests can check ``next_obs`` too."""

    def __init__(self) -> None:
        self.calls: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def __call__(
        self, obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray, dones: np.ndarray
    ) -> np.ndarray:
        self.calls.append((obs.copy(), acts.copy(), next_obs.copy(), dones.copy()))
        return expected_reward(obs, acts, dones)


def expected_reward(obs: np.ndarray, acts: np.ndarray, dones: np.ndarray) -> np.ndarray:
    acts = acts.reshape(len(acts), -1).astype(np.float32)
    return (-obs[:, 0] + acts[:, 0] + 10.0 * dones).astype(np.float32)


class StepLog:
    """A step observer that keeps copies of everything it is shown."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []

    def __call__(
        self,
        obs: np.ndarray,
        acts: np.ndarray,
        next_obs: np.ndarray,
        true_rews: np.ndarray,
        dones: np.ndarray,
        terminal: np.ndarray,
        infos: list[dict[str, Any]],
    ) -> None:
        self.steps.append(
            {
                "obs": obs.copy(),
                "acts": acts.copy(),
                "next_obs": next_obs.copy(),
                "true_rews": true_rews.copy(),
                "dones": dones.copy(),
                "terminal": terminal.copy(),
                "infos": [dict(info) for info in infos],
            }
        )


def pendulum_actions(n_steps: int, n_envs: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, size=(n_steps, n_envs, 1)).astype(np.float32)


def test_vec_replace_gives_learned_reward_and_keeps_true_reward() -> None:
    n_envs, n_steps = 3, 25
    reward_fn = RecordingReward()
    wrapped = RewardVecEnvWrapper(make_vec_env("Pendulum-v1", n_envs=n_envs, seed=4), reward_fn)
    plain = make_vec_env("Pendulum-v1", n_envs=n_envs, seed=4)
    obs, plain_obs = wrapped.reset(), plain.reset()
    for actions in pendulum_actions(n_steps, n_envs, seed=1):
        expected = expected_reward(plain_obs, actions, np.zeros(n_envs, dtype=bool))
        obs, rewards, _, infos = wrapped.step(actions)
        plain_obs, plain_rewards, _, _ = plain.step(actions)
        np.testing.assert_array_equal(obs, plain_obs)
        np.testing.assert_array_equal(rewards, expected)
        assert rewards.dtype == np.float32
        assert [info["original_reward"] for info in infos] == plain_rewards.tolist()
    assert len(reward_fn.calls) == n_steps  # one batched call per step, not one per env
    assert {(c[0].shape, c[1].shape) for c in reward_fn.calls} == {((n_envs, 3), (n_envs, 1))}


def test_vec_add_mode_adds_learned_to_env_reward() -> None:
    venv = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
    wrapped = RewardVecEnvWrapper(venv, RecordingReward(), "add")
    plain = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
    wrapped.reset()
    plain_obs = plain.reset()
    for actions in pendulum_actions(5, 2, seed=2):
        learned = expected_reward(plain_obs, actions, np.zeros(2, dtype=bool))
        _, rewards, _, _ = wrapped.step(actions)
        plain_obs, plain_rewards, _, _ = plain.step(actions)
        np.testing.assert_allclose(rewards, plain_rewards + learned, rtol=1e-6)


def test_vec_episode_end_uses_terminal_observation_and_true_termination() -> None:
    """CartPole pushed right falls over (a true termination) at a step a plain env tells us."""
    reference = gym.make("CartPole-v1")
    final_obs, _ = reference.reset(seed=11)
    n_until_fall = 0
    terminated = False
    while not terminated:
        final_obs, _, terminated, _, _ = reference.step(1)
        n_until_fall += 1

    venv = DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2)
    venv.seed(11)  # env 0 gets seed 11, like the reference
    reward_fn, log = RecordingReward(), StepLog()
    wrapped = RewardVecEnvWrapper(venv, reward_fn, observers=[log])
    wrapped.reset()
    for _ in range(n_until_fall):
        obs, rewards, dones, infos = wrapped.step(np.array([1, 0]))
    last = log.steps[-1]
    assert dones[0] and last["terminal"][0]
    np.testing.assert_array_equal(reward_fn.calls[-1][2][0], final_obs)  # next_obs is terminal obs
    np.testing.assert_array_equal(last["next_obs"][0], final_obs)
    assert not np.array_equal(obs[0], final_obs)  # the agent already sees the reset observation
    assert reward_fn.calls[-1][3][0]  # the reward net is told the episode truly ended
    learned = [expected_reward(s["obs"], s["acts"], s["terminal"])[0] for s in log.steps]
    assert rewards[0] == learned[-1]
    # No Monitor inside: the wrapper reports the TRUE return (CartPole pays 1 per step).
    assert infos[0]["episode"]["r"] == float(n_until_fall)
    assert infos[0]["episode"]["l"] == n_until_fall
    assert infos[0]["learned_episode_return"] == pytest.approx(sum(map(float, learned)), rel=1e-5)
    assert len(log.steps) == n_until_fall and log.steps[0]["obs"].shape == (2, 4)


def test_vec_time_limit_is_done_but_not_terminal() -> None:
    venv = DummyVecEnv([lambda: gym.make("Pendulum-v1", max_episode_steps=5)] * 2)
    reference = DummyVecEnv([lambda: gym.make("Pendulum-v1", max_episode_steps=5)] * 2)
    venv.seed(3)
    reference.seed(3)
    reward_fn, log = RecordingReward(), StepLog()
    wrapped = RewardVecEnvWrapper(venv, reward_fn, observers=[log])
    wrapped.reset()
    reference.reset()
    true_total = np.zeros(2)
    for actions in pendulum_actions(5, 2, seed=5):
        _, _, dones, infos = wrapped.step(actions)
        _, ref_rewards, _, ref_infos = reference.step(actions)
        true_total += ref_rewards
    assert dones.all()
    assert not log.steps[-1]["terminal"].any() and not reward_fn.calls[-1][3].any()
    for i in range(2):
        final = ref_infos[i]["terminal_observation"]
        np.testing.assert_array_equal(log.steps[-1]["next_obs"][i], final)
        assert infos[i]["episode"]["r"] == pytest.approx(true_total[i], rel=1e-6)
        assert infos[i]["episode"]["l"] == 5


def test_vec_keeps_inner_monitor_episode_which_is_the_true_return() -> None:
    def constant(obs: Array, acts: Array, next_obs: Array, dones: Array) -> Array:
        return np.full(len(obs), 100.0)

    wrapped = RewardVecEnvWrapper(make_vec_env("CartPole-v1", n_envs=2, seed=0), constant)
    wrapped.reset()
    episodes = []
    for _ in range(200):
        _, _, dones, infos = wrapped.step(np.array([1, 1]))
        for i in np.flatnonzero(dones):
            episodes.append((infos[i]["episode"], infos[i]["learned_episode_return"]))
    assert episodes
    for episode, learned_return in episodes:
        assert episode["r"] == episode["l"]  # Monitor's true return, not 100 per step
        assert learned_return == 100.0 * episode["l"]


def test_vec_non_finite_learned_reward_raises_naming_the_step() -> None:
    def nan_at_step_3(obs: Array, acts: Array, next_obs: Array, dones: Array) -> Array:
        rewards = np.zeros(len(obs))
        if len(nan_calls) == 3:
            rewards[1] = np.nan
        nan_calls.append(1)
        return rewards

    nan_calls: list[int] = []
    wrapped = RewardVecEnvWrapper(make_vec_env("Pendulum-v1", n_envs=2, seed=0), nan_at_step_3)
    wrapped.reset()
    actions = np.zeros((2, 1), dtype=np.float32)
    for _ in range(3):
        wrapped.step(actions)
    with pytest.raises(InvalidDataError, match=r"nan.*step 3"):
        wrapped.step(actions)


def test_vec_rejects_bad_shape_and_bad_mode() -> None:
    wrapped = RewardVecEnvWrapper(
        make_vec_env("Pendulum-v1", n_envs=2, seed=0), lambda o, a, n, d: np.zeros((2, 1))
    )
    wrapped.reset()
    with pytest.raises(InvalidDataError, match=r"shape \(2,\)"):
        wrapped.step(np.zeros((2, 1), dtype=np.float32))
    with pytest.raises(InvalidDataError, match="mode"):
        RewardVecEnvWrapper(make_vec_env("Pendulum-v1", n_envs=1), RecordingReward(), "replace_")


def test_vec_set_reward_fn_swaps_the_model_at_run_time() -> None:
    venv = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
    wrapped = RewardVecEnvWrapper(venv, lambda o, a, n, d: np.zeros(2))
    wrapped.reset()
    actions = np.zeros((2, 1), dtype=np.float32)
    assert wrapped.step(actions)[1].tolist() == [0.0, 0.0]
    wrapped.set_reward_fn(lambda o, a, n, d: np.full(2, 7.0))
    assert wrapped.step(actions)[1].tolist() == [7.0, 7.0]


def test_ppo_trains_on_wrapped_env_and_logs_the_true_return() -> None:
    """SB3's rollout/ep_rew_mean must be the task's return, not the learned reward's."""

    class Collect:
        def __init__(self) -> None:
            self.records: list[tuple[dict[str, float], int]] = []

        def log(self, metrics: dict[str, float], step: int) -> None:
            self.records.append((dict(metrics), step))

        def log_config(self, config: dict[str, Any]) -> None: ...
        def log_image(self, name: str, path: Any, step: int) -> None: ...
        def log_video(self, name: str, path_or_frames: Any, step: int, fps: int = 30) -> None: ...
        def close(self) -> None: ...

    true_returns: list[float] = []
    running = np.zeros(2)

    def track_true_returns(
        obs: Array, acts: Array, next_obs: Array, true_rews: Array, dones: Array,
        terminal: Array, infos: list[dict[str, Any]],
    ) -> None:
        running[:] += true_rews
        for i in np.flatnonzero(dones):
            true_returns.append(float(running[i]))
            running[i] = 0.0

    venv = DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2)  # no Monitor: the wrapper reports
    venv.seed(0)
    wrapped = RewardVecEnvWrapper(
        venv, lambda o, a, n, d: -(o[:, 0] ** 2) - 0.5, observers=[track_true_returns]
    )
    model = PPO("MlpPolicy", wrapped, n_steps=64, batch_size=64, n_epochs=2, seed=0, device="cpu")
    collect = Collect()
    attach_to_sb3(model, collect)
    model.learn(total_timesteps=384)

    key = "rollout/ep_rew_mean"
    logged = [(metrics[key], step) for metrics, step in collect.records if key in metrics]
    assert logged and logged[-1][1] == 384
    assert len(true_returns) < 100  # all within SB3's averaging window
    assert logged[-1][0] == pytest.approx(np.mean(true_returns), rel=1e-6)
    assert logged[-1][0] > 0  # CartPole's true return; the learned reward is always negative


def test_gym_wrapper_replaces_adds_and_reports_true_episode() -> None:
    reward_fn = RecordingReward()
    env = RewardWrapper(gym.make("Pendulum-v1", max_episode_steps=4), reward_fn)
    plain = gym.make("Pendulum-v1", max_episode_steps=4)
    obs, _ = env.reset(seed=2)
    plain_obs, _ = plain.reset(seed=2)
    true_total = 0.0
    for action in pendulum_actions(4, 1, seed=9)[:, 0]:
        expected = expected_reward(plain_obs[None], action[None], np.array([False]))[0]
        obs, reward, terminated, truncated, info = env.step(action)
        plain_obs, plain_reward, _, _, _ = plain.step(action)
        true_total += plain_reward
        assert reward == pytest.approx(float(expected), rel=1e-6)
        assert info["original_reward"] == plain_reward
        np.testing.assert_array_equal(obs, plain_obs)
    assert truncated and not terminated
    assert info["original_episode"] == {"r": pytest.approx(true_total), "l": 4}
    assert reward_fn.calls[0][0].shape == (1, 3) and reward_fn.calls[0][1].shape == (1, 1)

    added = RewardWrapper(gym.make("Pendulum-v1"), lambda o, a, n, d: np.array([2.5]), mode="add")
    added.reset(seed=0)
    _, reward, _, _, info = added.step(np.zeros(1, dtype=np.float32))
    assert reward == pytest.approx(info["original_reward"] + 2.5)


def test_gym_wrapper_passes_true_termination_and_rejects_nan() -> None:
    reward_fn = RecordingReward()
    env = RewardWrapper(gym.make("CartPole-v1"), reward_fn)
    env.reset(seed=0)
    terminated = False
    while not terminated:
        next_obs, _, terminated, _, info = env.step(1)
    assert reward_fn.calls[-1][3].tolist() == [True]
    np.testing.assert_array_equal(reward_fn.calls[-1][2][0], next_obs)
    assert info["original_episode"]["l"] == len(reward_fn.calls)

    broken = RewardWrapper(gym.make("CartPole-v1"), lambda o, a, n, d: np.array([np.inf]))
    broken.reset(seed=0)
    with pytest.raises(InvalidDataError, match=r"inf.*step 0"):
        broken.step(0)

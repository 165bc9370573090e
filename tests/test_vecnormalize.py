"""VecNormalize on either side of the reward wrapper (issue 17): the true reward, the episode return
SB3 logs and the recorder's rewards are the env's raw ones, never VecNormalize's normalised ones."""

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecNormalize

from rlkit.wrappers import RewardVecEnvWrapper

Array = np.ndarray
EPISODE = 50


def pendulum_reward(obs: Array, acts: Array) -> Array:
    """Pendulum-v1's own reward, from the observation before the step and the action."""
    theta = np.arctan2(obs[:, 1], obs[:, 0])
    torque = np.clip(acts[:, 0], -2.0, 2.0)
    return -(theta**2 + 0.1 * obs[:, 2] ** 2 + 0.001 * torque**2)


def learned(obs: Array, acts: Array, next_obs: Array, dones: Array) -> Array:
    return (5.0 + next_obs[:, 0]).astype(np.float32)  # far from the env's scale and sign


class Log:
    """A StepObserver keeping what the wrapper reports as the env's reward."""

    def __init__(self) -> None:
        self.raw: list[Array] = []  # recomputed from the step's obs and action
        self.true_rews: list[Array] = []
        self.original: list[list[float]] = []

    def __call__(self, obs: Array, acts: Array, next_obs: Array, true_rews: Array, dones: Array,
                 terminal: Array, infos: list[dict[str, Any]]) -> None:
        self.raw.append(pendulum_reward(obs, acts))
        self.true_rews.append(np.asarray(true_rews, dtype=np.float64))
        self.original.append([info["original_reward"] for info in infos])


@pytest.mark.parametrize("order", ["inside", "outside"])
def test_true_reward_is_the_raw_env_reward_on_either_side_of_vec_normalize(order: str) -> None:
    venv = DummyVecEnv([lambda: gym.make("Pendulum-v1", max_episode_steps=EPISODE)] * 2)
    log = Log()
    env: VecEnv
    # observations stay raw so the log can recompute Pendulum's reward; rewards are normalised
    if order == "inside":  # RewardVecEnvWrapper(VecNormalize(venv)): it read the normalised reward
        env = RewardVecEnvWrapper(VecNormalize(venv, norm_obs=False), learned, observers=[log])
    else:
        env = VecNormalize(RewardVecEnvWrapper(venv, learned, observers=[log]), norm_obs=False)
    agent = PPO("MlpPolicy", env, n_steps=2 * EPISODE, batch_size=50, n_epochs=1, seed=0,
                device="cpu")
    agent.learn(2 * EPISODE * 2)  # two episodes per env
    raw, true_rews = np.array(log.raw), np.array(log.true_rews)
    np.testing.assert_allclose(true_rews, raw, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.array(log.original), raw, rtol=1e-4, atol=1e-4)
    # SB3's ep_rew_mean is made of the raw episode returns (no Monitor: the wrapper's own)
    returns = raw.reshape(-1, EPISODE, 2).sum(axis=1)  # (episode, env)
    assert agent.ep_info_buffer is not None
    logged = [episode["r"] for episode in agent.ep_info_buffer]
    np.testing.assert_allclose(logged, returns.reshape(-1), rtol=1e-4)
    assert min(logged) < -100  # the raw scale; a normalised sum stays within tens
    # and the agent trained on the learned reward, VecNormalize's view of it when outside
    assert agent.rollout_buffer.rewards.min() > (0.0 if order == "inside" else -10.0)

"""Per-rollout reward evaluation trains PPO exactly as the per-step wrapper does."""

import numpy as np
import pytest
import torch
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.env_util import make_vec_env

from rlkit.errors import InvalidDataError
from rlkit.wrappers import RewardVecEnvWrapper, per_rollout_reward


def angle_reward(obs, acts, next_obs, dones):
    return (next_obs[:, 1] - 0.1 * np.abs(acts[:, 0])).astype(np.float32)


def train(per_rollout: bool, steps: int = 600) -> PPO:
    venv = make_vec_env("Pendulum-v1", n_envs=2, seed=3)
    if per_rollout:
        venv, callback = per_rollout_reward(venv, angle_reward)
    else:
        venv, callback = RewardVecEnvWrapper(venv, angle_reward), None
    model = PPO("MlpPolicy", venv, n_steps=150, batch_size=100, n_epochs=2, seed=0, device="cpu")
    model.learn(steps, callback=callback)  # two rollouts; Pendulum truncates at step 200
    return model


def test_per_rollout_rewards_train_the_same_policy_as_per_step_rewards():
    per_step, per_rollout = train(per_rollout=False), train(per_rollout=True)
    np.testing.assert_allclose(per_rollout.rollout_buffer.rewards, per_step.rollout_buffer.rewards,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(per_rollout.rollout_buffer.returns, per_step.rollout_buffer.returns,
                               rtol=1e-5, atol=1e-5)
    for a, b in zip(per_step.policy.parameters(), per_rollout.policy.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    # SB3's own logger still sees the true return
    assert per_rollout.ep_info_buffer[0]["r"] < 0


def test_bad_rewards_and_off_policy_algorithms_are_refused():
    venv, callback = per_rollout_reward(make_vec_env("Pendulum-v1", n_envs=1, seed=0),
                                        lambda o, a, n, d: np.full(len(o), np.nan))
    with pytest.raises(InvalidDataError, match="non-finite reward"):
        PPO("MlpPolicy", venv, n_steps=64, batch_size=64, device="cpu").learn(64, callback=callback)
    venv, callback = per_rollout_reward(make_vec_env("Pendulum-v1", n_envs=1, seed=0), angle_reward)
    with pytest.raises(TypeError, match="on-policy"):
        SAC("MlpPolicy", venv, device="cpu").learn(10, callback=callback)

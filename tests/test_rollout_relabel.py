"""Per-rollout reward evaluation trains PPO exactly as the per-step wrapper does."""

import numpy as np
import pytest
import torch
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env

from rlkit.errors import InvalidDataError
from rlkit.reward.normalize import NormalizedReward, RunningNorm
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


class Scaled:
    """``angle_reward`` times a scale that a "refit" changes while the agent trains."""

    def __init__(self) -> None:
        self.scale = 1.0

    def __call__(self, obs, acts, next_obs, dones):
        return (self.scale * angle_reward(obs, acts, next_obs, dones)).astype(np.float32)


class RefitAt(BaseCallback):
    """At env step ``at`` (mid-rollout) the reward changes and its normaliser starts afresh, as a
    pref-rl round does; the relabeller first labels the steps taken so far (``label_first``)."""

    def __init__(self, reward: NormalizedReward, at: int, relabeller=None) -> None:
        super().__init__()
        self.reward, self.at, self.relabeller = reward, at, relabeller

    def _on_step(self) -> bool:
        if self.num_timesteps == self.at:
            if self.relabeller is not None:
                self.relabeller.label_recorded()
            self.reward.reward_fn.scale = 3.0
            self.reward.norm = RunningNorm()
        return True


def train_normalized(per_rollout: bool) -> tuple[PPO, list[np.ndarray]]:
    """Two rollouts of 150 steps x 2 envs (Pendulum truncates at 200: inside the second), the
    reward normalised as it comes and changed at timestep 250 (inside the first)."""
    reward = NormalizedReward(Scaled(), RunningNorm())
    venv = make_vec_env("Pendulum-v1", n_envs=2, seed=3)
    callbacks: list[BaseCallback] = []
    if per_rollout:
        venv, relabeller = per_rollout_reward(venv, reward)
        callbacks = [RefitAt(reward, 250, relabeller), relabeller]
    else:
        venv = RewardVecEnvWrapper(venv, reward)
        callbacks = [RefitAt(reward, 250)]
    buffers: list[np.ndarray] = []

    class Keep(BaseCallback):  # each rollout's rewards and returns, after every other callback
        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            buffer = self.model.rollout_buffer
            buffers.extend([buffer.rewards.copy(), buffer.returns.copy(), buffer.advantages.copy()])

    model = PPO("MlpPolicy", venv, n_steps=150, batch_size=100, n_epochs=2, seed=0, device="cpu")
    model.learn(600, callback=[*callbacks, Keep()])
    return model, buffers


def test_per_rollout_rewards_equal_per_step_ones_exactly_with_bootstrap_norm_and_refit():
    (per_step, expected), (per_rollout, got) = train_normalized(False), train_normalized(True)
    assert len(got) == len(expected) == 6
    for a, b in zip(expected, got, strict=True):  # rewards, returns, advantages of each rollout
        np.testing.assert_array_equal(a, b)
    for a, b in zip(per_step.policy.parameters(), per_rollout.policy.parameters(), strict=True):
        assert torch.equal(a, b)

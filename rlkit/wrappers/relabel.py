"""Learned rewards written into SB3's buffers: replay buffers relabelled after a refit
(off-policy), and rollouts evaluated once per rollout instead of per step (on-policy).

Per step, a 256-wide reward MLP on 8 rows costs ~0.5 ms in a PPO run (cold caches between env
steps) — about 10% of PPO's time. PPO only needs the rewards when it computes returns and
advantages at the end of a rollout, so this evaluates all of a rollout's transitions in one
batched call there, adds them to the rollout buffer, and recomputes returns and advantages.
The buffer already holds SB3's time-limit bootstrap (``gamma * V(terminal_obs)``), which is why the
learned rewards are added, not written over it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from rlkit.errors import StateError, WrongTypeError
from rlkit.types import RewardFn
from rlkit.wrappers.gym_wrapper import checked_rewards
from rlkit.wrappers.vec_wrapper import RewardVecEnvWrapper, StepObserver


def _no_reward(obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray,
               dones: np.ndarray) -> np.ndarray:
    return np.zeros(len(obs), dtype=np.float32)


class RolloutRewardRelabeller(BaseCallback):
    """Records each step's transition (as a ``RewardVecEnvWrapper`` observer) and, at the end of
    every rollout, writes ``reward_fn`` of all of them into the rollout buffer in one call."""

    def __init__(self, reward_fn: RewardFn) -> None:
        super().__init__()
        self.reward_fn = reward_fn
        self._steps: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def __call__(self, obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray,
                 true_rews: np.ndarray, dones: np.ndarray, terminal: np.ndarray,
                 infos: list[dict[str, Any]]) -> None:
        self._steps.append((obs, acts, next_obs, terminal))

    def _on_training_start(self) -> None:
        self._algorithm()

    def _algorithm(self) -> OnPolicyAlgorithm:
        if not isinstance(self.model, OnPolicyAlgorithm):
            raise WrongTypeError("per-rollout relabelling needs an on-policy algorithm (PPO, A2C); "
                            "use RewardVecEnvWrapper's per-step reward for off-policy ones")
        return self.model

    def _on_rollout_start(self) -> None:
        self._steps.clear()

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        buffer = self._algorithm().rollout_buffer
        if len(self._steps) != buffer.buffer_size:
            raise StateError(
                f"recorded {len(self._steps)} steps for a rollout of {buffer.buffer_size}: is the "
                "relabeller an observer of the algorithm's RewardVecEnvWrapper?"
            )
        n_steps, n_envs = buffer.buffer_size, buffer.n_envs
        obs, acts, next_obs, terminal = (np.stack(column) for column in zip(*self._steps,
                                                                            strict=True))
        flat = n_steps * n_envs
        rewards = checked_rewards(
            self.reward_fn(obs.reshape(flat, *obs.shape[2:]), acts.reshape(flat, *acts.shape[2:]),
                           next_obs.reshape(flat, *next_obs.shape[2:]), terminal.reshape(flat)),
            flat, f"in the rollout ending at timestep {self.num_timesteps}",
        )
        buffer.rewards += rewards.reshape(n_steps, n_envs)
        buffer.compute_returns_and_advantage(last_values=self.locals["values"],
                                             dones=self.locals["dones"])
        self._steps.clear()


def per_rollout_reward(venv: VecEnv, reward_fn: RewardFn, observers: Sequence[StepObserver] = (),
                       ) -> tuple[RewardVecEnvWrapper, RolloutRewardRelabeller]:
    """The env to train on and the callback to pass to ``learn``: the agent sees ``reward_fn``,
    evaluated per rollout; ``info["original_reward"]`` and SB3's ``ep_rew_mean`` stay true.
    ``observers`` see every step too (e.g. AIL's buffer of recent agent transitions)."""
    relabeller = RolloutRewardRelabeller(reward_fn)
    return RewardVecEnvWrapper(venv, _no_reward, observers=[relabeller, *observers]), relabeller


def relabel_replay_buffer(agent: OffPolicyAlgorithm, reward_fn: RewardFn,
                          chunk: int = 65_536) -> int:
    """Recompute every stored reward with the current model; returns the transitions relabelled."""
    buffer, act_shape = agent.replay_buffer, agent.action_space.shape
    if buffer is None or act_shape is None:
        raise StateError(f"{type(agent).__name__} has no replay buffer or no action shape to relabel")
    size = buffer.buffer_size if buffer.full else buffer.pos
    if size == 0:
        return 0
    n_envs = buffer.n_envs
    obs = buffer.observations[:size].reshape(size * n_envs, *buffer.obs_shape)
    acts = buffer.actions[:size].reshape(size * n_envs, *act_shape)
    if isinstance(agent.action_space, spaces.Box):
        # SB3 stores Box actions scaled to [-1, 1]; the reward saw (and must see) env actions.
        acts = agent.policy.unscale_action(acts)
    if buffer.optimize_memory_usage:
        next_obs = np.roll(buffer.observations, -1, axis=0)[:size].reshape(obs.shape)
    else:
        next_obs = buffer.next_observations[:size].reshape(obs.shape)
    # ``dones`` in an SB3 buffer already excludes time-limit truncations (handle_timeout_termination)
    terminal = (buffer.dones[:size] * (1 - buffer.timeouts[:size])).reshape(-1).astype(bool)
    rewards = np.empty(size * n_envs, dtype=np.float32)
    for start in range(0, len(rewards), chunk):
        end = start + chunk
        rewards[start:end] = reward_fn(obs[start:end], acts[start:end], next_obs[start:end],
                                       terminal[start:end])
    buffer.rewards[:size] = rewards.reshape(size, n_envs)
    return size * n_envs

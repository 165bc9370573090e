"""A gymnasium wrapper that trains an agent on a learned (or shaped) reward instead of the env's."""

from __future__ import annotations

from typing import Any, Literal, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rlkit.errors import InvalidDataError, StateError
from rlkit.types import RewardFn
from rlkit.wrappers.reward_batch import transition_rewards

RewardMode = Literal["replace", "add"]
REWARD_MODES: tuple[RewardMode, ...] = ("replace", "add")


def validate_mode(mode: str) -> RewardMode:
    """Shared by the three wrappers: a typo in ``mode`` must not silently mean "replace"."""
    for known in REWARD_MODES:
        if mode == known:
            return known
    raise InvalidDataError(f"mode must be one of {REWARD_MODES}, got {mode!r}")


def validate_array_space(space: spaces.Space, field: str) -> None:
    """A ``RewardFn`` takes array batches; dict/tuple observations would need flattening first."""
    if isinstance(space, (spaces.Dict, spaces.Tuple)):
        raise InvalidDataError(
            f"{field} is a {type(space).__name__} space; reward wrappers need array observations "
            "(flatten them first, e.g. gymnasium.wrappers.FlattenObservation)"
        )


def monitored(env: gym.Env) -> gym.Env:
    """SB3's ``Monitor`` directly around ``env`` unless one is in its wrapper chain already.

    Args:
        env: the env a reward wrapper is about to wrap.

    Returns:
        ``env`` itself when a ``Monitor`` is in its chain, else ``Monitor(env)``.
    """
    from stable_baselines3.common.env_util import is_wrapped  # SB3 loads torch: only when used
    from stable_baselines3.common.monitor import Monitor

    return env if is_wrapped(env, Monitor) else Monitor(env)


class RewardWrapper(gym.Wrapper):
    """Replace (``mode="replace"``) or shape (``mode="add"``: ``r_env + f``) one env's reward.

    The env's own reward stays visible as ``info["original_reward"]`` and, at an episode end,
    the true return and length as ``info["original_episode"] = {"r": ..., "l": ...}``, so an
    experiment can always report what the agent achieved on the task itself. ``reward_fn`` is
    called with batches of one transition; ``dones`` is the true termination (not truncation).

    SB3 reads ``rollout/ep_rew_mean`` from a ``Monitor``'s ``info["episode"]`` and puts a Monitor
    around any env that has none in its wrapper chain, which would be above this wrapper and sum
    the learned rewards. So an env without a Monitor gets one here, below the learned reward:
    SB3 then finds it and reports the true return.

    Args:
        env: the env whose reward is replaced or shaped; its observations must be arrays (not a
            Dict or Tuple space). Wrapped in a ``Monitor`` first when its chain has none.
        reward_fn: the learned or shaping reward.
        mode: ``"replace"`` pays ``reward_fn``'s reward, ``"add"`` pays the env's plus it.

    Raises:
        InvalidDataError: on an unknown ``mode`` or a Dict or Tuple observation space.
    """

    def __init__(self, env: gym.Env, reward_fn: RewardFn, mode: RewardMode = "replace") -> None:
        super().__init__(monitored(env))
        validate_array_space(env.observation_space, "observation_space")
        self.mode = validate_mode(mode)
        self.reward_fn = reward_fn
        self._prev_obs: np.ndarray | None = None
        self._episode_return = 0.0
        self._episode_length = 0
        self._total_steps = 0

    def set_reward_fn(self, reward_fn: RewardFn) -> None:
        """Swap the reward model between steps, e.g. after an online preference-learning refit."""
        self.reward_fn = reward_fn

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        # A copy: some envs hand out one internal buffer that they update in place.
        self._prev_obs = np.array(obs)
        self._episode_return = 0.0
        self._episode_length = 0
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        if self._prev_obs is None:
            raise StateError("call reset() before step() on a RewardWrapper")
        obs, env_reward, terminated, truncated, info = self.env.step(action)
        next_obs = np.array(obs)
        where = f"at step {self._episode_length} of the episode (step {self._total_steps} overall)"
        transition = (self._prev_obs[None], np.asarray(action)[None], next_obs[None],
                      np.array([terminated], dtype=bool))
        learned = transition_rewards(self.reward_fn, transition, 1, where)[0, 0]
        true_reward = float(env_reward)
        reward = float(learned) if self.mode == "replace" else true_reward + float(learned)

        self._prev_obs = next_obs
        self._total_steps += 1
        self._episode_length += 1
        self._episode_return += true_reward
        info = {**info, "original_reward": true_reward}
        if terminated or truncated:
            info["original_episode"] = {"r": self._episode_return, "l": self._episode_length}
        return obs, reward, terminated, truncated, info

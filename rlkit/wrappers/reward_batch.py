"""The one place a learned reward is computed for the agent: every wrapper and buffer path
(per step, per rollout, lazily labelled replay rows, a relabelled replay buffer, one gymnasium or
PettingZoo env) calls ``transition_rewards``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rlkit.errors import InvalidDataError
from rlkit.types import RewardFn

if TYPE_CHECKING:
    from rlkit.reward.normalize import NormalizedReward


def checked_rewards(values: Any, batch_size: int, where: str) -> np.ndarray:
    """The reward_fn output as a ``(batch_size,)`` array, or an error naming where and what broke.

    A NaN or inf reward would poison the learner's value targets without any visible failure,
    so it stops training here instead.

    Args:
        values: what ``reward_fn`` returned.
        batch_size: the transitions it was called on.
        where: names the batch in the error.

    Returns:
        The rewards as an array of shape ``(batch_size,)``.

    Raises:
        InvalidDataError: when the rewards are misshapen or not finite.
    """
    rewards = np.asarray(values)
    if rewards.shape != (batch_size,):
        raise InvalidDataError(
            f"reward_fn must return shape ({batch_size},) {where}, got shape {rewards.shape}"
        )
    finite = np.isfinite(rewards)
    if not finite.all():
        bad = int(np.flatnonzero(~finite)[0])
        raise InvalidDataError(
            f"reward_fn returned a non-finite reward {rewards[bad]!r} {where} (batch index {bad})"
        )
    return rewards


def transition_rewards(reward_fn: RewardFn, transitions: tuple[np.ndarray, ...], n_envs: int,
                       where: str, *, stepwise: bool = True) -> np.ndarray:
    """``reward_fn`` of a batch of vectorised steps, from one ``reward_fn`` call, checked.

    A ``NormalizedReward`` that updates its statistics is applied step by step when
    ``stepwise`` (each row of ``n_envs`` values updates the statistics, then is normalised by
    them), exactly as a call per step moves them; without ``stepwise`` the batch is one update,
    as one call gives it (a relabelled replay buffer, which has no step order to keep). One step
    is both.

    Args:
        reward_fn: the reward, called on the flattened transitions.
        transitions: ``(obs, acts, next_obs, terminal)`` of ``steps * n_envs`` transitions, step
            by step (each step's ``n_envs`` transitions together).
        n_envs: transitions per step.
        where: names the batch in the error a bad reward raises.
        stepwise: move a normaliser's statistics one step at a time.

    Returns:
        The ``(steps, n_envs)`` rewards, the dtype ``reward_fn`` gave (float32 when normalised
        step by step).

    Raises:
        InvalidDataError: when the rewards are misshapen or not finite.
    """
    n = len(transitions[0])
    steps = n // n_envs
    if stepwise and steps > 1:
        # here, not on import: it loads SB3 and torch, which a gymnasium RewardWrapper defers
        from rlkit.reward.normalize import NormalizedReward

        if isinstance(reward_fn, NormalizedReward) and reward_fn.update:
            return _normalised_stepwise(reward_fn, transitions, n_envs, where)
    return checked_rewards(reward_fn(*transitions), n, where).reshape(steps, n_envs)


def _normalised_stepwise(reward_fn: NormalizedReward, transitions: tuple[np.ndarray, ...],
                         n_envs: int, where: str) -> np.ndarray:
    """``transition_rewards`` through a normaliser that moves its statistics step by step."""
    n = len(transitions[0])
    raw = checked_rewards(reward_fn.reward_fn(*transitions), n, where).reshape(n // n_envs, n_envs)
    rewards = np.empty(raw.shape, dtype=np.float32)
    norm = reward_fn.norm
    for step, values in enumerate(raw):  # the statistics move one env step at a time
        norm.update(values)
        rewards[step] = norm.normalize(values)
    return rewards

"""Rollouts of every AIL checkpoint into one store, tagged with the checkpoint they came from.

APEC's labels come from the checkpoint index alone, so each trajectory must carry it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from rlkit.ail.checkpoints import CheckpointStore
from rlkit.apec.config import RolloutConfig
from rlkit.data.rollout import ActionFn, Predictor, collect_trajectories
from rlkit.data.store import TrajectoryStore
from rlkit.errors import InvalidDataError

DEFAULT_ROLLOUTS = RolloutConfig()


def policy_rollouts(
    policies: Iterable[tuple[int, Predictor | ActionFn]],
    venv: VecEnv,
    rng: np.random.Generator,
    config: RolloutConfig = DEFAULT_ROLLOUTS,
) -> tuple[TrajectoryStore, np.ndarray]:
    """Roll out each ``(index, policy)``; returns the store and each trajectory's index.

    ``policies`` may be a lazy iterable, so only one checkpoint's policy is in memory at a time.
    Episodes are taken in the order they finish; with a fixed horizon (APEC's setting) that
    order carries no bias toward short episodes.

    Args:
        policies: ``(index, policy)`` pairs: the label each trajectory carries, and an SB3
            model/policy or a callable from a batch of observations to a batch of actions.
        venv: the env to roll out in; reseeded with ``config.seed + k`` for the k-th policy.
        rng: passed to the collector (it draws only random actions, never with a given policy).
        config: ``per_checkpoint`` finished episodes per policy, ``deterministic`` actions or
            sampled ones, and the base ``seed``.

    Returns:
        The store of every trajectory, and each trajectory's index (int64, one per trajectory, in
        store order).

    Raises:
        InvalidDataError: when ``policies`` is empty.
    """
    store = TrajectoryStore()
    indices: list[int] = []
    for k, (index, policy) in enumerate(policies):
        trajectories = collect_trajectories(
            venv, policy, rng, n_episodes=config.per_checkpoint,
            deterministic=config.deterministic, seed=config.seed + k,
        )[: config.per_checkpoint]
        store.extend(trajectories)
        indices.extend([index] * len(trajectories))
    if not indices:
        raise InvalidDataError("policies is empty: no checkpoint to roll out")
    return store, np.asarray(indices, dtype=np.int64)


def checkpoint_rollouts(
    checkpoints: CheckpointStore,
    venv: VecEnv,
    rng: np.random.Generator,
    config: RolloutConfig = DEFAULT_ROLLOUTS,
    rounds: Sequence[int] | None = None,
) -> tuple[TrajectoryStore, np.ndarray]:
    """Rollouts of every stored round (or the given ``rounds``); indices are the AIL round numbers.

    Args:
        checkpoints: the AIL run's checkpoint store; one round's generator is loaded at a time.
        venv: the env to roll out in (see ``policy_rollouts``).
        rng: passed to the collector (see ``policy_rollouts``).
        config: episodes per checkpoint, deterministic or not, and the base seed.
        rounds: the rounds to roll out, in order (``None``: every saved round). ``max_checkpoints``
            is not applied here: the caller picks the rounds.

    Returns:
        The store, and each trajectory's AIL round (int64, one per trajectory).

    Raises:
        InvalidDataError: when there is no round to roll out.
        FileFormatError: when a round's checkpoint is missing or damaged.
    """
    rounds = list(checkpoints.rounds() if rounds is None else rounds)
    if not rounds:
        raise InvalidDataError(f"checkpoints: no saved rounds under {checkpoints.root}")
    lazy = ((r, checkpoints.load(r).generator) for r in rounds)
    return policy_rollouts(lazy, venv, rng, config)

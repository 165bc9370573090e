"""How well a learned reward generalises: measured on trajectories it never trained on.

The held-out set mixes policies of very different quality (random actions, AIL checkpoints rolled
out with another seed, the demonstrator's own checkpoints), so a reward that only ranks the AIL
process's own rollouts does not score well by accident. Pairs are labelled by the true return.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from stable_baselines3.common.vec_env import VecEnv
from torch import nn

from rlkit.apec.rollouts import RolloutConfig, policy_rollouts
from rlkit.data import TrajectoryStore, collect_trajectories, sample_pairs
from rlkit.data.rollout import ActionFn, Predictor
from rlkit.data.segments import SegmentPairs, gather
from rlkit.errors import InvalidDataError
from rlkit.reward.metrics import evaluate_reward, pearson, predict_step_rewards
from rlkit.types import RewardFn

SOURCE_RANDOM, SOURCE_AIL, SOURCE_DEMONSTRATOR = 0, 1, 2
SOURCE_NAMES = ("random", "ail", "demonstrator")


def heldout_store(
    venv: VecEnv,
    rng: np.random.Generator,
    ail_policies: Iterable[tuple[int, Predictor | ActionFn]],
    demonstrator_policies: Iterable[tuple[int, Predictor | ActionFn]],
    episodes_per_policy: int,
    random_episodes: int,
    seed: int,
) -> tuple[TrajectoryStore, np.ndarray]:
    """Rollouts of every given policy plus random-action episodes; returns the store and each
    trajectory's source (``SOURCE_*``)."""
    store, sources = TrajectoryStore(), []
    if random_episodes:
        store.extend(collect_trajectories(venv, None, rng, n_episodes=random_episodes,
                                          seed=seed)[:random_episodes])
        sources += [SOURCE_RANDOM] * random_episodes
    config = RolloutConfig(per_checkpoint=episodes_per_policy, seed=seed + 1)
    for source, policies in ((SOURCE_AIL, ail_policies), (SOURCE_DEMONSTRATOR, demonstrator_policies)):
        part, _ = policy_rollouts(policies, venv, rng, config)
        store.extend(part)
        sources += [source] * len(part)
    return store, np.asarray(sources, dtype=np.int64)


def true_return_pairs(store: TrajectoryStore, n_pairs: int, segment_length: int,
                      rng: np.random.Generator) -> tuple[SegmentPairs, np.ndarray]:
    """Random window pairs labelled 1 / 0 by which has the larger true return (0.5 if equal)."""
    if int(store.lengths.min()) < segment_length:
        raise InvalidDataError(f"segment_length {segment_length} is longer than the shortest held-out "
                               f"trajectory ({int(store.lengths.min())} steps)")
    pairs = sample_pairs(store, n_pairs, segment_length, rng)
    left, right = pairs.gather()
    gaps = left.returns() - right.returns()
    return pairs, np.where(gaps > 0, 1.0, np.where(gaps < 0, 0.0, 0.5))


def trajectory_pearson(reward: RewardFn | nn.Module, store: TrajectoryStore,
                       ids: np.ndarray | None = None) -> float:
    """Correlation of predicted and true returns of whole trajectories (all, or ``ids``)."""
    ids = np.arange(len(store)) if ids is None else np.asarray(ids, np.int64)
    index = np.stack([ids, np.zeros(len(ids), np.int64), store.lengths[ids]], 1)
    batch = gather(store, index)
    return pearson(predict_step_rewards(reward, batch).sum(axis=1), batch.returns())


def heldout_metrics(reward: RewardFn | nn.Module, store: TrajectoryStore, pairs: SegmentPairs,
                    labels: np.ndarray, sources: np.ndarray | None = None) -> dict[str, float]:
    """``evaluate_reward`` on the held-out pairs (accuracy, step and segment-return Pearson)
    plus ``trajectory_pearson`` over whole held-out trajectories. With ``sources``, the same
    measures again on what the AIL process never produced (random and demonstrator
    trajectories; ``*_outside_ail``), the stricter test of generalisation."""
    metrics = evaluate_reward(reward, pairs, labels)
    metrics["trajectory_pearson"] = trajectory_pearson(reward, store)
    if sources is not None:
        outside = np.flatnonzero(np.asarray(sources) != SOURCE_AIL)
        both = np.isin(pairs.left[:, 0], outside) & np.isin(pairs.right[:, 0], outside)
        rows = np.flatnonzero(both)
        strict = evaluate_reward(reward, pairs.subset(rows), labels[rows])
        metrics |= {"accuracy_outside_ail": strict["accuracy"],
                    "return_pearson_outside_ail": strict["return_pearson"],
                    "trajectory_pearson_outside_ail": trajectory_pearson(reward, store, outside),
                    "n_pairs_outside_ail": len(rows)}
    return metrics

"""How well a learned reward generalises: measured on trajectories it never trained on.

The held-out set mixes policies of very different quality (random actions, the checkpoints of a
separate AIL run with another seed, the demonstrator's own checkpoints), so a reward that only
ranks the training AIL run's rollouts does not score well by accident. Pairs are labelled by the
true return; every figure comes with the number of pairs (or trajectories) it rests on.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from scipy import stats
from stable_baselines3.common.vec_env import VecEnv
from torch import nn

from rlkit.apec.rollouts import (
    PolicyLoader,
    RolloutConfig,
    RolloutTask,
    VenvFactory,
    empty_store,
    policy_rollouts,
    random_policy,
    run_rollout_task,
    sequential_map,
)
from rlkit.data import Trajectory, TrajectoryStore, collect_trajectories
from rlkit.data.absorbing import is_absorbing
from rlkit.data.rollout import ActionFn, Predictor
from rlkit.data.segments import gather
from rlkit.errors import InvalidDataError
from rlkit.feedback.dataset import PreferenceDataset
from rlkit.reward.metrics import pearson, predict_step_rewards
from rlkit.types import RewardFn, TaskMap

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
    trajectory's source (``SOURCE_*``). Either set of policies may be empty (demonstrations of
    one's own come without a demonstrator's checkpoints)."""
    store, sources = TrajectoryStore(), []
    if random_episodes:
        store.extend(collect_trajectories(venv, None, rng, n_episodes=random_episodes,
                                          seed=seed)[:random_episodes])
        sources += [SOURCE_RANDOM] * random_episodes
    config = RolloutConfig(per_checkpoint=episodes_per_policy, seed=seed + 1)
    for source, given in ((SOURCE_AIL, ail_policies), (SOURCE_DEMONSTRATOR, demonstrator_policies)):
        policies = iter(given)  # lazy: one checkpoint's policy in memory at a time
        first = next(policies, None)
        if first is None:
            continue
        part, _ = policy_rollouts(itertools.chain([first], policies), venv, rng, config)
        store.extend(part)
        sources += [source] * len(part)
    return store, np.asarray(sources, dtype=np.int64)


def heldout_tasks(make_venv: VenvFactory, ail_policies: Sequence[tuple[int, PolicyLoader]],
                  demonstrator_policies: Sequence[tuple[int, PolicyLoader]], episodes_per_policy: int,
                  random_episodes: int, seed: int) -> tuple[list[RolloutTask], list[int]]:
    """The held-out set as independent rollout tasks (see ``rlkit.apec.rollouts.RolloutTask``):
    random actions, then each AIL policy, then each demonstrator policy; each source has a base
    seed of its own (``seed``, ``seed + 1``, ``seed + 2``), so no two tasks share their seeds.

    Args:
        make_venv: a picklable env factory (seed -> ``VecEnv``).
        ail_policies: ``(index, loader)`` of the separate AIL run's checkpoints (may be empty).
        demonstrator_policies: ``(index, loader)`` of the demonstrator's checkpoints (may be empty).
        episodes_per_policy: finished episodes per policy.
        random_episodes: random-action episodes (0: none).
        seed: the base seed.

    Returns:
        The tasks, and each task's source (``SOURCE_*``), in the same order.
    """
    tasks: list[RolloutTask] = []
    sources: list[int] = []
    if random_episodes:
        tasks.append(RolloutTask(0, random_policy, make_venv, random_episodes, seed=seed))
        sources.append(SOURCE_RANDOM)
    for source, offset, given in ((SOURCE_AIL, 1, ail_policies),
                                  (SOURCE_DEMONSTRATOR, 2, demonstrator_policies)):
        for index, load in given:
            tasks.append(RolloutTask(int(index), load, make_venv, episodes_per_policy, seed=seed + offset))
            sources.append(source)
    return tasks, sources


def heldout_rollouts(tasks: Sequence[RolloutTask], sources: Sequence[int],
                     task_map: TaskMap = sequential_map, frame_stack: int = 1,
                     ) -> tuple[TrajectoryStore, np.ndarray]:
    """Run the held-out tasks of ``heldout_tasks`` through ``task_map``.

    Args:
        tasks: the tasks.
        sources: each task's source (``SOURCE_*``).
        task_map: where the tasks run; the result is the same whichever runs them.
        frame_stack: frames per observation of a pixel task (the store keeps each frame once).

    Returns:
        The store, and each trajectory's source (int64, in store order).

    Raises:
        InvalidDataError: when there is no task.
    """
    if len(tasks) != len(sources):
        raise InvalidDataError(f"sources: {len(sources)} for {len(tasks)} tasks")
    if not tasks:
        raise InvalidDataError("tasks is empty: no held-out policy to roll out")
    store, out = empty_store(frame_stack), []
    for source, trajectories in zip(sources, task_map(run_rollout_task, list(tasks)), strict=True):
        store.extend(trajectories)
        out += [source] * len(trajectories)
    return store, np.asarray(out, dtype=np.int64)


def heldout_pairs(store: TrajectoryStore, rng: np.random.Generator, n_pairs: int | None = None,
                  segment_length: int | None = None, absorbing_flag: bool = False) -> np.ndarray:
    """Held-out pairs as rows ``(left, right, start, length)``, labelled by ``heldout_labels``.

    Whole trajectories (``segment_length`` None): every pair whose true returns differ, or a
    random ``n_pairs`` of them. Windows: ``n_pairs`` random aligned windows (default 2000),
    dropping ties and windows whose states are all absorbing (``absorbing_flag``)."""
    if segment_length is None:
        returns = _returns(store)
        left, right = np.triu_indices(len(store), k=1)
        keep = returns[left] != returns[right]
        left, right = left[keep], right[keep]
        if n_pairs is not None and n_pairs < len(left):
            chosen = np.sort(rng.choice(len(left), n_pairs, replace=False))
            left, right = left[chosen], right[chosen]
        lengths = np.minimum(store.lengths[left], store.lengths[right])
        return np.stack([left, right, np.zeros_like(left), lengths], 1).astype(np.int64)
    if int(store.lengths.min()) < segment_length:
        raise InvalidDataError(f"segment_length {segment_length} is longer than the shortest held-out "
                               f"trajectory ({int(store.lengths.min())} steps)")
    target = 2000 if n_pairs is None else n_pairs
    real = [_real_steps(t, absorbing_flag) for t in store]
    rows: list[np.ndarray] = []
    found, drawn = 0, 0
    while found < target and drawn < 100 * target:
        batch = 2 * (target - found) + 64
        left, right = rng.integers(0, len(store), (2, batch))
        common = np.minimum(store.lengths[left], store.lengths[right])
        start = rng.integers(0, common - segment_length + 1)
        ok = left != right
        gaps = np.empty(batch)
        for k in range(batch):
            window = slice(start[k], start[k] + segment_length)
            ok[k] &= bool(real[left[k]][window].any() and real[right[k]][window].any())
            gaps[k] = store[int(left[k])].rews[window].sum() - store[int(right[k])].rews[window].sum()
        ok &= gaps != 0
        rows.append(np.stack([left, right, start, np.full(batch, segment_length)], 1)[ok])
        found += int(ok.sum())
        drawn += batch
    return np.concatenate(rows)[:target].astype(np.int64)


def _returns(store: TrajectoryStore) -> np.ndarray:
    return np.array([float(t.ret) for t in store])


def _real_steps(trajectory: Trajectory, absorbing_flag: bool) -> np.ndarray:
    """Per step: was it taken from a real (non-absorbing) state?"""
    states = trajectory.obs[:-1].reshape(len(trajectory), -1)
    return ~is_absorbing(states) if absorbing_flag else np.ones(len(trajectory), bool)


def step_predictions(reward: RewardFn | nn.Module, store: TrajectoryStore) -> list[np.ndarray]:
    """The reward's prediction at every step of every trajectory (one batched call per trajectory)."""
    out = []
    for k in range(len(store)):
        index = np.array([[k, 0, store.lengths[k]]], np.int64)
        out.append(predict_step_rewards(reward, gather(store, index))[0])
    return out


def heldout_metrics(reward: RewardFn | nn.Module, store: TrajectoryStore, pairs: np.ndarray,
                    sources: np.ndarray | None = None, absorbing_flag: bool = False) -> dict[str, float]:
    """Preference accuracy over the held-out pairs (label: the larger true return) with the
    number of pairs it rests on, Pearson r of predicted and true returns of those segments, of
    whole trajectories, and of single rewards over every real (non-absorbing) step, as the
    reference's RewardCorr (apec_mjc/train_pbrl.py:50-68). With ``sources``, accuracy and
    correlations again on what the AIL process never produced (random and demonstrator
    trajectories; ``*_outside_ail``), the stricter test."""
    predicted = step_predictions(reward, store)
    true = [np.asarray(t.rews, np.float64) for t in store]
    csum_p = [np.concatenate([[0.0], np.cumsum(p)]) for p in predicted]
    csum_t = [np.concatenate([[0.0], np.cumsum(r)]) for r in true]

    def window(cs: list[np.ndarray], ids: np.ndarray) -> np.ndarray:
        starts, lengths = pairs[:, 2], pairs[:, 3]
        return np.array([cs[i][s + n] - cs[i][s] for i, s, n in zip(ids, starts, lengths, strict=True)])

    p_left, p_right = window(csum_p, pairs[:, 0]), window(csum_p, pairs[:, 1])
    t_left, t_right = window(csum_t, pairs[:, 0]), window(csum_t, pairs[:, 1])
    real = [_real_steps(t, absorbing_flag) for t in store]
    pred_returns = np.array([p.sum() for p in predicted])
    true_returns = _returns(store)

    def measures(rows: np.ndarray, ids: np.ndarray) -> dict[str, float]:
        agree = np.sign(p_left[rows] - p_right[rows]) == np.sign(t_left[rows] - t_right[rows])
        step_p = np.concatenate([predicted[i][real[i]] for i in ids]) if len(ids) else np.zeros(0)
        step_t = np.concatenate([true[i][real[i]] for i in ids]) if len(ids) else np.zeros(0)
        return {
            "accuracy": float(agree.mean()) if len(rows) else float("nan"),
            "n_pairs": int(len(rows)),
            "return_pearson": pearson(np.concatenate([p_left[rows], p_right[rows]]),
                                      np.concatenate([t_left[rows], t_right[rows]])),
            "trajectory_pearson": pearson(pred_returns[ids], true_returns[ids]),
            "n_trajectories": int(len(ids)),
            "step_pearson": pearson(step_p, step_t),
        }

    metrics = measures(np.arange(len(pairs)), np.arange(len(store)))
    if sources is not None:
        outside = np.flatnonzero(np.asarray(sources) != SOURCE_AIL)
        rows = np.flatnonzero(np.isin(pairs[:, 0], outside) & np.isin(pairs[:, 1], outside))
        metrics |= {f"{k}_outside_ail": v for k, v in measures(rows, outside).items()}
    return metrics


def ail_progress(index: np.ndarray, store: TrajectoryStore) -> dict[str, Any]:
    """Did the AIL run improve? Spearman correlation of checkpoint index with true return, over
    checkpoints (their mean rollout return) and over single rollouts; with the means themselves.
    APEC's labels assume a later checkpoint is better, so this comes before any reward result."""
    index = np.asarray(index)
    returns = _returns(store)
    levels = np.unique(index)
    means = np.array([returns[index == k].mean() for k in levels])
    return {"spearman_checkpoints": _spearman(levels, means),
            "spearman_rollouts": _spearman(index, returns), "n_checkpoints": int(len(levels)),
            "n_rollouts": int(len(returns)), "checkpoint": levels.tolist(),
            "mean_return": means.tolist()}


def label_agreement(dataset: PreferenceDataset) -> dict[str, Any]:
    """The share of a generated dataset's pairs whose label agrees with the true return (the
    side preferred has the larger return), over the pairs whose returns differ; ties counted."""
    meta = dataset.meta
    if "return_left" not in meta or "return_right" not in meta:
        return {}
    gap = np.asarray(meta["return_left"], float) - np.asarray(meta["return_right"], float)
    labels = np.asarray(dataset.labels, float)
    decided = (gap != 0) & (labels != 0.5)
    agree = (labels[decided] > 0.5) == (gap[decided] > 0)
    return {"label_agreement": float(agree.mean()) if decided.any() else float("nan"),
            "label_pairs": int(decided.sum()), "label_ties": int((gap == 0).sum())}


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(stats.spearmanr(x, y).statistic)

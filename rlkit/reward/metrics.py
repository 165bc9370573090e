"""How good a learned reward is: agreement with labels, with the oracle, and with the true reward.

Numpy in, numpy/floats out, so metrics work for any ``RewardFn`` (learned, shaped, ground truth).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from torch import nn

from rlkit.data import SegmentBatch, SegmentPairs
from rlkit.errors import InvalidDataError, InvalidLabelError
from rlkit.reward.numpy_rewards import TorchRewardFn
from rlkit.types import RewardFn

# With 3-level labels made by unbiased rounding of p = σ(Δ), a tie is the likeliest label while
# σ(|Δ|) < 3/4, i.e. |Δ| < ln 3: the Bayes-optimal tie band for a model trained on such labels.
DEFAULT_TIE_MARGIN = math.log(3.0)
GATHER_BYTES = 256 * 2**20  # what one chunk of gathered pairs may hold (pixel stacks are large)


def preference_accuracy(delta: np.ndarray, z: np.ndarray) -> float:
    """Share of non-tied, labelled pairs whose predicted winner is the labelled one.

    Ties (z = 0.5) and skips (NaN) are left out; Δ = 0 counts as half right. NaN if none is left.

    Args:
        delta: ``(N,)`` predicted return differences ``R(left) - R(right)``.
        z: ``(N,)`` labels in [0, 1] (> 0.5: left preferred; 0.5: tie; NaN: skipped).

    Returns:
        The accuracy in [0, 1], or NaN when no pair is decided.
    """
    delta, z = np.asarray(delta, np.float64), np.asarray(z, np.float64)
    decided = np.isfinite(z) & (z != 0.5)
    if not decided.any():
        return math.nan
    agree = np.where(delta[decided] == 0, 0.5, (delta[decided] > 0) == (z[decided] > 0.5))
    return float(agree.mean())


def tie_aware_accuracy(
    delta: np.ndarray, z: np.ndarray, tie_margin: float = DEFAULT_TIE_MARGIN
) -> float:
    """3-class accuracy: a pair is predicted tied when |Δ| <= tie_margin, and is tied when z = 0.5
    (otherwise its class is the side of 0.5 z falls on). Skipped pairs are left out.

    Args:
        delta: ``(N,)`` predicted return differences ``R(left) - R(right)``.
        z: ``(N,)`` labels in [0, 1] (0.5: tie; NaN: skipped).
        tie_margin: the largest ``|Δ|`` predicted as a tie; the default ln 3 is Bayes-optimal
            for 3-level labels (see ``DEFAULT_TIE_MARGIN``).

    Returns:
        The accuracy in [0, 1], or NaN when every pair is skipped.
    """
    delta, z = np.asarray(delta, np.float64), np.asarray(z, np.float64)
    labelled = np.isfinite(z)
    if not labelled.any():
        return math.nan
    predicted = np.where(np.abs(delta) <= tie_margin, 0, np.sign(delta))
    return float((predicted[labelled] == np.sign(z[labelled] - 0.5)).mean())


def oracle_cross_entropy(delta: np.ndarray, p: np.ndarray) -> float:
    """Mean -p log σ(Δ) - (1-p) log σ(-Δ) against the oracle probability (NaN p left out).

    Its floor is the oracle's own entropy, reached when σ(Δ) = p.

    Args:
        delta: ``(N,)`` predicted return differences ``R(left) - R(right)``.
        p: ``(N,)`` the oracle's probability that left is preferred (NaN: unknown).

    Returns:
        The mean cross-entropy in nats, or NaN when no ``p`` is known.
    """
    delta, p = np.asarray(delta, np.float64), np.asarray(p, np.float64)
    known = np.isfinite(p)
    if not known.any():
        return math.nan
    delta, p = delta[known], p[known]
    # log σ(x) = -log(1 + e^-x), computed stably by logaddexp
    return float(np.mean(p * np.logaddexp(0.0, -delta) + (1 - p) * np.logaddexp(0.0, delta)))


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation of two equally long arrays (flattened); NaN if either is constant.

    Args:
        a: the first values, any shape.
        b: the second values, as many as ``a`` (any shape).

    Returns:
        The correlation in [-1, 1], or NaN when either array is constant (or empty).

    Raises:
        InvalidDataError: when ``a`` and ``b`` differ in size.
    """
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    if a.shape != b.shape:
        raise InvalidDataError(f"pearson needs arrays of equal size, got {a.size} and {b.size}")
    a, b = a - a.mean(), b - b.mean()
    scale = math.sqrt(float(a @ a) * float(b @ b))
    return float(a @ b) / scale if scale > 0 else math.nan


def evaluate_reward(
    reward: RewardFn | nn.Module,
    pairs: SegmentPairs,
    labels: np.ndarray,
    oracle_p: np.ndarray | None = None,
    tie_margin: float = DEFAULT_TIE_MARGIN,
    chunk_pairs: int | None = None,
) -> dict[str, float]:
    """Every metric above for one reward on labelled pairs (segment returns are undiscounted).

    Keys: ``accuracy``, ``tie_aware_accuracy``, ``oracle_cross_entropy`` (only when some oracle
    probability is known), ``step_pearson`` (predicted vs true reward over real steps),
    ``return_pearson`` (predicted vs true segment returns, left and right), ``n_pairs``.
    Pairs are processed in chunks to bound memory.

    Args:
        reward: a ``RewardFn`` or a torch reward module (net or ensemble; wrapped in
            ``TorchRewardFn``).
        pairs: the ``N`` segment pairs.
        labels: ``(N,)`` labels in [0, 1] (> 0.5: left preferred; 0.5: tie; NaN: skipped).
        oracle_p: ``(N,)`` the oracle's probability that left is preferred (NaN: unknown), or None.
        tie_margin: the largest ``|Δ|`` ``tie_aware_accuracy`` predicts as a tie.
        chunk_pairs: pairs per reward call; None: as many as fit in ``GATHER_BYTES`` of gathered
            steps (at most 4096), so pairs of pixel segments come in small chunks.

    Returns:
        The metrics by the keys above, floats (``n_pairs`` an int); a metric is NaN when it is
        undefined (no decided or labelled pair; a constant reward for the correlations).

    Raises:
        InvalidLabelError: when ``labels`` or ``oracle_p`` is not of shape ``(N,)``.
    """
    reward_fn: RewardFn = TorchRewardFn(reward) if isinstance(reward, nn.Module) else reward
    labels = np.asarray(labels, np.float64)
    if labels.shape != (len(pairs),):
        raise InvalidLabelError(f"labels must have shape ({len(pairs)},), got {labels.shape}")
    if oracle_p is not None and np.shape(oracle_p) != (len(pairs),):
        raise InvalidLabelError(
            f"oracle_p must have shape ({len(pairs)},), got {np.shape(oracle_p)}"
        )
    deltas, steps_pred, steps_true, returns_pred, returns_true = [], [], [], [], []
    chunk_pairs = chunk_pairs or pairs_per_chunk(pairs)
    for start in range(0, len(pairs), chunk_pairs):
        left, right = pairs.subset(np.arange(start, min(start + chunk_pairs, len(pairs)))).gather()
        pred_left = predict_step_rewards(reward_fn, left)
        pred_right = predict_step_rewards(reward_fn, right)
        deltas.append(pred_left.sum(axis=1) - pred_right.sum(axis=1))
        for batch, predicted in ((left, pred_left), (right, pred_right)):
            steps_pred.append(predicted[batch.mask])
            steps_true.append(batch.rews[batch.mask])
            returns_pred.append(predicted.sum(axis=1))
            returns_true.append(batch.returns())
    delta = np.concatenate(deltas)
    result: dict[str, Any] = {
        "accuracy": preference_accuracy(delta, labels),
        "tie_aware_accuracy": tie_aware_accuracy(delta, labels, tie_margin),
        "step_pearson": pearson(np.concatenate(steps_pred), np.concatenate(steps_true)),
        "return_pearson": pearson(np.concatenate(returns_pred), np.concatenate(returns_true)),
        "n_pairs": len(pairs),
    }
    if oracle_p is not None and np.isfinite(np.asarray(oracle_p, np.float64)).any():
        result["oracle_cross_entropy"] = oracle_cross_entropy(delta, oracle_p)
    return result


def evaluate_dataset(
    reward: RewardFn | nn.Module, dataset: Any, **options: Any
) -> dict[str, float]:
    """``evaluate_reward`` on a ``PreferenceDataset`` (its pairs, labels and oracle_p, if any).

    Args:
        reward: a ``RewardFn`` or a torch reward module.
        dataset: the ``PreferenceDataset``; its ``oracle_p`` metadata column is used if present.
        **options: ``tie_margin`` and ``chunk_pairs``, passed to ``evaluate_reward``.

    Returns:
        ``evaluate_reward``'s metrics.
    """
    return evaluate_reward(
        reward, dataset.pairs, dataset.labels, dataset.meta.get("oracle_p"), **options
    )


def predict_step_rewards(reward: RewardFn | nn.Module, batch: SegmentBatch) -> np.ndarray:
    """Predicted rewards ``(B, L)`` of every step of a batch from one flat call; pads are zero."""
    reward_fn: RewardFn = TorchRewardFn(reward) if isinstance(reward, nn.Module) else reward
    n, length = batch.mask.shape
    flat = [array.reshape(n * length, *array.shape[2:])
            for array in (batch.obs, batch.acts, batch.next_obs, batch.dones)]
    predicted = np.asarray(reward_fn(*flat), np.float64).reshape(n, length)
    return np.where(batch.mask, predicted, 0.0)


def pairs_per_chunk(pairs: SegmentPairs, budget: int = GATHER_BYTES, most: int = 4096) -> int:
    """How many pairs to gather at once so their steps (obs, next obs and action of both
    segments) stay within ``budget`` bytes.

    Args:
        pairs: the pairs to be gathered.
        budget: bytes the gathered steps of one chunk may hold.
        most: the chunk size for small steps.

    Returns:
        The chunk size, between 1 and ``most``.
    """
    if len(pairs) == 0:
        return most
    store = pairs.store
    step_bytes = (2 * math.prod(store.obs_shape) * store.frames.dtype.itemsize
                  + math.prod(store.act_shape) * 8 + 16)
    pair_bytes = 2 * int(pairs.left[:, 2].max()) * step_bytes
    return int(max(1, min(most, budget // pair_bytes)))

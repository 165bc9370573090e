"""APEC pair selection: a much later AIL checkpoint is preferred over a much earlier one.

Draw checkpoint i uniformly, then j uniformly among those with ``index_j > index_i + gap``, one
rollout of each; optionally keep the pair only if the later rollout is closer to the
demonstrations in optimal-transport distance by ``ot_threshold``. True returns are recorded for
diagnostics and never used for the label. The distances: ``rlkit.apec.transport``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from rlkit.apec.pair_config import PairConfig
from rlkit.apec.transport import demo_ot_distances
from rlkit.data.segments import SegmentPairs
from rlkit.data.store import TrajectoryStore
from rlkit.data.trajectory import Trajectory
from rlkit.errors import InvalidDataError
from rlkit.feedback.dataset import PreferenceDataset
from rlkit.feedback.scale import BINARY, OrdinalScale

DEFAULT_PAIRS = PairConfig()


def aligned_windows(
    lengths_a: np.ndarray, lengths_b: np.ndarray, segment_length: int | None,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """(start, length) of windows at the same step of both trajectories.

    Whole trajectories are compared over their common prefix, so unequal episodes still pair.
    """
    common = np.minimum(lengths_a, lengths_b)
    if segment_length is None:
        return np.zeros_like(common), common
    starts = rng.integers(0, common - segment_length + 1)
    return starts, np.full_like(common, segment_length)


def shuffled_pairs(
    store: TrajectoryStore, better: np.ndarray, worse: np.ndarray, strength: np.ndarray,
    segment_length: int | None, rng: np.random.Generator,
) -> tuple[SegmentPairs, np.ndarray, np.ndarray]:
    """Pairs with the better trajectory on a random side; returns (pairs, labels, swapped).

    ``strength`` is the label when the better one is on the left (1 - strength otherwise).
    ``swapped`` is True where the better one is on the right.
    """
    lengths = store.lengths
    starts, length = aligned_windows(lengths[better], lengths[worse], segment_length, rng)
    swapped = rng.random(len(better)) < 0.5
    left = np.where(swapped, worse, better)
    right = np.where(swapped, better, worse)
    labels = np.where(swapped, 1.0 - strength, strength).astype(np.float32)
    pairs = SegmentPairs(
        store, np.stack([left, starts, length], 1), np.stack([right, starts, length], 1)
    )
    return pairs, labels, swapped


def _usable(store: TrajectoryStore, segment_length: int | None) -> np.ndarray:
    usable = np.arange(len(store))
    if segment_length is not None:
        usable = usable[store.lengths >= segment_length]
        if len(usable) == 0:
            raise InvalidDataError(
                f"segment_length {segment_length} is longer than every trajectory "
                f"(longest: {int(store.lengths.max())})"
            )
    return usable


def gap_strength(gaps: np.ndarray, min_gap: int, max_gap: int, scale: OrdinalScale) -> np.ndarray:
    """Map index gaps in ``(min_gap, max_gap]`` onto the scale's levels above 0.5, evenly."""
    levels = np.asarray([x for x in scale.levels if x > 0.5])
    if scale.is_continuous or len(levels) == 0:
        raise InvalidDataError(f"scale: {scale.name!r} has no discrete levels above 0.5")
    fraction = (gaps - min_gap - 1) / max(max_gap - min_gap - 1, 1)
    which = np.minimum((np.clip(fraction, 0.0, 1.0) * len(levels)).astype(int), len(levels) - 1)
    return levels[which]


def select_pairs(
    store: TrajectoryStore,
    checkpoint: np.ndarray,
    rng: np.random.Generator,
    config: PairConfig = DEFAULT_PAIRS,
    demos: Sequence[Trajectory] | None = None,
    ot_distances: np.ndarray | None = None,
) -> PreferenceDataset:
    """APEC preference pairs from rollouts tagged with their checkpoint index.

    Pass ``ot_distances`` (from ``demo_ot_distances``) to reuse them across ablations;
    otherwise they are computed from ``demos`` when the OT filter is on.

    Args:
        store: rollouts of the AIL checkpoints.
        checkpoint: each trajectory's checkpoint index, shape ``(len(store),)`` (as
            ``policy_rollouts`` returns it).
        rng: draws the pairs, the segment windows and the sides.
        config: ``n_pairs``, ``gap``, ``ot_threshold`` (None: no OT filter), ``segment_length``,
            ``labels`` and ``scale``, ``max_draws``; ``ot_reg`` and ``ot_iterations`` when the
            distances are computed here.
        demos: the demonstrations; needed when the OT filter is on and ``ot_distances`` is not
            given (distances computed here keep every state: pass ``ot_distances`` computed with
            ``absorbing_flag`` to leave absorbing states out).
        ot_distances: each trajectory's distance to the demos, shape ``(len(store),)``; without
            the OT filter they are only recorded.

    Returns:
        ``n_pairs`` labelled pairs (the later checkpoint preferred, sides shuffled), source
        ``"apec"``, with ``checkpoint_*``, ``ot_*`` (NaN without distances) and ``return_*``
        meta columns for diagnostics.

    Raises:
        InvalidDataError: when ``checkpoint`` or ``ot_distances`` has the wrong shape, the OT
            filter has no demos, ``gap`` leaves no pair, ``segment_length`` is longer than every
            trajectory, ``max_draws * n_pairs`` draws find fewer than ``n_pairs`` pairs, or
            ``labels="gap"`` uses a scale without discrete levels above 0.5.
        InvalidLabelError: when ``labels="gap"`` names an unknown scale.
    """
    checkpoint = np.asarray(checkpoint, dtype=np.int64)
    if checkpoint.shape != (len(store),):
        raise InvalidDataError(
            f"checkpoint has shape {checkpoint.shape}, expected ({len(store)},): one per trajectory"
        )
    use_ot = config.ot_threshold is not None
    if use_ot and ot_distances is None:
        if demos is None:
            raise InvalidDataError("demos: the OT filter (ot_threshold) needs demonstrations")
        ot_distances = demo_ot_distances(store, demos, config.ot_reg, config.ot_iterations)
    distances = np.full(len(store), np.nan) if ot_distances is None else np.asarray(ot_distances, float)
    if distances.shape != (len(store),):
        raise InvalidDataError(f"ot_distances has shape {distances.shape}, expected ({len(store)},)")

    usable = _usable(store, config.segment_length)
    levels = np.unique(checkpoint[usable])
    # Per checkpoint level: how many levels lie beyond the gap, and its usable trajectories.
    first_after = np.searchsorted(levels, levels + config.gap, side="right")
    n_later = len(levels) - first_after
    starts_i = np.flatnonzero(n_later > 0)
    if len(starts_i) == 0:
        raise InvalidDataError(
            f"gap {config.gap} is too large for the pool: checkpoint indices span "
            f"{levels[0]}..{levels[-1]}, so no pair has index_j > index_i + gap"
        )
    by_level = [usable[checkpoint[usable] == level] for level in levels]
    counts = np.array([len(ids) for ids in by_level])
    flat = np.concatenate(by_level)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])

    def one_of(level_pos: np.ndarray) -> np.ndarray:
        return flat[offsets[level_pos] + rng.integers(0, counts[level_pos])]

    def draw(batch: int) -> tuple[np.ndarray, np.ndarray]:
        i = starts_i[rng.integers(0, len(starts_i), size=batch)]
        j = first_after[i] + rng.integers(0, n_later[i])
        ti, tj = one_of(i), one_of(j)
        if use_ot:
            keep = distances[tj] <= distances[ti] - config.ot_threshold  # replay_buffer.py:999
            ti, tj = ti[keep], tj[keep]
        return tj, ti

    better, worse = _draw_pairs(draw, config, lambda: _n_possible(checkpoint, distances, usable, config))
    gaps = checkpoint[better] - checkpoint[worse]
    if config.labels == "gap":
        scale = OrdinalScale.get(config.scale)
        strength = gap_strength(gaps, config.gap, int(levels[-1] - levels[0]), scale)
    else:
        scale, strength = BINARY, np.ones(len(better))
    return _labelled(store, checkpoint, distances, better, worse, strength, scale, config, rng, "apec")


def ot_only_pairs(
    store: TrajectoryStore,
    checkpoint: np.ndarray,
    ot_distances: np.ndarray,
    rng: np.random.Generator,
    config: PairConfig = DEFAULT_PAIRS,
) -> PreferenceDataset:
    """The "OT only" ablation: two rollouts of any checkpoints, the one closer to the demos
    preferred, kept when closer by more than ``ot_threshold`` (any margin when None). The
    checkpoint index plays no part; ``gap`` and ``labels="gap"`` are ignored (labels binary).

    Args:
        store: rollouts of the AIL checkpoints.
        checkpoint: each trajectory's checkpoint index, shape ``(len(store),)``; recorded only.
        ot_distances: each trajectory's distance to the demos (``demo_ot_distances``), shape
            ``(len(store),)``.
        rng: draws the pairs, the segment windows and the sides.
        config: ``n_pairs``, ``ot_threshold``, ``segment_length`` and ``max_draws``.

    Returns:
        ``n_pairs`` labelled pairs (the closer rollout preferred, sides shuffled), source
        ``"apec_ot_only"``, with ``checkpoint_*``, ``ot_*`` and ``return_*`` meta columns.

    Raises:
        InvalidDataError: when ``checkpoint`` or ``ot_distances`` has the wrong shape, fewer than
            two trajectories are usable, ``segment_length`` is longer than every trajectory, or
            ``max_draws * n_pairs`` draws find fewer than ``n_pairs`` pairs.
    """
    checkpoint = np.asarray(checkpoint, dtype=np.int64)
    distances = np.asarray(ot_distances, np.float64)
    for name, array in (("checkpoint", checkpoint), ("ot_distances", distances)):
        if array.shape != (len(store),):
            raise InvalidDataError(f"{name} has shape {array.shape}, expected ({len(store)},)")
    usable = _usable(store, config.segment_length)
    if len(usable) < 2:
        raise InvalidDataError(f"the pool has {len(usable)} usable trajectories; a pair needs 2")
    margin = config.ot_threshold or 0.0

    def draw(batch: int) -> tuple[np.ndarray, np.ndarray]:
        a = usable[rng.integers(0, len(usable), size=batch)]
        b = usable[rng.integers(0, len(usable), size=batch)]
        keep = np.abs(distances[a] - distances[b]) > margin
        a, b = a[keep], b[keep]
        closer_a = distances[a] < distances[b]
        return np.where(closer_a, a, b), np.where(closer_a, b, a)

    def n_possible() -> int:
        d = distances[usable]
        return int((d[None, :] < d[:, None] - margin).sum())

    better, worse = _draw_pairs(draw, config, n_possible)
    return _labelled(store, checkpoint, distances, better, worse, np.ones(len(better)), BINARY,
                     config, rng, "apec_ot_only")


def _draw_pairs(
    draw: Callable[[int], tuple[np.ndarray, np.ndarray]], config: PairConfig,
    n_possible: Callable[[], int],
) -> tuple[np.ndarray, np.ndarray]:
    """Rejection-sample (better, worse) index arrays in batches until ``n_pairs`` are found."""
    found: list[tuple[np.ndarray, np.ndarray]] = []
    n_found, n_drawn, budget = 0, 0, config.max_draws * config.n_pairs
    while n_found < config.n_pairs and n_drawn < budget:
        batch = min(max(2 * (config.n_pairs - n_found), 64), budget - n_drawn)
        better, worse = draw(batch)
        found.append((better, worse))
        n_found += len(better)
        n_drawn += batch
    if n_found < config.n_pairs:
        raise InvalidDataError(
            f"n_pairs: found only {n_found} of {config.n_pairs} pairs in {n_drawn} draws; "
            f"{n_possible()} distinct trajectory pairs pass the gap and OT filter "
            "(lower n_pairs, gap or ot_threshold)"
        )
    better = np.concatenate([b for b, _ in found])[: config.n_pairs]
    worse = np.concatenate([w for _, w in found])[: config.n_pairs]
    return better, worse


def _labelled(
    store: TrajectoryStore, checkpoint: np.ndarray, distances: np.ndarray, better: np.ndarray,
    worse: np.ndarray, strength: np.ndarray, scale: OrdinalScale, config: PairConfig,
    rng: np.random.Generator, source: str,
) -> PreferenceDataset:
    """Shuffle sides and store the pairs with their provenance (diagnostics only)."""
    pairs, labels, _ = shuffled_pairs(store, better, worse, strength, config.segment_length, rng)
    left_ids, right_ids = pairs.left[:, 0], pairs.right[:, 0]
    left_batch, right_batch = pairs.gather()
    dataset = PreferenceDataset(store, scale)
    dataset.append(pairs, labels, source=source, meta={
        "checkpoint_left": checkpoint[left_ids], "checkpoint_right": checkpoint[right_ids],
        "ot_left": distances[left_ids], "ot_right": distances[right_ids],
        "return_left": left_batch.returns(), "return_right": right_batch.returns(),
    })
    return dataset


def _n_possible(
    checkpoint: np.ndarray, distances: np.ndarray, usable: np.ndarray, config: PairConfig
) -> int:
    """Distinct (earlier, later) trajectory pairs that pass the gap and the OT filter."""
    index, dist = checkpoint[usable], distances[usable]
    ok = index[None, :] > index[:, None] + config.gap
    if config.ot_threshold is not None:
        ok &= dist[None, :] <= dist[:, None] - config.ot_threshold
    return int(ok.sum())

"""Segments are (trajectory id, start, length) views into a store; pairs of them are compared."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rlkit.data.store import TrajectoryStore
from rlkit.errors import InvalidDataError


@dataclass(frozen=True)
class Segment:
    """Steps ``start`` to ``start + length - 1`` of one trajectory of a store.

    Attributes:
        traj_id: the trajectory's index in its store.
        start: the first step.
        length: the number of steps.
    """

    traj_id: int
    start: int
    length: int


@dataclass(frozen=True, eq=False)
class SegmentBatch:
    """Gathered steps of B segments, padded to the longest: arrays of shape ``(B, L, ...)``.

    Attributes:
        obs: the observations at each step.
        acts: the actions taken.
        next_obs: the observations after each step.
        rews: the env's rewards (0 on padding).
        dones: True on the last step of a trajectory that terminated.
        mask: True on real steps, False on padding.
    """

    obs: np.ndarray
    acts: np.ndarray
    next_obs: np.ndarray
    rews: np.ndarray
    dones: np.ndarray
    mask: np.ndarray

    def returns(self, gamma: float = 1.0) -> np.ndarray:
        """True segment returns; ``gamma < 1`` weighs later steps more (B-Pref's myopic teacher)."""
        return _returns(self.rews, self.mask, gamma)


def _returns(rews: np.ndarray, mask: np.ndarray, gamma: float) -> np.ndarray:
    if gamma == 1.0:
        return rews.sum(axis=1)
    lengths = mask.sum(axis=1)
    steps_from_end = lengths[:, None] - 1 - np.arange(rews.shape[1])[None, :]
    weights = np.where(mask, gamma ** np.maximum(steps_from_end, 0), 0.0)
    return (rews * weights).sum(axis=1)


def segment_returns(store: TrajectoryStore, index: np.ndarray | list[Segment],
                    gamma: float = 1.0) -> np.ndarray:
    """The true returns of segments, gathering only their rewards (no observations: for pixel
    segments, no frames are copied).

    Args:
        store: the trajectories.
        index: ``(B, 3)`` rows of (traj_id, start, length), or a list of ``Segment``.
        gamma: as ``SegmentBatch.returns`` (``< 1`` weighs later steps more).

    Returns:
        ``(B,)`` returns, equal to ``gather(store, index).returns(gamma)``.
    """
    index = as_index(index)
    steps = store.gather_steps(index[:, 0], index[:, 1], index[:, 2], fields=("rews", "mask"))
    return _returns(steps["rews"], steps["mask"], gamma)


def as_index(segments: np.ndarray | list[Segment]) -> np.ndarray:
    """Segments as an ``(N, 3)`` int64 array of (traj_id, start, length)."""
    if isinstance(segments, list):
        segments = np.array([(s.traj_id, s.start, s.length) for s in segments], dtype=np.int64)
    index = np.asarray(segments, dtype=np.int64).reshape(-1, 3)
    return index


def check_index(store: TrajectoryStore, index: np.ndarray, name: str = "segments") -> None:
    """Every segment must lie inside its trajectory."""
    if len(index) == 0:
        return
    traj, start, length = index.T
    if (traj < 0).any() or (traj >= len(store)).any():
        raise InvalidDataError(f"{name}: trajectory id out of range 0..{len(store) - 1}")
    if (length < 1).any() or (start < 0).any():
        raise InvalidDataError(f"{name}: segments need start >= 0 and length >= 1")
    over = start + length > store.lengths[traj]
    if over.any():
        i = int(np.flatnonzero(over)[0])
        raise InvalidDataError(
            f"{name}[{i}] = (traj {traj[i]}, start {start[i]}, length {length[i]}) runs past the "
            f"end of its trajectory (length {store.lengths[traj[i]]})"
        )


def gather(store: TrajectoryStore, index: np.ndarray) -> SegmentBatch:
    """Gather the steps of segments from a store into one padded batch.

    Args:
        store: the trajectories.
        index: ``(B, 3)`` rows of (traj_id, start, length), or a list of ``Segment``; not
            validated (see ``SegmentPairs`` for checked indices).

    Returns:
        Arrays ``(B, L, ...)`` with ``L`` the longest length; steps past a segment's length repeat
        its last step with reward 0 and ``mask`` False.
    """
    index = as_index(index)
    return SegmentBatch(**store.gather_steps(index[:, 0], index[:, 1], index[:, 2]))


def segment_states(store: TrajectoryStore, segment: np.ndarray) -> np.ndarray | None:
    """The simulator states after each of a segment's steps, or None if its trajectory kept none."""
    traj, start, length = (int(x) for x in segment)
    states = store[traj].states
    return None if states is None else states[start : start + length]


@dataclass(frozen=True, eq=False)
class SegmentPairs:
    """N pairs (left, right) of equal-length segments of one store. Costs 48 bytes a pair.

    Attributes:
        store: the trajectories the segments are views into.
        left: ``(N, 3)`` rows of (trajectory id, start, length), one per pair.
        right: the same for the other segment of each pair, of the same length.
    """

    store: TrajectoryStore
    left: np.ndarray
    right: np.ndarray

    def __post_init__(self) -> None:
        left, right = as_index(self.left), as_index(self.right)
        object.__setattr__(self, "left", left)
        object.__setattr__(self, "right", right)
        if left.shape != right.shape:
            raise InvalidDataError(f"left has {len(left)} segments but right has {len(right)}")
        unequal = left[:, 2] != right[:, 2]
        if unequal.any():
            i = int(np.flatnonzero(unequal)[0])
            raise InvalidDataError(
                f"pair {i} compares segments of different lengths ({left[i, 2]} vs {right[i, 2]}); "
                "a preference needs segments of equal length"
            )
        check_index(self.store, left, "left")
        check_index(self.store, right, "right")

    def __len__(self) -> int:
        return len(self.left)

    @classmethod
    def trusted(cls, store: TrajectoryStore, left: np.ndarray, right: np.ndarray) -> SegmentPairs:
        """Build without re-validating indices that came from an already valid ``SegmentPairs``."""
        pairs = object.__new__(cls)
        for name, value in (("store", store), ("left", left), ("right", right)):
            object.__setattr__(pairs, name, value)
        return pairs

    def subset(self, rows: np.ndarray) -> SegmentPairs:
        return SegmentPairs.trusted(self.store, self.left[rows], self.right[rows])

    def gather(self) -> tuple[SegmentBatch, SegmentBatch]:
        return gather(self.store, self.left), gather(self.store, self.right)


def sample_segments(
    store: TrajectoryStore,
    n: int,
    length: int,
    rng: np.random.Generator,
    traj_ids: np.ndarray | None = None,
) -> np.ndarray:
    """``n`` windows of ``length`` steps, uniform over every valid start in the chosen trajectories.

    Trajectories shorter than ``length`` are never used; each valid window is equally likely.

    Args:
        store: the trajectories.
        n: how many windows.
        length: steps per window.
        rng: the generator to draw from.
        traj_ids: the trajectories to draw from; all when ``None``.

    Returns:
        ``(n, 3)`` int64 rows of (traj_id, start, length).

    Raises:
        InvalidDataError: when no chosen trajectory has ``length`` steps.
    """
    lengths = store.lengths
    candidates = np.arange(len(store)) if traj_ids is None else np.asarray(traj_ids, np.int64)
    starts_per_traj = lengths[candidates] - length + 1
    usable = starts_per_traj > 0
    if not usable.any():
        raise InvalidDataError(
            f"no trajectory is at least {length} steps long (longest: {lengths[candidates].max()})"
        )
    candidates, starts_per_traj = candidates[usable], starts_per_traj[usable]
    cumulative = np.cumsum(starts_per_traj)
    flat = rng.integers(0, cumulative[-1], size=n)
    which = np.searchsorted(cumulative, flat, side="right")
    starts = flat - np.concatenate([[0], cumulative[:-1]])[which]
    return np.stack([candidates[which], starts, np.full(n, length)], axis=1).astype(np.int64)


def sample_pairs(
    store: TrajectoryStore,
    n: int,
    length: int,
    rng: np.random.Generator,
    traj_ids: np.ndarray | None = None,
) -> SegmentPairs:
    """``n`` pairs of independent uniformly sampled windows of ``length`` steps.

    Args:
        store: the trajectories.
        n: how many pairs.
        length: steps per segment.
        rng: the generator to draw from.
        traj_ids: the trajectories to draw from; all when ``None``.

    Returns:
        The pairs; a segment may be paired with itself.

    Raises:
        InvalidDataError: when no chosen trajectory has ``length`` steps.
    """
    left = sample_segments(store, n, length, rng, traj_ids)
    right = sample_segments(store, n, length, rng, traj_ids)
    return SegmentPairs(store, left, right)

"""Random trajectories, pairs of their segments, and the labels a truthful teacher gives them."""

from __future__ import annotations

import numpy as np

from rlkit.data import SegmentPairs, Trajectory, TrajectoryStore, sample_pairs


def make_trajectory(length: int, rng: np.random.Generator, terminal: bool = False) -> Trajectory:
    """One trajectory of normal noise: obs of 3 features, actions of 2, reward = the first obs entry.

    Args:
        length: steps (the trajectory holds ``length + 1`` observations).
        rng: where the noise comes from.
        terminal: whether the episode ended (rather than being cut off).

    Returns:
        The trajectory.
    """
    obs = rng.normal(size=(length + 1, 3)).astype(np.float32)
    acts = rng.normal(size=(length, 2)).astype(np.float32)
    return Trajectory(obs=obs, acts=acts, rews=obs[:-1, 0].copy(), terminal=terminal)


def make_trajectories(n: int = 6, length: int = 30, seed: int = 0) -> TrajectoryStore:
    """A store of ``n`` trajectories from :func:`make_trajectory`.

    Args:
        n: how many trajectories.
        length: steps in each.
        seed: seeds the noise.

    Returns:
        The store.
    """
    rng = np.random.default_rng(seed)
    store = TrajectoryStore()
    store.extend([make_trajectory(length, rng) for _ in range(n)])
    return store


def make_pairs(trajectories: TrajectoryStore, n: int, seed: int = 0) -> SegmentPairs:
    """``n`` pairs of 10-step segments of ``trajectories``.

    Args:
        trajectories: the store the segments come from.
        n: how many pairs.
        seed: seeds the sampling.

    Returns:
        The pairs.
    """
    return sample_pairs(trajectories, n, 10, np.random.default_rng(seed))


def truthful_labels(pairs: SegmentPairs) -> np.ndarray:
    """1 where the left segment has the higher true return, else 0.

    Args:
        pairs: the pairs to label.

    Returns:
        One float32 label per pair.
    """
    left, right = pairs.gather()
    return (left.returns() > right.returns()).astype(np.float32)

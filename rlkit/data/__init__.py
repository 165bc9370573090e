"""Trajectories, their storage, segments into them, and rollout collection."""

from rlkit.data.recorder import TrajectoryRecorder
from rlkit.data.rollout import collect_trajectories, random_actions
from rlkit.data.segments import (
    Segment,
    SegmentBatch,
    SegmentPairs,
    gather,
    sample_pairs,
    sample_segments,
)
from rlkit.data.store import TrajectoryStore
from rlkit.data.trajectory import Trajectory

__all__ = [
    "Segment",
    "SegmentBatch",
    "SegmentPairs",
    "Trajectory",
    "TrajectoryRecorder",
    "TrajectoryStore",
    "collect_trajectories",
    "gather",
    "random_actions",
    "sample_pairs",
    "sample_segments",
]

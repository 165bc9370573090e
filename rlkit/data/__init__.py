"""Trajectories, their storage, segments into them, and rollout collection."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlkit._lazy import lazy_exports

if TYPE_CHECKING:
    from rlkit.data.recorder import TrajectoryRecorder
    from rlkit.data.rollout import collect_trajectories, random_actions
    from rlkit.data.segments import (
        Segment,
        SegmentBatch,
        SegmentPairs,
        gather,
        sample_pairs,
        sample_segments,
        segment_returns,
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
    "segment_returns",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "rlkit.data.recorder": ["TrajectoryRecorder"],
    "rlkit.data.rollout": ["collect_trajectories", "random_actions"],
    "rlkit.data.segments": [
        "Segment", "SegmentBatch", "SegmentPairs", "gather", "sample_pairs", "sample_segments",
        "segment_returns",
    ],
    "rlkit.data.store": ["TrajectoryStore"],
    "rlkit.data.trajectory": ["Trajectory"],
})

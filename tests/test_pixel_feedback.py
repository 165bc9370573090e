"""Feedback on pixel trajectories: merging keeps frames once, the teacher reads rewards only."""

import numpy as np
import pytest

from rlkit.data import SegmentPairs, Trajectory, TrajectoryStore, sample_segments
from rlkit.errors import InvalidDataError
from rlkit.feedback import FIVE, PreferenceDataset, SimulatedTeacher, TeacherConfig
from rlkit.human.media import observation_bounds

K, C, H, W = 3, 3, 6, 5


def stacked(length: int, rng: np.random.Generator) -> Trajectory:
    frames = rng.integers(0, 256, size=(length + K, C, H, W), dtype=np.uint8)
    obs = np.stack([frames[t : t + K].reshape(K * C, H, W) for t in range(length + 1)])
    return Trajectory(obs=obs, acts=rng.normal(size=(length, 2)).astype(np.float32),
                      rews=rng.normal(size=length).astype(np.float32))


def dataset(seed: int, frame_stack: int = K) -> PreferenceDataset:
    rng = np.random.default_rng(seed)
    store = TrajectoryStore(frame_stack=frame_stack)
    store.extend(stacked(n, rng) for n in (8, 11, 6))
    left, right = sample_segments(store, 10, 4, rng), sample_segments(store, 10, 4, rng)
    data = PreferenceDataset(store, FIVE)
    data.append(SegmentPairs(store, left, right), np.full(10, 1.0), source="teacher", annotator="a")
    return data


def test_merged_pixel_datasets_keep_each_frame_once_and_every_pair():
    a, b = dataset(0), dataset(1)
    merged = a.merge(b)
    assert merged.store.frame_stack == K
    assert merged.store.nbytes == pytest.approx(a.store.nbytes + b.store.nbytes, rel=0.01)
    for part, shift in ((a, 0), (b, len(a.store))):
        rows = slice(0, len(a)) if shift == 0 else slice(len(a), None)
        pairs = merged.pairs
        np.testing.assert_array_equal(
            pairs.gather()[0].obs[rows], part.pairs.gather()[0].obs)


def test_datasets_of_different_frame_stacks_are_not_merged():
    flat = PreferenceDataset(TrajectoryStore(), FIVE)
    rng = np.random.default_rng(2)
    for t in (stacked(5, rng), stacked(6, rng)):
        flat.store.append(t)  # the same (K*C, H, W) observations, stored as they come
    with pytest.raises(InvalidDataError, match="frame stacks 3 vs 1"):
        dataset(0).merge(flat)


def test_the_teacher_labels_pixel_pairs_from_their_rewards():
    data = dataset(3)
    teacher = SimulatedTeacher(TeacherConfig(scale="five", beta=1.0), np.random.default_rng(0))
    left, right = teacher.returns(data.pairs)
    gathered_left, gathered_right = data.pairs.gather()
    np.testing.assert_allclose(left, gathered_left.returns(), rtol=1e-6)
    np.testing.assert_allclose(right, gathered_right.returns(), rtol=1e-6)


def test_plot_bounds_of_a_pixel_store_span_its_frames():
    store = dataset(4).store
    low, high = observation_bounds(store)
    assert low.shape == high.shape == (C * H * W,)
    assert low.min() >= 0 and high.max() <= 255 and (high > low).any()

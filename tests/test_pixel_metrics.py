"""Evaluating a reward on pixel pairs gathers them in chunks sized by their bytes."""

import numpy as np

from rlkit.data import SegmentPairs, Trajectory, TrajectoryStore, sample_segments
from rlkit.reward.metrics import evaluate_reward, pairs_per_chunk


def pairs(frame_size: int, n: int = 40) -> SegmentPairs:
    rng = np.random.default_rng(0)
    store = TrajectoryStore(frame_stack=3)
    for _ in range(3):
        frames = rng.integers(0, 256, size=(23, 3, frame_size, frame_size), dtype=np.uint8)
        obs = np.stack([frames[t : t + 3].reshape(9, frame_size, frame_size) for t in range(21)])
        store.append(Trajectory(obs=obs, acts=rng.normal(size=(20, 2)).astype(np.float32),
                                rews=rng.normal(size=20).astype(np.float32)))
    return SegmentPairs(store, sample_segments(store, n, 10, rng), sample_segments(store, n, 10, rng))


def test_chunks_shrink_with_the_bytes_of_a_pair():
    small, large = pairs(8), pairs(64)
    assert pairs_per_chunk(small) == 4096
    # 2 segments x 10 steps x (obs + next obs of 9x64x64 bytes): ~1.5 MB a pair
    assert pairs_per_chunk(large) == 256 * 2**20 // (2 * 10 * (2 * 9 * 64 * 64 + 2 * 8 + 16))
    assert pairs_per_chunk(large, budget=1) == 1


def test_metrics_do_not_depend_on_the_chunking():
    data = pairs(8)
    labels = np.random.default_rng(1).random(len(data.left)).round()

    def brightness(obs, acts, next_obs, dones):
        return next_obs.reshape(*next_obs.shape[:-3], -1).mean(-1) / 255.0

    whole = evaluate_reward(brightness, data, labels)
    chunked = evaluate_reward(brightness, data, labels, chunk_pairs=7)
    assert whole.keys() == chunked.keys()
    for key in whole:
        np.testing.assert_allclose(whole[key], chunked[key], rtol=1e-6)

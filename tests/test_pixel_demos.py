"""Stacked pixel demos are written with each frame once and read back as the same stacks."""

import numpy as np

from rlkit.ail import load_demos, save_demos
from rlkit.data import Trajectory

K, C, H, W = 3, 3, 8, 8


def test_pixel_demos_round_trip_with_each_frame_written_once(tmp_path):
    rng = np.random.default_rng(0)
    demos = []
    for length in (20, 15):
        frames = rng.integers(0, 256, size=(length + K, C, H, W), dtype=np.uint8)
        obs = np.stack([frames[t : t + K].reshape(K * C, H, W) for t in range(length + 1)])
        demos.append(Trajectory(obs=obs, acts=rng.normal(size=(length, 2)).astype(np.float32),
                                rews=rng.normal(size=length).astype(np.float32)))
    stacked = save_demos(demos, tmp_path / "stacked", frame_stack=K)
    flat = save_demos(demos, tmp_path / "flat")
    assert stacked.stat().st_size < 0.5 * flat.stat().st_size
    for loaded in (load_demos(stacked), load_demos(flat)):
        assert len(loaded) == 2
        for got, want in zip(loaded, demos, strict=True):
            np.testing.assert_array_equal(got.obs, want.obs)
            np.testing.assert_array_equal(got.acts, want.acts)

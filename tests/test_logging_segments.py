"""A queried pair of segments as media: image observations a video of the two side by side, other
observations a picture; pref-rl logs each round's first pair (read back from W&B's offline files)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from rlkit.errors import InvalidDataError
from rlkit.logging import make_logger
from rlkit.logging.segments import GAP_PX, log_segment_pair
from rlkit.prefrl import PreferenceRL
from tests.log_records import Collect
from tests.tiny_runs import small_config


def test_image_observations_are_one_video_of_both_segments_side_by_side(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    left, right = (rng.integers(0, 255, (5, 8, 6, 3), dtype=np.uint8) for _ in range(2))
    logger = Collect()
    assert log_segment_pair(logger, "prefrl/query", left, right, 40, tmp_path, fps=4) == "video"
    [(kind, (name, frames, step, fps))] = logger.calls
    assert (kind, name, step, fps) == ("video", "prefrl/query", 40, 4)
    assert frames.shape == (5, 8, 6 + GAP_PX + 6, 3)
    assert np.array_equal(frames[:, :, :6], left) and np.array_equal(frames[:, :, -6:], right)
    assert (frames[:, :, 6 : 6 + GAP_PX] == 255).all()


def test_other_observations_are_a_picture_and_huge_ones_are_left_out(tmp_path: Path) -> None:
    steps = np.linspace(0, 1, 10)[:, None]
    logger = Collect()
    kind = log_segment_pair(logger, "prefrl/query", np.hstack([steps, -steps]), np.hstack([-steps, steps]),
                            7, tmp_path, label=0.8)
    assert kind == "image"
    [(call, (name, path, step))] = logger.calls
    assert (call, name, step) == ("image", "prefrl/query", 7)
    with Image.open(path) as picture:
        assert picture.format == "PNG" and picture.width > picture.height > 100
    assert log_segment_pair(logger, "q", np.zeros((10, 100)), np.zeros((10, 100)), 8, tmp_path) == "none"
    with pytest.raises(InvalidDataError, match=r"shapes \(10, 2\) and \(9, 2\)"):
        log_segment_pair(logger, "q", np.zeros((10, 2)), np.zeros((9, 2)), 9, tmp_path)


def test_pref_rl_logs_each_rounds_first_pair_as_media(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    config = small_config("ppo")
    logger = make_logger(tmp_path, backends=("wandb",), job_type="pref-rl")
    try:
        result = PreferenceRL.from_config(config, logger, run_dir=tmp_path).learn()
    finally:
        logger.close()
    rounds = [r.timestep for r in result.rounds]
    lines = (tmp_path / "media.jsonl").read_text().splitlines()
    media: list[dict[str, Any]] = [json.loads(line) for line in lines]
    assert [(m["kind"], m["name"], m["step"]) for m in media] == [
        ("image", "prefrl/query", t) for t in rounds]
    assert all(Path(m["path"]).parent == tmp_path / "media" for m in media)
    (files,) = tmp_path.glob("wandb/offline-run-*/files")
    assert len(list(files.glob("media/images/prefrl/query_*.png"))) == len(rounds)

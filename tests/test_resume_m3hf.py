"""An M3HF run killed in the middle of a generation and resumed logs each metric row once: the
rows of the generation trained again are dropped from metrics.jsonl first (issue 16, item 8)."""

import json
from pathlib import Path

import pytest

from rlkit.logging import JsonlLogger
from rlkit.runners.m3hf import run_m3hf
from tests.tiny_runs import tiny_config


class KilledAfter(JsonlLogger):
    """metrics.jsonl's logger, 'killed' right after writing its ``n``-th row."""

    def __init__(self, run_dir: Path, n: int) -> None:
        super().__init__(run_dir)
        self.n, self.count = n, 0

    def log(self, metrics, step):
        super().log(metrics, step)
        self.count += 1
        if self.count == self.n:
            raise KeyboardInterrupt


def rows(run_dir: Path) -> list[dict]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k != "wall_time"} for line in lines]


def run(config, run_dir: Path, logger: JsonlLogger) -> None:
    try:
        run_m3hf(config, run_dir, logger)
    finally:
        logger.close()


@pytest.mark.parametrize("into_generation", [1, 0], ids=["after-a-training-row", "after-its-row"])
def test_a_run_killed_mid_generation_resumes_with_every_metric_row_once(tmp_path, into_generation):
    config = tiny_config(video="none")
    run(config, tmp_path / "unbroken", JsonlLogger(tmp_path / "unbroken"))
    expected = rows(tmp_path / "unbroken")
    ends = [i for i, row in enumerate(expected) if "m3hf/generation" in row]
    assert len(ends) == 3 and ends[2] - ends[1] >= 2  # generation 2 has training rows before its own

    # killed in generation 2: after its first training row, or after its own row (before state.json)
    kill_after = ends[1] + 2 if into_generation else ends[2] + 1
    stopped = tmp_path / "stopped"
    with pytest.raises(KeyboardInterrupt):
        run(config, stopped, KilledAfter(stopped, kill_after))
    assert json.loads((stopped / "state.json").read_text())["completed"] == 1
    assert len(rows(stopped)) == kill_after

    run(config, stopped, JsonlLogger(stopped))
    assert rows(stopped) == expected  # was: generation 2's rows before the kill twice

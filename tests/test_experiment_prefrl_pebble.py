"""experiments/prefrl_pebble.py at its smallest: Pendulum, a few hundred steps, a few labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from experiments import prefrl_pebble, prefrl_pebble_report
from rlkit.config import load_config
from rlkit.scale.unit_graph import Unit

SAC = {"buffer_size": 2000, "batch_size": 16, "learning_starts": 50}
TINY = {
    "seeds": [0],
    "prefrl": {
        "env": {"id": "Pendulum-v1", "n_envs": 1},
        "agent": {"algo": "sac", "total_timesteps": 600, "hyperparams": "sb3", "kwargs": SAC,
                  "device": "cpu"},
        "query": {"every_steps": 200, "initial_pairs": 4, "pairs_per_round": 2, "max_pairs": 10,
                  "candidates_per_query": 2, "segment_length": 20},
        "teacher": {"scale": "binary", "beta": float("inf")},
        "model": {"ensemble_size": 2, "hidden": [16, 16]},
        "trainer": {"max_epochs": 2, "batch_size": 8},
    },
    "eval_every": 200,
    "eval_episodes": 1,
    "final_episodes": 2,
}


def tiny_config(tmp_path: Path, name: str = "out") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(TINY | {"out_dir": str(tmp_path / name)}))
    return path


class Killed(Exception):
    """Stands for the process being killed part way."""


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The tiny experiment run once, end to end: 1 seed x 2 arms, each unit in a process."""
    tmp_path = tmp_path_factory.mktemp("pebble")
    args = ["--config", str(tiny_config(tmp_path)), "--backend", "local", "--workers", "2"]
    assert prefrl_pebble.main(args) == 0
    return tmp_path / "out", args


def rows(out: Path) -> dict[tuple[str, int], dict[str, Any]]:
    lines = (out / "rows.jsonl").read_text().splitlines()
    return {(row["arm"], row["seed"]): row for row in map(json.loads, lines)}


def test_the_experiment_runs_resumes_and_reports(finished: tuple[Path, list[str]]) -> None:
    out, args = finished
    assert sorted(rows(out)) == [("prefrl", 0), ("true_reward", 0)]
    summary = json.loads((out / "summary.json").read_text())
    for arm in prefrl_pebble.ARMS:
        assert summary[arm]["final_return"]["n"] == summary[arm]["curve"]["600"]["n"] == 1
    assert (out / "curves.png").stat().st_size > 0
    assert "| prefrl | 0 |" in (out / "table.md").read_text()
    first = (out / "summary.json").read_text()
    assert prefrl_pebble.main([*args, "--resume"]) == 0  # every unit done: nothing runs again
    assert prefrl_pebble.main([*args, "--report-only"]) == 0
    assert (out / "summary.json").read_text() == first


def test_seeds_are_summarised_with_sd_and_t_intervals(finished: tuple[Path, list[str]]) -> None:
    base = rows(finished[0])[("prefrl", 0)]
    shifted = base | {"seed": 1, "final_return": base["final_return"] + 10.0,
                      "curve": {step: value + 10.0 for step, value in base["curve"].items()}}
    table = prefrl_pebble_report.summarise([base, shifted])
    final = table["prefrl"]["final_return"]
    half = 12.706204736174707 * np.sqrt(50.0) / np.sqrt(2)  # t(0.975, 1) * sd / sqrt(n), sd = sqrt(50)
    assert final["n"] == 2 and final["sd"] == pytest.approx(np.sqrt(50.0))
    assert final["mean"] == pytest.approx(base["final_return"] + 5.0)
    interval = (final["ci95_low"], final["ci95_high"])
    assert interval == pytest.approx((final["mean"] - half, final["mean"] + half))
    assert table["prefrl"]["curve"]["600"]["n"] == 2
    assert "| prefrl | 0, 1 |" in prefrl_pebble_report.markdown_table(table)


@pytest.mark.parametrize("arm", prefrl_pebble.ARMS)
def test_a_killed_unit_resumes_where_it_was(tmp_path: Path, arm: str, monkeypatch: pytest.MonkeyPatch,
                                           finished: tuple[Path, list[str]]) -> None:
    whole = rows(finished[0])[(arm, 0)]  # the same unit, never stopped
    assert whole["steps"] == 600 and list(whole["curve"]) == ["200", "400", "600"]
    assert whole["labels"] == (8 if arm == "prefrl" else 0)  # 4 first, then 2 at 400 and 600
    evaluate, calls = prefrl_pebble.evaluate, []

    def dies_on_second(*args: Any) -> float:
        calls.append(args)
        if len(calls) == 2:
            raise Killed
        return evaluate(*args)

    config = load_config(prefrl_pebble.PebbleExperimentConfig, tiny_config(tmp_path), [])
    unit = Unit(f"{arm}-s0", {"config": config.model_dump(mode="json"), "out": str(tmp_path / "out"),
                              "arm": arm, "seed": 0})
    monkeypatch.setattr(prefrl_pebble, "evaluate", dies_on_second)
    with pytest.raises(Killed):
        prefrl_pebble.run_unit(unit, None)
    monkeypatch.setattr(prefrl_pebble, "evaluate", evaluate)
    resumed = prefrl_pebble.run_unit(unit, None)["rows"][0]
    start = resumed["resumed_from"]
    assert start == (200 if arm == "true_reward" else 400)  # its last point, not from scratch
    assert (resumed["steps"], resumed["labels"]) == (whole["steps"], whole["labels"])
    assert list(resumed["curve"]) == list(whole["curve"])
    before = {step: value for step, value in whole["curve"].items() if int(step) <= start}
    assert {step: resumed["curve"][step] for step in before} == before  # kept, not redone
    if arm == "true_reward":  # chunks end on episode ends: the resumed run is the unbroken one
        assert resumed["curve"] == whole["curve"] and resumed["final_return"] == whole["final_return"]


def test_the_table_times_only_runs_that_were_not_resumed():
    row = {"arm": "prefrl", "curve": {"10": 1.0}, "final_return": 5.0, "cpu_s": 9.0}
    rows = [row | {"seed": 0, "wall_s": 100.0, "resumed_from": 0},
            row | {"seed": 1, "wall_s": 3.0, "resumed_from": 50}]  # timed its last sitting only
    table = prefrl_pebble_report.summarise(rows)
    assert table["prefrl"]["wall_s"]["n"] == 1 and table["prefrl"]["wall_s"]["mean"] == 100.0
    assert table["prefrl"]["final_return"]["n"] == 2
    assert "| 100, 1 |" in prefrl_pebble_report.markdown_table(table)
    resumed = prefrl_pebble_report.summarise(rows[1:])
    assert prefrl_pebble_report.markdown_table(resumed).rstrip().endswith("| - |")

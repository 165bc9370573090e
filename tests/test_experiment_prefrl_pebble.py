"""experiments/prefrl_pebble.py at its smallest: Pendulum, a few hundred steps, a few labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from experiments import prefrl_pebble
from rlkit.config import load_config
from rlkit.scale.units import Unit

SAC = {"buffer_size": 2000, "batch_size": 32, "learning_starts": 50}
TINY = {
    "seeds": [0, 1],
    "prefrl": {
        "env": {"id": "Pendulum-v1", "n_envs": 1},
        "agent": {"algo": "sac", "total_timesteps": 800, "hyperparams": "sb3", "kwargs": SAC,
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


def run(tmp_path: Path, arm: str, name: str) -> dict[str, Any]:
    config = load_config(prefrl_pebble.PebbleExperimentConfig, tiny_config(tmp_path, name), [])
    unit = Unit(f"{arm}-s0", {"config": config.model_dump(mode="json"), "out": str(tmp_path / name),
                              "arm": arm, "seed": 0})
    return prefrl_pebble.run_unit(unit, None)["rows"][0]


@pytest.mark.parametrize("arm", prefrl_pebble.ARMS)
def test_a_killed_unit_resumes_to_the_uninterrupted_result(tmp_path: Path, arm: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    whole = run(tmp_path, arm, "whole")
    assert whole["steps"] == 800 and list(whole["curve"]) == ["200", "400", "600", "800"]
    assert whole["labels"] == (10 if arm == "prefrl" else 0)
    evaluate, calls = prefrl_pebble.evaluate, []

    def dies_on_second(*args: Any) -> float:
        calls.append(args)
        if len(calls) == 2:
            raise Killed
        return evaluate(*args)

    monkeypatch.setattr(prefrl_pebble, "evaluate", dies_on_second)
    with pytest.raises(Killed):
        run(tmp_path, arm, "killed")
    monkeypatch.setattr(prefrl_pebble, "evaluate", evaluate)
    resumed = run(tmp_path, arm, "killed")
    start = resumed["resumed_from"]
    assert start == 200 if arm == "true_reward" else 400  # its last point, not from scratch
    assert (resumed["steps"], resumed["labels"]) == (whole["steps"], whole["labels"])
    assert list(resumed["curve"]) == list(whole["curve"])
    before = {step: value for step, value in whole["curve"].items() if int(step) <= start}
    assert {step: resumed["curve"][step] for step in before} == before  # kept, not redone
    if arm == "true_reward":  # chunks end on episode ends: the resumed run is the unbroken one
        assert resumed["curve"] == whole["curve"] and resumed["final_return"] == whole["final_return"]


def test_the_experiment_runs_resumes_and_reports(tmp_path: Path) -> None:
    config = tiny_config(tmp_path)
    args = ["--config", str(config), "--backend", "local", "--workers", "2"]
    assert prefrl_pebble.main(args) == 0
    out = tmp_path / "out"
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    assert sorted((r["arm"], r["seed"]) for r in rows) == [("prefrl", 0), ("prefrl", 1),
                                                           ("true_reward", 0), ("true_reward", 1)]
    summary = json.loads((out / "summary.json").read_text())
    for arm in prefrl_pebble.ARMS:
        final = summary[arm]["final_return"]
        assert final["n"] == 2 and final["ci95_low"] < final["mean"] < final["ci95_high"]
        assert summary[arm]["curve"]["800"]["n"] == 2
    assert (out / "curves.png").stat().st_size > 0
    assert "| prefrl | 0, 1 |" in (out / "table.md").read_text()
    first = (out / "summary.json").read_text()
    assert prefrl_pebble.main([*args, "--resume"]) == 0  # every unit done: nothing runs again
    assert prefrl_pebble.main([*args, "--report-only"]) == 0
    assert (out / "summary.json").read_text() == first

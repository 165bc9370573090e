"""What a sweep's table and plot show: the sweep's chosen metrics or its command's default
(pref-rl: return, reward-model accuracy, updates; no bookkeeping), and intervals of bounded
quantities clipped to their range; and a pref-rl trial with nothing to resume from (the
env-reward arm) is rerun afresh."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rlkit.scale.aggregate import bounds_of, interval, shown_metrics, write_aggregate
from rlkit.scale.sweep import SweepSpec, sweep_units
from rlkit.scale.trial import run_trial, trial_argv
from rlkit.scale.unit_graph import Unit
from rlkit.scale.units import UnitResult

ROOT = Path(__file__).resolve().parents[1]

PREFRL_METRICS = ["true_return/mean", "true_return/std", "labels", "agent_updates", "refits",
                  "env_steps", "reward_model/fresh_accuracy", "reward_model/val_accuracy"]


def test_prefrl_shows_return_accuracy_and_updates_by_default_and_a_choice_overrides_it():
    assert shown_metrics(PREFRL_METRICS, "pref-rl") == [
        "true_return/mean", "reward_model/fresh_accuracy", "reward_model/val_accuracy",
        "agent_updates", "refits", "labels"]
    assert shown_metrics(PREFRL_METRICS, "pref-rl", ["reward_model/*", "env_steps"]) == [
        "reward_model/fresh_accuracy", "reward_model/val_accuracy", "env_steps"]
    assert shown_metrics(PREFRL_METRICS, "pref-rl", ["no/such"]) == []


def test_other_commands_show_every_metric_but_bookkeeping():
    names = ["held_out/accuracy", "held_out/step_pearson", "epochs", "best_epoch", "n_pairs",
             "pairs/n_pairs"]
    assert shown_metrics(names, "train-reward") == ["held_out/accuracy", "held_out/step_pearson"]


def test_bounded_quantities_have_their_intervals_clipped_to_their_range():
    assert bounds_of("reward_model/fresh_accuracy") == (0.0, 1.0)
    assert bounds_of("held_out/step_pearson") == (-1.0, 1.0)
    assert bounds_of("agent_updates") == (0.0, None)
    assert bounds_of("true_return/mean") is None
    accuracy = interval([0.9, 1.0, 1.0], bounds=(0.0, 1.0))
    unclipped = interval([0.9, 1.0, 1.0])
    assert unclipped["high"] > 1.0  # the t-interval runs past 1 ...
    assert accuracy["high"] == 1.0 and accuracy["clipped"]  # ... the accuracy's stops there
    assert accuracy["low"] == unclipped["low"] and accuracy["half_width"] == unclipped["half_width"]
    returns = interval([-10.0, -20.0, -30.0])
    assert not returns["clipped"] and returns["low"] < -30.0


def fake_sweep(tmp_path, metrics: tuple[str, ...] = ()) -> tuple[dict, str]:
    spec = SweepSpec("pref-rl", {"reward": ["learned", "env"]}, seeds=3, metrics=metrics)
    units = sweep_units(spec, tmp_path, "g")
    results = {}
    for unit in units:
        learned = unit.payload["point"]["reward"] == "learned"
        seed = unit.payload["seed"]
        summary = {"true_return/mean": -100.0 + 10 * seed + (0 if learned else 50),
                   "labels": 40.0 if learned else 0.0, "agent_updates": 20.0, "best_epoch": 3.0,
                   "epochs": 9.0, "n_pairs": 40.0}
        if learned:
            summary["reward_model/fresh_accuracy"] = [0.9, 1.0, 1.0][seed]
        results[unit.id] = UnitResult(unit.id, "done", {"metrics": summary})
    table = write_aggregate(spec, units, results, tmp_path)
    return table, (tmp_path / "results.md").read_text()


def test_the_table_shows_the_default_metrics_clipped_and_results_json_keeps_every_one(tmp_path):
    table, text = fake_sweep(tmp_path)
    header = next(line for line in text.splitlines() if line.startswith("| grid point"))
    assert header == ("| grid point | seeds done | true_return/mean | reward_model/fresh_accuracy | "
                      "agent_updates | labels |")
    for bookkeeping in ("best_epoch", "n_pairs", "| epochs"):
        assert bookkeeping not in text
    learned = next(line for line in text.splitlines() if line.startswith("| reward=learned"))
    assert ", 1]" in learned  # the accuracy's interval: [low, 1], not mean ± a half past 1
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["shown"] == table["shown"]
    assert {"best_epoch", "epochs", "n_pairs"} <= set(saved["rows"][0]["metrics"])  # nothing lost
    env_row = next(line for line in text.splitlines() if line.startswith("| reward=env"))
    assert "—" in env_row  # no reward model in the true-reward arm


@pytest.mark.parametrize(("chosen", "shown"), [(("labels",), ["labels"]),
                                               (("true_return/*", "labels"),
                                                ["true_return/mean", "labels"])])
def test_a_sweep_chooses_its_metrics(tmp_path, chosen, shown):
    table, text = fake_sweep(tmp_path, chosen)
    assert table["shown"] == shown
    header = next(line for line in text.splitlines() if line.startswith("| grid point"))
    assert header == "| grid point | seeds done | " + " | ".join(shown) + " |"
    assert "metrics" not in SweepSpec("pref-rl", {}, metrics=chosen).to_json()  # a resume compares trials


def test_a_prefrl_trial_without_a_resume_point_is_rerun_afresh(tmp_path, monkeypatch):
    run_dir = tmp_path / "trials" / "p001-s0"
    payload = {"command": "pref-rl", "run_dir": str(run_dir), "cwd": str(ROOT), "logger": "jsonl",
               "overrides": ["env.id=tests.tiny_envs:rlkit-test/Point-v0", "env.n_envs=2",
                             "agent.kwargs={n_steps: 32, batch_size: 32, n_epochs: 1}",
                             "agent.total_timesteps=128", "agent.eval_episodes=1", "reward=env"]}
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    first = run_trial(Unit("p001-s0", payload), lambda metrics: None)
    assert first["metrics"]["agent_updates"] == 128 // 64
    # a used run directory with no resume point (here: the finished env-reward arm) ...
    assert "--overwrite" in trial_argv(payload, rerun=True)
    again = run_trial(Unit("p001-s0", payload), lambda metrics: None)  # ... is run again, not refused
    assert again["attempt"] == 2 and again["metrics"]["agent_updates"] == 128 // 64
    (run_dir / "resume").mkdir()
    (run_dir / "resume" / "state.json").write_text("{}")  # one with a point goes on from it
    assert "--overwrite" not in trial_argv(payload, rerun=True)
    assert "--overwrite" not in trial_argv({**payload, "command": "m3hf"}, rerun=True)
    assert "--overwrite" in trial_argv({**payload, "command": "train-reward"}, rerun=True)


def test_the_sweep_command_line_passes_its_metrics_to_the_sweep(monkeypatch, tmp_path):
    from rlkit.cli import build_parser
    from rlkit.scale import command, sweep

    seen = {}

    def fake_run_sweep(spec, sweep_dir, backend, resume, echo):
        seen["metrics"] = spec.metrics
        return {"rows": [], "problems": [], "sweep_dir": str(tmp_path)}

    monkeypatch.setattr(sweep, "run_sweep", fake_run_sweep)
    args = build_parser().parse_args(["sweep", "train-reward", "--metrics", "labels, reward_model/*",
                                      "--run-dir", str(tmp_path)])
    assert command.run(args) == 0
    assert seen["metrics"] == ("labels", "reward_model/*")

"""rlkit.scale on a local Ray (num_cpus=2): units as Tune trials scheduled as on the local backend,
sweeps, a failing trial, resume after the driver is killed, ASHA early stopping on a metric the
command logs while it runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("ray.tune", reason="needs the ray extra: pip install 'rlkit[ray]'")

from rlkit.scale.units import Backend  # noqa: E402
from tests.sweeps import (  # noqa: E402
    LONG,
    TINY,
    check_a_unit_starts_when_its_prerequisites_are_done,
    check_aggregate_against_trials,
    check_units_run_fail_and_resume,
    kill_driver_midway,
    rlkit,
    status,
    sweep_argv,
)

RAY = ["--backend", "ray", "--num-cpus", "2"]


@pytest.mark.slow
def test_ray_sweep_resumes_after_its_driver_is_killed(scratch, dataset):
    """Runs first, before this module starts a Ray in the test process. The killed trial runs
    ~20 s: on Ray it lives on until the raylet notices its driver is gone (a few seconds, more on
    a loaded machine), and one that finishes meanwhile is rightly kept as done."""
    sweep_dir = scratch / "sweep"
    argv = sweep_argv(sweep_dir, f"dataset={dataset}", *LONG, "--grid",
                      "trainer.max_epochs=2,3,2400,2401", *RAY)
    kill_driver_midway(sweep_dir, argv, first=["p000-s0", "p001-s0"], then="p002-s0")
    result = rlkit(*argv, "--resume")
    assert result.returncode == 0, result.stderr
    assert "p000-s0: done earlier (skipped)" in result.stderr
    for trial in ("p000-s0", "p001-s0"):
        assert not (sweep_dir / "logs" / trial / "stdout.2.log").exists()
    assert (sweep_dir / "logs" / "p002-s0" / "stdout.2.log").exists()
    assert all(status(sweep_dir, f"p00{i}-s0")["status"] == "done" for i in range(4))
    check_aggregate_against_trials(sweep_dir)


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray started as ``rlkit sweep --backend ray`` starts it."""
    from rlkit.scale.ray_backend import import_ray, init_ray

    ray = import_ray()
    assert init_ray(ray, Backend("ray", num_cpus=2))
    yield ray
    ray.shutdown()


def test_a_local_ray_runs_its_workers_at_the_callers_priority(local_ray):
    """Ray's own default is niceness 15: the trials' commands would yield to any other work."""
    import os

    def niceness() -> int:
        return os.nice(0)

    assert local_ray.get(local_ray.remote(num_cpus=1)(niceness).remote()) == os.nice(0)
    assert "RAY_worker_niceness" not in os.environ  # set for the raylet's start only


def test_ray_units_run_fail_and_resume_as_local_ones(scratch, local_ray):
    check_units_run_fail_and_resume(Backend("ray"), scratch)


@pytest.mark.slow
def test_a_ray_unit_starts_when_its_prerequisites_are_done(scratch, local_ray):
    """Two 1-CPU units at a time on the 2-CPU Ray, as on two local workers: not in stages."""
    check_a_unit_starts_when_its_prerequisites_are_done(Backend("ray"), scratch)


def tune_reports(sweep_dir: Path) -> dict[str, list[dict]]:
    """Each trial's reports as Tune's JSON logger kept them (result.json), by unit id."""
    reports = {}
    for path in (sweep_dir / "tune").glob("*/*/result.json"):
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        reports[lines[0]["config"]["unit"]] = lines
    return reports


@pytest.mark.slow
def test_ray_sweep_of_four_trials_with_one_failing_point(scratch, dataset, local_ray, capsys):
    from rlkit.cli import main

    sweep_dir = scratch / "sweep"
    code = main(sweep_argv(sweep_dir, *TINY, "--grid", f"dataset={dataset},{scratch}/missing",
                           "--seeds", "2", *RAY))
    assert code == 1
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["trials"] == 4 and line["done"] == 2
    assert sorted(line["failed"]) == ["p001-s0", "p001-s1"]
    assert "missing" in status(sweep_dir, "p001-s1")["error"]
    assert any((sweep_dir / "tune").iterdir())  # Tune ran them (its state under the sweep dir)
    # no scheduler: one report per trial, its result (not a round trip per logged epoch), and
    # Tune keeps it as JSON only (no CSV or TensorBoard copies)
    reports = tune_reports(sweep_dir)
    assert sorted(reports) == ["p000-s0", "p000-s1", "p001-s0", "p001-s1"]
    assert all(len(lines) == 1 and "rlkit_status" in lines[0] for lines in reports.values())
    assert not [p.name for p in (sweep_dir / "tune").rglob("*")
                if p.name == "progress.csv" or p.name.startswith("events.out.tfevents")]
    for trial in ("p000-s0", "p000-s1"):
        assert (sweep_dir / "trials" / trial / "reward_model").is_dir()
    check_aggregate_against_trials(sweep_dir)


@pytest.mark.slow
def test_asha_stops_a_trial_on_a_metric_reported_while_it_runs(scratch, dataset, local_ray):
    from rlkit.scale.sweep import SweepSpec, run_sweep

    # two good rates first (two trials at a time): they set the bar for the poor ones
    spec = SweepSpec("train-reward", {"trainer.lr": ["1e-2", "3e-3", "1e-6", "1e-7"]},
                     overrides=(f"dataset={dataset}", "trainer.max_epochs=16",
                                "trainer.patience=null", "trainer.val_fraction=0.5",
                                "model.hidden=[16]"), logger="jsonl")
    table = run_sweep(spec, scratch / "asha", Backend("ray", metric="reward/val_loss", mode="min"))
    statuses = {t["id"]: t["status"] for row in table["rows"] for t in row["trials"]}
    assert "stopped" in statuses.values(), statuses
    assert set(statuses.values()) <= {"done", "stopped"}
    stopped = [t for t, s in statuses.items() if s == "stopped"]
    for trial in stopped:  # Tune saw the metric from metrics.jsonl before the trial ended
        last = status(scratch / "asha", trial)["result"]["last_report"]
        assert "reward/val_loss" in last and last["training_iteration"] <= 16  # not the final one
    assert not Path(scratch / "asha" / "results.json").read_text() == ""
    reports = tune_reports(scratch / "asha")  # with a scheduler every logged line reached Tune
    for trial in (t for t, s in statuses.items() if s == "done"):
        logged = (scratch / "asha" / "trials" / trial / "metrics.jsonl").read_text().splitlines()
        assert len(reports[trial]) == len(logged) + 1  # and the result


def test_shared_storage_is_checked_on_every_node(scratch, local_ray):
    from rlkit.errors import ConfigError
    from rlkit.scale.ray_backend import check_shared_storage

    nodes = check_shared_storage(local_ray, scratch)  # a real task on the one local node
    assert len(nodes) == 1 and list(scratch.iterdir()) == []  # the token is cleaned up

    class Blind:  # a two-node cluster whose second node does not see the sweep directory
        def nodes(self):
            return [{"Alive": True, "NodeID": "a" * 56, "NodeManagerAddress": "10.0.0.1"},
                    {"Alive": True, "NodeID": "b" * 56, "NodeManagerAddress": "10.0.0.2"}]

        def remote(self, **_):
            def wrap(fn):
                class Task:
                    def options(self, scheduling_strategy):
                        node = scheduling_strategy.node_id
                        return type("R", (), {"remote": staticmethod(
                            lambda path, token: ("h", node.startswith("a") and fn(path, token)[1]))})()
                return Task()
            return wrap

        def get(self, refs, timeout=None):
            return refs

    with pytest.raises(ConfigError, match=r"not visible on node\(s\) \['10.0.0.2'\].*every node"):
        check_shared_storage(Blind(), scratch)

"""rlkit.scale without Ray: grids and intervals, units on the local backend (scheduling, failures,
resume, a terminated driver), local sweeps, and the ordinal and APEC experiments."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlkit.errors import ConfigError, InvalidDataError
from rlkit.scale.aggregate import interval
from rlkit.scale.sweep import parse_grid, parse_resources
from rlkit.scale.unit_graph import Unit, check_units
from rlkit.scale.units import Backend, UnitResult, run_units
from tests.sweeps import (
    LONG,
    ROOT,
    TINY,
    check_a_unit_starts_when_its_prerequisites_are_done,
    check_aggregate_against_trials,
    check_units_run_fail_and_resume,
    kill_driver_midway,
    rlkit,
    status,
    sweep_argv,
    toy_unit,
)


def test_grid_and_resources_are_parsed_and_bad_ones_named():
    grid = parse_grid(["trainer.lr=1e-3, 3e-4", "model.hidden=[32,32],[64]"])
    assert grid == {"trainer.lr": ["1e-3", "3e-4"], "model.hidden": ["[32,32]", "[64]"]}
    assert parse_resources("cpu=2,gpu=0.5") == {"cpu": 2.0, "gpu": 0.5}
    for bad in (["lr"], ["lr="], ["lr=1,1"], ["lr=1", "lr=2"]):
        with pytest.raises(ConfigError, match="grid"):
            parse_grid(bad)
    with pytest.raises(ConfigError, match="tpu=1"):
        parse_resources("cpu=1,tpu=1")
    with pytest.raises(ConfigError, match="needs --backend ray"):
        Backend("local", metric="reward/val_loss", mode="min")
    with pytest.raises(ConfigError, match="both --metric and --mode"):
        Backend("ray", metric="reward/val_loss")


def test_interval_is_the_t_interval_with_the_sample_sd():
    got = interval([1.0, 2.0, 3.0, 4.0])
    # sd (ddof=1) = 1.2909944, t(0.975, 3) = 3.1824463 -> half-width 2.0542603
    assert got["n"] == 4 and got["mean"] == 2.5
    assert got["sd"] == pytest.approx(1.2909944487, rel=1e-9)
    assert got["half_width"] == pytest.approx(2.0542603, rel=1e-6)
    assert (got["low"], got["high"]) == pytest.approx((2.5 - 2.0542603, 2.5 + 2.0542603), rel=1e-6)
    assert interval([3.0])["half_width"] is None


def test_malformed_units_are_refused_before_any_runs(scratch):
    with pytest.raises(InvalidDataError, match="cycle: a -> b -> a"):
        check_units([Unit("a", after=("b",)), Unit("b", after=("a",))])
    with pytest.raises(InvalidDataError, match="not a unit"):
        check_units([Unit("a", after=("nope",))])
    with pytest.raises(InvalidDataError, match="appears twice"):
        check_units([Unit("a"), Unit("a")])
    with pytest.raises(InvalidDataError, match="plain file name"):
        check_units([Unit("../a")])
    runnable = Unit("ok", {"dir": str(scratch), "value": 1})
    with pytest.raises(InvalidDataError, match="cycle"):
        run_units([runnable, Unit("a", after=("b",)), Unit("b", after=("a",))], toy_unit,
                  scratch / "root", Backend("local", workers=1))
    assert not (scratch / "ok.runs").exists()


class ScriptedExecutor:
    """An executor with ``room`` slots whose units end one at a time, oldest first, without
    running: what ``run_units`` alone decides (the same for every backend) shows in ``log``."""

    def __init__(self, room: int, failing: set[str], log: list[str]) -> None:
        self.room, self.failing, self.log = room, failing, log
        self.running: list[Unit] = []

    def has_room(self) -> bool:
        return len(self.running) < self.room

    def start(self, unit: Unit) -> None:
        assert self.has_room() or not self.running, f"{unit.id} started with no room"
        self.log.append(f"start {unit.id}")
        self.running.append(unit)

    def wait(self) -> list[UnitResult]:
        unit = self.running.pop(0)
        self.log.append(f"end {unit.id}")
        return [UnitResult(unit.id, "failed" if unit.id in self.failing else "done",
                           error="told to fail" if unit.id in self.failing else None)]

    def close(self) -> None:
        self.log.append("close")


def test_one_scheduler_starts_a_unit_once_its_prerequisites_are_done(scratch, monkeypatch):
    from rlkit.scale import units as units_module

    log: list[str] = []
    made = []

    def make_executor(backend, fn, root, name, units):
        made.append([u.id for u in units])
        return ScriptedExecutor(2, {"b"}, log)

    monkeypatch.setattr(units_module, "make_executor", make_executor)
    units = [Unit("slow"), Unit("a"), Unit("c", after=("a",)), Unit("d", after=("b",)),
             Unit("e", after=("d",)), Unit("b"), Unit("f", after=("c", "slow"))]
    seen: list[str] = []
    for backend in (Backend("local", workers=2), Backend("ray")):  # one model for both
        log.clear()
        results = run_units(units, toy_unit, scratch / backend.name, backend,
                            on_result=lambda r: seen.append(r.id))
        assert log == ["start slow", "start a", "end slow", "start b",  # room for two
                       "end a", "start c",  # c as soon as a is done, before f, which needs c too
                       "end b", "end c", "start f", "end f", "close"]
        assert {k: r.status for k, r in results.items()} == {
            "slow": "done", "a": "done", "c": "done", "d": "failed", "e": "failed",
            "b": "failed", "f": "done"}
        assert results["d"].error == "not run: b did not finish"
        assert results["e"].error == "not run: d did not finish"
        assert status(scratch / backend.name, "e")["error"] == "not run: d did not finish"
    assert made == [[u.id for u in units]] * 2
    # resume: the finished units are not handed over again, and start the bar and on_result
    log.clear()
    seen.clear()
    again = run_units(units, toy_unit, scratch / "local", Backend("local"), resume=True,
                      on_result=lambda r: seen.append(r.id))
    assert [k for k, r in again.items() if r.skipped] == ["slow", "a", "c", "f"]
    assert seen[:4] == ["slow", "a", "c", "f"] and made[-1] == ["d", "e", "b"]
    assert log == ["start b", "end b", "close"]
    # with nothing left to run no executor is made (no Ray started)
    assert all(r.skipped for r in run_units(units[:3], toy_unit, scratch / "local", resume=True).values())
    assert len(made) == 3


def test_only_runs_the_named_units_and_those_they_run_after(scratch, monkeypatch):
    from rlkit.scale import units as units_module

    log: list[str] = []
    monkeypatch.setattr(units_module, "make_executor", lambda *_: ScriptedExecutor(1, set(), log))
    units = [Unit("demos"), Unit("other"), Unit("heldout", after=("demos",)),
             Unit("seed", after=("heldout", "demos")), Unit("later", after=("seed",))]
    results = run_units(units, toy_unit, scratch, only=["heldout"])
    assert list(results) == ["demos", "heldout"]
    assert log == ["start demos", "end demos", "start heldout", "end heldout", "close"]
    # a later sitting: the finished prerequisites are skipped, the unit named runs
    log.clear()
    again = run_units(units, toy_unit, scratch, resume=True, only=["seed"])
    assert {k: r.skipped for k, r in again.items()} == {"demos": True, "heldout": True, "seed": False}
    assert log == ["start seed", "end seed", "close"]
    with pytest.raises(ConfigError, match="no unit named 'seed-9'; the units are: "
                                          "demos, other, heldout, seed, later"):
        run_units(units, toy_unit, scratch, only=["seed-9"])


def test_an_experiment_refuses_an_unknown_unit_before_anything_runs(scratch):
    done = subprocess.run([sys.executable, "-m", "experiments.m3hf", f"out_dir={scratch / 'm3hf'}",
                           "--only", "ippo-s99"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "m3hf.py: error: no unit named 'ippo-s99'; the units are: ippo-s0," in done.stderr
    assert "Traceback" not in done.stderr and not list((scratch / "m3hf").glob("*/seed*"))


def test_local_units_run_in_their_own_processes_and_resume(scratch):
    results = check_units_run_fail_and_resume(Backend("local", workers=2), scratch)
    pids = {results["a"].result["pid"], results["c"].result["pid"], os.getpid()}
    assert len(pids) == 3  # a fresh process per unit, none of them this one


def test_a_local_unit_starts_when_its_prerequisites_are_done(scratch):
    check_a_unit_starts_when_its_prerequisites_are_done(Backend("local", workers=2), scratch)


SLEEPY_DRIVER = """
import os, sys, time
from pathlib import Path
from rlkit.scale.unit_graph import Unit
from rlkit.scale.units import Backend, run_units

def sleeper(unit, report):
    Path(unit.payload["pid_file"]).write_text(str(os.getpid()))
    time.sleep(120)
    return {}

if __name__ == "__main__":
    run_units([Unit("slow", {"pid_file": sys.argv[2]})], sleeper, sys.argv[1],
              Backend("local", workers=1))
"""


def test_a_terminated_driver_ends_its_units_and_removes_its_temporary_folder(scratch):
    # SIGTERM (kill, a session's end) to the driver alone: Python's default would end it at once,
    # leaving /tmp/rlkit-units-* behind (its worker dies by PDEATHSIG, its folder stays)
    (scratch / "tmp").mkdir()
    (scratch / "driver.py").write_text(SLEEPY_DRIVER)
    pid_file = scratch / "worker.pid"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(scratch / "tmp")}
    driver = subprocess.Popen([sys.executable, str(scratch / "driver.py"), str(scratch / "root"),
                               str(pid_file)], env=env, cwd=ROOT, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not pid_file.is_file() or not pid_file.read_text():
            assert driver.poll() is None and time.monotonic() < deadline, driver.stderr.read()
            time.sleep(0.1)
        assert [p.name for p in (scratch / "tmp").iterdir()][0].startswith("rlkit-units-")
        driver.send_signal(signal.SIGTERM)
        code = driver.wait(timeout=30)  # not the worker's 120 s
    finally:
        driver.kill()
    err = driver.stderr.read().decode()
    assert code == 143 and "Traceback" not in err, err
    assert not Path(f"/proc/{pid_file.read_text()}").exists()  # the worker was ended, and reaped
    assert list((scratch / "tmp").iterdir()) == []


def test_local_sweep_of_four_trials_aggregates_their_summaries(scratch, dataset, capsys):
    from rlkit.cli import main

    sweep_dir = scratch / "sweep"
    code = main(sweep_argv(sweep_dir, f"dataset={dataset}", *TINY, "--grid",
                           "trainer.lr=1e-3,1e-2", "--seeds", "2", "--workers", "2"))
    assert code == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["trials"] == 4 and line["done"] == 4 and line["failed"] == []
    for trial in ("p000-s0", "p000-s1", "p001-s0", "p001-s1"):
        assert status(sweep_dir, trial)["status"] == "done"
        config = (sweep_dir / "trials" / trial / "config.yaml").read_text()
        assert f"seed: {trial[-1]}" in config  # an ordinary run dir with its overrides
    assert "lr: 0.01" in (sweep_dir / "trials" / "p001-s0" / "config.yaml").read_text()
    check_aggregate_against_trials(sweep_dir)
    # the seeds differ, so the interval is a real one
    row = json.loads((sweep_dir / "results.json").read_text())["rows"][0]
    assert row["metrics"]["held_out/accuracy"]["n"] == 2


def test_a_failing_trial_is_reported_and_the_others_finish(scratch, dataset, capsys):
    from rlkit.cli import main

    sweep_dir = scratch / "sweep"
    code = main(sweep_argv(sweep_dir, *TINY, "--grid", f"dataset={dataset},{scratch}/missing",
                           "--seeds", "1", "--workers", "2"))
    assert code == 1  # not every trial finished
    assert status(sweep_dir, "p000-s0")["status"] == "done"
    failed = status(sweep_dir, "p001-s0")
    assert failed["status"] == "failed" and "missing" in failed["error"]
    assert "p001-s0" in (sweep_dir / "results.md").read_text().split("did not finish")[1]
    check_aggregate_against_trials(sweep_dir)


def test_sweep_refuses_bad_input_before_any_trial(scratch, dataset, capsys):
    from rlkit.cli import main

    assert main(sweep_argv(scratch / "s", f"dataset={dataset}", "--grid", "trainer.lr=1e-3,-1")) == 2
    assert "lr" in capsys.readouterr().err and not (scratch / "s" / "trials").exists()
    assert main(sweep_argv(scratch / "s2", "--grid", "trainer.epochs=1,2")) == 2
    assert "epochs" in capsys.readouterr().err
    assert main(["sweep", "nope", "--grid", "a=1,2", "--run-dir", str(scratch / "s3")]) == 2
    assert "unknown command 'nope'" in capsys.readouterr().err


def test_a_trial_ends_when_its_command_exits_not_at_the_next_poll(scratch, monkeypatch):
    """run_trial waits on the command between reads of its metrics: a poll interval far longer
    than the command's run does not hold the trial (and its worker slot) back."""
    from rlkit.scale import trial as trial_module
    from rlkit.scale.units import UnitError

    monkeypatch.setattr(trial_module, "POLL_S", 120.0)
    unit = Unit("t", {"command": "train-reward", "overrides": [f"dataset={scratch}/missing"],
                      "run_dir": str(scratch / "trials" / "t"), "logger": "jsonl"})
    start = time.monotonic()
    with pytest.raises(UnitError, match="missing"):
        trial_module.run_trial(unit, lambda _metrics: None)
    assert time.monotonic() - start < 90


@pytest.mark.slow
def test_local_sweep_resumes_after_its_driver_is_killed(scratch, dataset):
    sweep_dir = scratch / "sweep"
    argv = sweep_argv(sweep_dir, f"dataset={dataset}", *LONG, "--grid",
                      "trainer.max_epochs=2,3,600,601", "--workers", "2")
    kill_driver_midway(sweep_dir, argv, first=["p000-s0", "p001-s0"], then="p002-s0")
    result = rlkit(*argv, "--resume")
    assert result.returncode == 0, result.stderr
    assert "p000-s0: done earlier (skipped)" in result.stderr
    for trial in ("p000-s0", "p001-s0"):  # finished: not run again
        assert not (sweep_dir / "logs" / trial / "stdout.2.log").exists()
    assert (sweep_dir / "logs" / "p002-s0" / "stdout.2.log").exists()  # killed: run again
    assert all(status(sweep_dir, f"p00{i}-s0")["status"] == "done" for i in range(4))
    check_aggregate_against_trials(sweep_dir)


ORDINAL_TINY = ["seeds=[0,1]", 'tasks=[{"id":"Pendulum-v1","checkpoint_steps":[256,512]}]',
                'ppo_kwargs={"n_steps":64,"batch_size":64,"n_epochs":1}', "n_envs=2",
                "steps_per_policy=400", "max_length=100", "segment_length=10", "train_pairs=40",
                "test_pairs=50", "granularities=[binary,five]", "tie_ratios=[0.0,0.5]",
                "model.hidden=[16]", "trainer.max_epochs=3"]


@pytest.mark.slow
def test_ordinal_experiment_runs_its_units_after_their_prerequisites_and_resumes(scratch, capsys):
    from experiments.ordinal_feedback import main

    out = scratch / "ordinal"
    assert main([f"out_dir={out}", *ORDINAL_TINY, "--workers", "2"]) == 0
    ppo = status(out, "ppo-0-Pendulum-v1")
    fits = [status(out, f"fit-0-Pendulum-v1-s{seed}") for seed in (0, 1)]
    assert ppo["status"] == "done" and all(f["status"] == "done" for f in fits)
    assert ppo["result"]["checkpoints"][-1].endswith("ppo_512.zip")
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * (2 + 2)  # seeds x (granularities + tie ratios)
    assert rows == [row for fit in fits for row in fit["result"]["rows"]]  # config order
    assert {(r["seed"], r["setting"]) for r in rows} >= {(0, "binary"), (1, "five"), (1, 0.5)}
    table = json.loads((out / "summary.json").read_text())
    assert {e["n"] for e in table} == {2}
    capsys.readouterr()
    mtime = (out / "policies" / "Pendulum-v1" / "ppo_512.zip").stat().st_mtime
    assert main([f"out_dir={out}", *ORDINAL_TINY, "--resume"]) == 0
    assert capsys.readouterr().err.count("done earlier") == 3
    assert (out / "policies" / "Pendulum-v1" / "ppo_512.zip").stat().st_mtime == mtime
    assert [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()] == rows


def apec_tiny(out: Path) -> list[str]:
    p = "pipeline."
    return [f"out_dir={out}", "seeds=[0,1]", 'tasks=[{"id":"rlkit-test/Point-v0"}]',
            f"{p}env.horizon=20", f"{p}env.n_envs=2", f"{p}demos.algo=ppo", f"{p}demos.n_envs=2",
            f"{p}demos.total_timesteps=2048", f"{p}demos.checkpoint_every=512",
            f"{p}demos.baseline=random", f"{p}demos.eval_episodes=4",
            f"{p}demos.kwargs={{n_steps: 64, batch_size: 64, learning_rate: 0.001}}",
            f"{p}ail.rounds=3", f"{p}ail.steps_per_round=256", f"{p}ail.generator=ppo",
            f"{p}ail.generator_kwargs={{}}", f"{p}ail.discriminator.hidden=[16, 16]",
            f"{p}ail.discriminator.batch_size=64",
            f"{p}ail.agent_buffer=256", f"{p}rollouts.per_checkpoint=2", f"{p}pairs.n_pairs=24",
            f"{p}pairs.gap=1", f"{p}pairs.ot_threshold=0", f"{p}drex.noise_levels=[0.0, 0.25, 0.5, 0.75]",
            f"{p}drex.rollouts_per_level=2", f"{p}drex.bc_epochs=5", f"{p}reward.hidden=[16, 16]",
            f"{p}reward.trainer.max_epochs=3", f"{p}heldout.episodes_per_policy=1",
            f"{p}heldout.random_episodes=2", f"{p}heldout.n_pairs=64",
            f"{p}heldout.segment_length=10", f"{p}methods=[apec,drex]", f"{p}policy.methods=[]"]


@pytest.mark.slow
def test_apec_experiment_trains_one_demonstrator_per_task_then_the_seeds(scratch, monkeypatch):
    from experiments.apec import main

    site = scratch / "site"  # the unit processes register the tiny test env on start-up
    site.mkdir()
    (site / "sitecustomize.py").write_text("import tests.tiny_envs  # noqa: F401\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), str(ROOT)]))
    out = scratch / "apec"
    assert main([*apec_tiny(out), "shared_heldout=true", "--workers", "2"]) == 0
    demos = status(out, "demos-0-rlkit-test_Point-v0")
    heldout = status(out, "heldout-0-rlkit-test_Point-v0")
    seeds = [status(out, f"apec-0-rlkit-test_Point-v0-s{seed}") for seed in (0, 1)]
    assert demos["status"] == "done" and all(s["status"] == "done" for s in seeds)
    task_dir = out / "rlkit-test" / "Point-v0"
    assert (task_dir / "seed0" / "demos" / "demos.npz").is_file()
    # the second seed used the task's one demonstrator (a link), and started after it finished
    assert (task_dir / "seed1" / "demos").resolve() == (task_dir / "seed0" / "demos").resolve()
    assert not (task_dir / "seed1" / "demos" / "demonstrator").is_symlink()
    # one held-out set for the task, from an AIL run of seed 1000, which both seeds scored on
    assert heldout["status"] == "done" and heldout["result"]["ail_seed"] == 1000
    assert heldout["result"]["pairs"] == 64 and (task_dir / "heldout" / "ail").is_dir()
    for seed in (0, 1):
        assert (task_dir / f"seed{seed}" / "heldout").resolve() == (task_dir / "heldout").resolve()
        assert (task_dir / f"seed{seed}" / "heldout").is_symlink()  # no AIL run of its own
    assert {r["n_pairs"] for s in seeds for r in s["result"]["rows"]} == {64}
    methods = {(r["seed"], r["method"]) for s in seeds for r in s["result"]["rows"]}
    assert methods == {(0, "apec"), (0, "drex"), (1, "apec"), (1, "drex")}
    assert (out / "table.md").is_file() and (out / "apec_rlkit-test_Point-v0.png").is_file()
    # the demonstrator's curve: every checkpoint's return, the last and best of them, the demo
    (demonstrator,) = json.loads((out / "demonstrators.json").read_text())
    picked = json.loads((task_dir / "seed0" / "demos" / "demos.json").read_text())
    assert demonstrator["checkpoint_steps"] == [512, 1024, 1536, 2048]
    assert demonstrator["best_return"] == max(demonstrator["checkpoint_returns"]) == picked["best_return"]
    assert demonstrator["last_return"] == demonstrator["checkpoint_returns"][-1]
    assert demonstrator["demo_checkpoint_step"] == picked["checkpoint_step"]
    assert "| rlkit-test/Point-v0 | ppo | 2,048 | 4 |" in (out / "demonstrators.md").read_text()
    assert (out / "apec_demonstrators.png").is_file()
    # every AIL run's true return per round: the task's held-out run's and each seed's own
    runs = json.loads((out / "ail_runs.json").read_text())
    assert [(r["run"], r["n_rounds"]) for r in runs] == [("held-out run", 3), ("seed 0", 3), ("seed 1", 3)]
    assert (out / "apec_ail.png").is_file()


def test_the_ray_backend_without_ray_names_the_extra(scratch, dataset, monkeypatch, capsys):
    from rlkit.cli import main
    from rlkit.extras import MissingExtraError
    from rlkit.scale.ray_backend import import_ray

    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "ray.tune", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'rlkit\[ray\]'"):
        import_ray()
    code = main(sweep_argv(scratch / "s", f"dataset={dataset}", *TINY, "--grid",
                           "trainer.lr=1e-3,1e-2", "--backend", "ray"))
    err = capsys.readouterr().err
    assert code == 2 and "rlkit[ray]" in err and "Traceback" not in err
    assert not (scratch / "s").exists()  # refused before anything was written


def test_the_sweep_command_starts_without_loading_ray_or_torch():
    code = ("import sys; from rlkit.cli import build_parser; build_parser(); "
            "import rlkit.scale.command, rlkit.scale; "
            "print(sorted(m for m in ('ray', 'torch', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         check=True).stdout.strip()
    assert out == "[]"

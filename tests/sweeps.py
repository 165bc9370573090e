"""Shared pieces of the rlkit.scale tests: a tiny preference dataset, the sweep command line, the
aggregate recomputed from the trials' own files, a driver killed in the middle of a sweep, and
toy units with the checks every backend must pass."""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from rlkit.scale.aggregate import bounds_of
from rlkit.scale.unit_graph import Unit
from rlkit.scale.units import Backend, run_units

ROOT = Path(__file__).resolve().parents[1]
TINY = ["trainer.max_epochs=3", "model.hidden=[16]"]  # a sweep's trials finish in seconds
LONG = ["trainer.patience=null", "model.hidden=[16]"]  # trials train until max_epochs


@contextlib.contextmanager
def scratch_dir() -> Iterator[Path]:
    """A private temporary folder: pytest's own (tmp_path) is pruned when three newer pytest
    sessions start, which other people's runs on a shared machine do within a slow test."""
    folder = Path(tempfile.mkdtemp(prefix="rlkit-test-scale-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def make_dataset(tmp: Path) -> str:
    """collect (Pendulum, 1000 random steps) + label (100 pairs): a dataset prefix in seconds."""
    from rlkit.cli import main

    assert main(["collect", "env.id=Pendulum-v1", "env.n_envs=2",
                 'policies=[{"kind":"random","n_steps":1000}]', "--run-dir", str(tmp / "c"),
                 "--logger", "jsonl"]) == 0
    assert main(["label", f"trajectories={tmp / 'c' / 'trajectories.npz'}", "n_pairs=100",
                 "segment_length=20", "--run-dir", str(tmp / "l"), "--logger", "jsonl"]) == 0
    return str(tmp / "l" / "preferences")


def sweep_argv(sweep_dir: Path, *args: str) -> list[str]:
    """``rlkit sweep train-reward`` with ``args``, writing to ``sweep_dir`` (JSONL logger)."""
    return ["sweep", "train-reward", *args, "--run-dir", str(sweep_dir), "--logger", "jsonl"]


def rlkit(*argv: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """``rlkit *argv`` in a subprocess (offline W&B), its output captured."""
    env = {**os.environ, "WANDB_MODE": "offline", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "rlkit.cli", *argv], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=timeout)


def status(sweep_dir: Path, trial: str) -> dict:
    """The status file the driver wrote for ``trial`` (``units/<trial>.json``)."""
    return json.loads((sweep_dir / "units" / f"{trial}.json").read_text())


def finished_file(sweep_dir: Path, trial: str) -> bool:
    """The driver wrote the trial's status, or (ray) the trial wrote its own."""
    units = sweep_dir / "units"
    return (units / f"{trial}.json").is_file() or (units / f"{trial}.trial.json").is_file()


def check_aggregate_against_trials(sweep_dir: Path) -> None:
    """results.json's numbers, recomputed here from each finished trial's own metrics.json."""
    from scipy import stats  # here, not at the top: a toy unit's process imports this module

    table = json.loads((sweep_dir / "results.json").read_text())
    assert table["rows"]
    for row in table["rows"]:
        done = [t["id"] for t in row["trials"] if t["status"] == "done"]
        assert row["seeds_done"] == len(done)
        if not done:
            assert row["metrics"] == {}
            continue
        summaries = [json.loads((sweep_dir / "trials" / t / "metrics.json").read_text())
                     for t in done]
        for key, fetch in (("held_out/accuracy", lambda s: s["held_out"]["accuracy"]),
                           ("held_out/step_pearson", lambda s: s["held_out"]["step_pearson"]),
                           ("epochs", lambda s: s["epochs"])):
            values = np.array([fetch(s) for s in summaries], dtype=float)
            got = row["metrics"][key]
            assert got["n"] == len(values)
            assert math.isclose(got["mean"], values.mean(), rel_tol=1e-12)
            if len(values) > 1:
                sd = values.std(ddof=1)
                half = stats.t.ppf(0.975, len(values) - 1) * sd / math.sqrt(len(values))
                assert math.isclose(got["sd"], sd, rel_tol=1e-9, abs_tol=1e-12)
                assert math.isclose(got["half_width"], half, rel_tol=1e-9, abs_tol=1e-12)
                floor, ceiling = bounds_of(key) or (None, None)  # an accuracy's within [0, 1]
                low = max(values.mean() - half, -math.inf if floor is None else floor)
                high = min(values.mean() + half, math.inf if ceiling is None else ceiling)
                assert math.isclose(got["low"], low, rel_tol=1e-9, abs_tol=1e-12)
                assert math.isclose(got["high"], high, rel_tol=1e-9, abs_tol=1e-12)
    assert (sweep_dir / "results.md").read_text().startswith("# Sweep of `rlkit train-reward`")
    assert (sweep_dir / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def kill_driver_midway(sweep_dir: Path, argv: list[str], first: list[str], then: str,
                       limit: float = 200) -> None:
    """Start ``rlkit sweep`` in a subprocess; SIGKILL it once the trials ``first`` have finished
    and trial ``then`` has written its config; check no trial process of the sweep is left running.
    A local driver's temporary folder goes in the sweep's parent (a SIGKILL leaves it behind)."""
    env = {**os.environ, "WANDB_MODE": "offline", "PYTHONPATH": str(ROOT)}
    if "ray" not in argv:
        env["TMPDIR"] = str(sweep_dir.parent)
    driver = subprocess.Popen([sys.executable, "-m", "rlkit.cli", *argv], env=env, cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + limit
    try:
        while time.monotonic() < deadline:
            finished = all(finished_file(sweep_dir, t) for t in first)
            if finished and (sweep_dir / "trials" / then / "config.yaml").is_file():  # begun
                break
            assert driver.poll() is None, driver.stderr.read().decode() if driver.stderr else ""
            time.sleep(0.2)
        else:
            raise AssertionError(f"{first} did not finish within {limit} s")
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    # the trials die with their worker (the kernel's PDEATHSIG; on Ray once the raylet has
    # noticed the driver is gone and ended its job's workers, which takes a few seconds)
    deadline = time.monotonic() + 30
    while trial_processes(sweep_dir) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert trial_processes(sweep_dir) == [], "a trial outlived its driver"
    assert not finished_file(sweep_dir, then), "trial finished before it died: too short to test resume"


def trial_processes(sweep_dir: Path) -> list[int]:
    """Processes whose command line names this sweep directory (the trials' rlkit commands)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(sweep_dir) in cmdline and "rlkit.cli train-reward" in cmdline:
            pids.append(int(proc.name))
    return pids


def toy_unit(unit: Unit, report: Callable[[dict[str, float]], None]) -> dict:
    """A unit that counts its runs in a file, records its pid and its start and end times, sleeps
    and fails when asked."""
    marker = Path(unit.payload["dir"]) / f"{unit.id}.runs"
    marker.write_text(marker.read_text() + "x" if marker.exists() else "x")
    start = time.time()
    time.sleep(unit.payload.get("sleep", 0.0))
    if unit.payload.get("fail"):
        raise RuntimeError(f"unit {unit.id} was told to fail")
    return {"value": unit.payload["value"] * 2, "pid": os.getpid(), "start": start, "end": time.time()}


def check_units_run_fail_and_resume(backend: Backend, scratch: Path) -> dict:
    """Units on ``backend``: results come back, a failure blocks its dependants (even one listed
    before its prerequisite), and a resumed run skips the finished units and reruns the others.
    Returns the first run's results."""
    units = [Unit("a", {"dir": str(scratch), "value": 1}),
             Unit("b", {"dir": str(scratch), "value": 2, "fail": True}),
             Unit("c", {"dir": str(scratch), "value": 3}, after=("a",)),
             Unit("e", {"dir": str(scratch), "value": 5}, after=("d",)),  # before its prerequisite
             Unit("d", {"dir": str(scratch), "value": 4}, after=("b",))]
    results = run_units(units, toy_unit, scratch / "root", backend)
    assert {k: r.status for k, r in results.items()} == {
        "a": "done", "b": "failed", "c": "done", "e": "failed", "d": "failed"}
    assert results["a"].result["value"] == 2 and results["c"].result["value"] == 6
    assert "told to fail" in (results["b"].error or "")
    assert "b did not finish" in (results["d"].error or "") and not (scratch / "d.runs").exists()
    assert "d did not finish" in (results["e"].error or "") and not (scratch / "e.runs").exists()
    # resume: the finished units are not run again; the failed one is (and its dependant)
    again = run_units(units, toy_unit, scratch / "root", backend, resume=True)
    assert again["a"].skipped and again["c"].skipped and again["a"].result["value"] == 2
    assert (scratch / "a.runs").read_text() == "x" and (scratch / "b.runs").read_text() == "xx"
    return results


def check_a_unit_starts_when_its_prerequisites_are_done(backend: Backend, scratch: Path) -> None:
    """On ``backend`` with room for two units: ``b`` needs only ``a`` and starts while the slow
    unit listed beside ``a`` still runs; ``c`` starts once both it needs are done."""
    units = [Unit("slow", {"dir": str(scratch), "value": 1, "sleep": 6.0}),
             Unit("a", {"dir": str(scratch), "value": 2}),
             Unit("b", {"dir": str(scratch), "value": 3}, after=("a",)),
             Unit("c", {"dir": str(scratch), "value": 4}, after=("b", "slow"))]
    results = run_units(units, toy_unit, scratch / "root", backend)
    assert {k: r.status for k, r in results.items()} == dict.fromkeys("slow a b c".split(), "done")
    started = {k: r.result["start"] for k, r in results.items()}
    assert started["a"] <= results["b"].result["start"] < results["slow"].result["end"]
    assert started["c"] >= max(results["b"].result["end"], results["slow"].result["end"])

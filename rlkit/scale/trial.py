"""One sweep trial: an ordinary ``rlkit COMMAND`` run directory, run in its own subprocess.

A subprocess keeps trials apart (no shared torch threads, globals or W&B runs) and can be killed
whole; it dies with the process that started it (Linux). While it runs, the lines its
``JsonlLogger`` appends to ``metrics.jsonl`` are passed to ``report`` (Tune's, on the ray
backend) so a scheduler can stop it early. When it ends, its summary is read back from its run
directory: ``summary.json`` if the command writes one, else ``metrics.json``, else the last JSON
object it printed; numbers in nested dicts are flattened to ``a/b`` keys.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rlkit.scale.unit_graph import Unit
from rlkit.scale.units import UnitError

POLL_S = 0.25
SUMMARY_FILES = ("summary.json", "metrics.json")
# commands that go on from their run directory; any other is rerun from scratch (--overwrite)
RESUMING = ("pref-rl", "m3hf", "apec", "demos")


def _die_with_parent() -> None:
    from rlkit.scale.local import die_with_parent

    die_with_parent()


def trial_argv(payload: Mapping[str, Any], rerun: bool = False) -> list[str]:
    """The ``rlkit`` command line of a trial (without the interpreter). ``rerun``: its run
    directory holds a killed attempt; one its command cannot go on from starts afresh."""
    argv = [payload["command"], *payload.get("overrides", []), "--run-dir", payload["run_dir"],
            "--logger", payload.get("logger", "jsonl,wandb"),
            "--torch-threads", str(payload.get("torch_threads", 1))]
    if payload.get("config"):
        argv += ["--config", payload["config"]]
    if rerun and not goes_on(payload):
        argv.append("--overwrite")
    return argv


def goes_on(payload: Mapping[str, Any]) -> bool:
    """Whether a trial's command resumes the attempt its run directory holds: one of
    ``RESUMING``, and for pref-rl only from a resume point (a run killed before its first query
    round, or one on the env's reward, ``reward=env``, has none: it is run afresh).

    Args:
        payload: the trial's (its ``command`` and ``run_dir``).

    Returns:
        True when the command goes on from the run directory.
    """
    if payload["command"] == "pref-rl":
        from rlkit.prefrl.resume import RESUME_DIR, exists

        return exists(Path(payload["run_dir"]) / RESUME_DIR)
    return payload["command"] in RESUMING


def run_trial(unit: Unit, report: Callable[[dict[str, float]], None]) -> dict[str, Any]:
    """Run ``rlkit COMMAND`` for one trial (payload: command, overrides, run_dir, config, logger,
    torch_threads, env); returns ``{"metrics": flat summary numbers, "run_dir": ...}``.

    Args:
        unit: the trial; its ``payload`` is described above.
        report: called with the latest metrics as the run logs them (for Tune's schedulers).

    Returns:
        ``{"metrics", "run_dir", "attempt", "logs"}``: ``attempt`` counts this trial's starts,
        ``logs`` is the folder of its stdout and stderr.

    Raises:
        UnitError: when the command exits with a non-zero code (its last stderr line is quoted).
    """
    payload = unit.payload
    run_dir = Path(payload["run_dir"])
    log_dir = Path(payload.get("log_dir") or run_dir.parent.parent / "logs" / unit.id)
    rerun = (run_dir / "config.yaml").is_file()  # an earlier attempt got as far as starting
    log_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "WANDB_MODE": os.environ.get("WANDB_MODE", "offline"),
           **payload.get("env", {})}
    env.setdefault("PYTHONUNBUFFERED", "1")
    metrics_file = run_dir / "metrics.jsonl"
    fresh = not rerun or not goes_on(payload)  # (--overwrite empties the dir)
    offset = 0 if fresh or not metrics_file.exists() else metrics_file.stat().st_size
    attempt = _next_attempt(log_dir)
    stdout_path, stderr_path = log_dir / f"stdout.{attempt}.log", log_dir / f"stderr.{attempt}.log"
    latest: dict[str, float] = {}
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "rlkit.cli", *trial_argv(payload, rerun)], stdout=out, stderr=err,
            env=env, cwd=payload.get("cwd") or None, preexec_fn=_die_with_parent,
        )
        try:
            while True:
                try:  # returns as soon as the command exits, not at the next poll
                    code: int | None = process.wait(timeout=POLL_S)
                except subprocess.TimeoutExpired:
                    code = None
                offset = _forward(metrics_file, offset, latest, report)
                if code is not None:
                    break
        finally:
            if process.poll() is None:  # stopped early (a scheduler) or interrupted
                process.kill()
                process.wait()
    if code != 0:
        raise UnitError(f"rlkit {payload['command']} exited with code {code}: "
                        f"{_last_line(stderr_path)} (log: {stderr_path})")
    summary = read_summary(run_dir, stdout_path)
    return {"metrics": flatten(summary), "run_dir": str(run_dir), "attempt": attempt,
            "logs": str(log_dir)}


def _next_attempt(log_dir: Path) -> int:
    return 1 + sum(1 for _ in log_dir.glob("stdout.*.log"))


def _forward(path: Path, offset: int, latest: dict[str, float],
             report: Callable[[dict[str, float]], None]) -> int:
    """Report each complete new line of ``metrics.jsonl`` (with the latest value of every metric
    seen so far, so a scheduler always finds its metric); returns the new offset."""
    if not path.exists():
        return offset
    offset = min(offset, path.stat().st_size)  # a resumed run cut its file back: go on from there
    with open(path, "rb") as handle:
        handle.seek(offset)
        data = handle.read()
    end = data.rfind(b"\n")
    if end < 0:
        return offset
    for line in data[: end + 1].splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        numbers = {k: float(v) for k, v in record.items()
                   if k not in ("wall_time",) and _is_number(v)}
        latest.update(numbers)
        if numbers:
            report(dict(latest))
    return offset + end + 1


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _last_line(path: Path) -> str:
    lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1] if lines else "(no error output)"


def read_summary(run_dir: Path, stdout_path: Path | None = None) -> dict[str, Any]:
    """What a finished run reports: its ``summary.json``/``metrics.json`` or last printed JSON.

    Args:
        run_dir: the run's folder.
        stdout_path: the run's captured standard output, searched from the end for a JSON object.

    Returns:
        The summary, or an empty dict when none is found.
    """
    for name in SUMMARY_FILES:
        path = run_dir / name
        if path.is_file():
            data = json.loads(path.read_text())
            if isinstance(data, dict):
                return data
    if stdout_path is not None and stdout_path.is_file():
        for line in reversed(stdout_path.read_text(errors="replace").splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    data = json.loads(line)
                except ValueError:
                    continue
                if isinstance(data, dict):
                    return data
    return {}


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Finite numbers of a nested dict as ``{"a/b": x}`` (lists, strings and bools left out)."""
    out: dict[str, float] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}/"))
        elif _is_number(value):
            out[name] = float(value)
    return out

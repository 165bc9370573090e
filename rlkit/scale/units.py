"""Units of work and the one runner that executes them on a backend (``local`` or ``ray``).

A *unit* is one independent piece of an experiment or a sweep (a trial, a task x seed x arm cell),
named by a stable ``id`` and described by a JSON-able ``payload``. ``run_units(units, fn, root)``
calls ``fn(unit, report)`` once per unit, in its own process, on the chosen backend:

- ``local``: a process pool on this machine (one fresh process per unit), no Ray needed;
- ``ray``: Ray Tune trials (local Ray, or a cluster through ``address``), with ASHA early stopping
  on a metric when ``metric`` and ``mode`` are given.

``fn`` must be a module-level function (it is pickled to the worker). It returns a JSON-able dict;
``report(metrics)`` passes interim numbers to Tune while it runs (a no-op on the local backend).
A unit that raises is recorded as failed with its error and the others go on. Units may name
others in ``after``: locally a unit starts as soon as they are done, on Ray in stages (every
unit of one stage after all of the one before); a unit whose prerequisite failed is failed without
running.

Every finished unit leaves ``root/units/<id>.json`` (status, result, error, seconds), written
atomically; with ``resume=True`` units whose file says ``done`` (or ``stopped`` by the scheduler)
are skipped and the others run again (a command that resumes from its run directory picks up
where it was killed).
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rich.console import Console

from rlkit.errors import ConfigError, InvalidDataError
from rlkit.logging.progress import ProgressDisplay

Status = Literal["done", "failed", "stopped"]
UnitFn = Callable[["Unit", Callable[[dict[str, float]], None]], dict[str, Any]]
FINISHED: tuple[str, ...] = ("done", "stopped")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.=+-]*$")


@dataclass(frozen=True)
class Unit:
    """One piece of work: ``id`` (a file name), ``payload`` for ``fn``, ``after`` (ids to wait for)."""

    id: str
    payload: dict[str, Any] = field(default_factory=dict)
    after: tuple[str, ...] = ()


@dataclass
class UnitResult:
    id: str
    status: Status
    result: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
    skipped: bool = False  # finished in an earlier run (resume)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "result": self.result,
                "error": self.error, "seconds": round(self.seconds, 3)}


@dataclass(frozen=True)
class Backend:
    """Where units run: ``local`` (``workers`` processes) or ``ray`` (Tune on ``address``)."""

    name: Literal["local", "ray"] = "local"
    workers: int | None = None  # local: processes at once (default: the CPU count)
    address: str | None = None  # ray: an existing cluster ("auto", "ray://host:10001"); None: local
    resources: Mapping[str, float] = field(default_factory=lambda: {"cpu": 1, "gpu": 0})
    storage: str | None = None  # ray: Tune's storage (a shared dir or a URI); default root/tune
    num_cpus: int | None = None  # ray without address: the CPUs the local Ray may use
    metric: str | None = None  # ray: ASHA early stopping on this reported metric ...
    mode: Literal["max", "min"] | None = None  # ... maximised or minimised

    def __post_init__(self) -> None:
        if self.name not in ("local", "ray"):
            raise ConfigError(f"backend must be 'local' or 'ray', got {self.name!r}")
        if (self.metric is None) != (self.mode is None):
            raise ConfigError("early stopping needs both --metric and --mode (max or min), got "
                              f"metric={self.metric!r} mode={self.mode!r}")
        if self.mode not in (None, "max", "min"):
            raise ConfigError(f"mode must be 'max' or 'min', got {self.mode!r}")
        if self.metric is not None and self.name != "ray":
            raise ConfigError("early stopping (--metric/--mode) needs --backend ray: the local "
                              "backend runs every unit to the end")
        if self.workers is not None and self.workers < 1:
            raise ConfigError(f"workers must be >= 1, got {self.workers}")
        for key, value in self.resources.items():
            if key not in ("cpu", "gpu") or value < 0:
                raise ConfigError(f"resources take cpu=N,gpu=N (>= 0), got {key}={value}")


def stages(units: Sequence[Unit]) -> list[list[Unit]]:
    """The units in stages: each after every stage holding one of its prerequisites.

    Args:
        units: the units; ids unique, each ``after`` naming other units.

    Returns:
        Stage lists in run order; within a stage, the units' given order.

    Raises:
        InvalidDataError: on an id that is not a plain file name, a repeated id, an unknown
            prerequisite or a cycle.
    """
    by_id: dict[str, Unit] = {}
    for unit in units:
        if not _ID.match(unit.id):
            raise InvalidDataError(f"unit id {unit.id!r} must be a plain file name "
                                   "(letters, digits, _ . = + -)")
        if unit.id in by_id:
            raise InvalidDataError(f"unit id {unit.id!r} appears twice")
        by_id[unit.id] = unit
    level: dict[str, int] = {}

    def depth(uid: str, seen: tuple[str, ...]) -> int:
        if uid in seen:
            raise InvalidDataError(f"units depend on each other in a cycle: {' -> '.join(seen + (uid,))}")
        if uid not in level:
            unit = by_id[uid]
            for dep in unit.after:
                if dep not in by_id:
                    raise InvalidDataError(f"unit {uid!r} runs after {dep!r}, which is not a unit")
            level[uid] = 1 + max((depth(dep, seen + (uid,)) for dep in unit.after), default=-1)
        return level[uid]

    for unit in units:
        depth(unit.id, ())
    out: list[list[Unit]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for unit in units:
        out[level[unit.id]].append(unit)
    return out


def status_path(root: Path, unit_id: str, by_trial: bool = False) -> Path:
    """``units/<id>.json``, written by the driver; ``units/<id>.trial.json`` by a Ray trial itself
    (so a unit finished while its driver died is known; the driver's file wins over it)."""
    return Path(root) / "units" / (f"{unit_id}.trial.json" if by_trial else f"{unit_id}.json")


def read_status(root: Path, unit_id: str) -> UnitResult | None:
    path = status_path(root, unit_id)
    if not path.is_file():
        path = status_path(root, unit_id, by_trial=True)
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    return UnitResult(unit_id, data["status"], data.get("result") or {}, data.get("error"),
                      float(data.get("seconds", 0.0)))


def write_status(root: Path, result: UnitResult, by_trial: bool = False) -> None:
    from rlkit.persistence import atomic_write_json

    atomic_write_json(status_path(root, result.id, by_trial), result.to_json())


def execute(fn: UnitFn, unit: Unit, report: Callable[[dict[str, float]], None]) -> UnitResult:
    """``fn(unit, report)`` with its error caught: a failed unit is a result, not a crash."""
    start = time.perf_counter()
    try:
        result = fn(unit, report)
    except BaseException as error:  # noqa: BLE001 - a unit's failure is data; KeyboardInterrupt too
        if isinstance(error, KeyboardInterrupt):
            raise
        message = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        if not isinstance(error, UnitError):
            message += "\n" + "".join(traceback.format_exception(error)[-3:]).rstrip()
        return UnitResult(unit.id, "failed", {}, message, time.perf_counter() - start)
    if not isinstance(result, dict):
        return UnitResult(unit.id, "failed", {}, f"unit function returned {type(result).__name__}, "
                          "not a dict", time.perf_counter() - start)
    return UnitResult(unit.id, "done", result, None, time.perf_counter() - start)


class UnitError(RuntimeError):
    """A unit failed in a way its function already described (no traceback needed)."""


def run_units(
    units: Sequence[Unit],
    fn: UnitFn,
    root: str | os.PathLike[str],
    backend: Backend | None = None,
    resume: bool = False,
    name: str | None = None,
    on_result: Callable[[UnitResult], None] | None = None,
    progress: ProgressDisplay | None = None,
) -> dict[str, UnitResult]:
    """Run every unit on ``backend``; returns each unit's result by id. Locally a unit starts as
    soon as its prerequisites are done (no worker waits for a whole stage); on Ray stage by stage.

    ``root`` holds the status files (on a cluster: a path every node sees). ``on_result`` is called
    in the driver as each unit's result is known. ``progress`` shows the units done with an ETA
    (default: a display on stderr, live on a terminal, plain lines otherwise); units finished in
    an earlier run count as done from the start, not as speed.

    Args:
        units: the units; see ``stages``.
        fn: runs one unit: ``fn(unit, report) -> result``; raising fails the unit.
        root: the folder of the status files.
        backend: where units run; local processes when ``None``.
        resume: skip units ``root`` records as finished; run the others again.
        name: the progress bar's and Ray experiment's name; ``root``'s name when ``None``.
        on_result: see above.
        progress: see above.

    Returns:
        Every unit's result by id: ``"done"``, ``"stopped"`` (by a scheduler) or ``"failed"``
        (with its error; a unit whose prerequisite did not finish fails without running).

    Raises:
        InvalidDataError: when the units' ids or prerequisites are malformed (see ``stages``).
    """
    if not units:
        return {}
    backend = backend or Backend()
    root = Path(root).absolute()
    root.mkdir(parents=True, exist_ok=True)
    results: dict[str, UnitResult] = {}
    runner: Any = None
    display = progress or ProgressDisplay(Console(stderr=True))
    earlier = sum(1 for unit in units if resume and (status := read_status(root, unit.id)) is not None
                  and status.status in FINISHED)
    bar = display.add(f"{name or root.name} units", len(units), completed=earlier)
    order = stages(units)  # checks ids and prerequisites before anything runs
    # The local backend starts each unit as soon as its prerequisites are done (in the given
    # order among those ready); Ray runs one Tune experiment per stage.
    batches = [list(units)] if backend.name == "local" else order
    previous_handler = _exit_on_sigterm()
    try:
        for number, batch in enumerate(batches):
            todo: list[Unit] = []
            for unit in batch:
                previous = read_status(root, unit.id) if resume else None
                blocked = [dep for dep in unit.after if dep in results and results[dep].status != "done"]
                if previous is not None and previous.status in FINISHED:
                    previous.skipped = True
                    results[unit.id] = previous
                    if not status_path(root, unit.id).is_file():  # known from the trial's own file
                        write_status(root, previous)
                elif blocked:
                    results[unit.id] = not_run(unit.id, blocked)
                    write_status(root, results[unit.id])
                else:
                    todo.append(unit)
                    continue
                if not results[unit.id].skipped:
                    bar.advance()
                if on_result is not None:
                    on_result(results[unit.id])
            if not todo:
                continue
            if runner is None:
                runner = _make_runner(backend, root, name or root.name)
            for result in runner.run(todo, fn, stage=number, settled=results):
                results[result.id] = result
                write_status(root, result)
                bar.advance()
                if on_result is not None:
                    on_result(result)
    finally:
        if runner is not None:
            runner.close()
        bar.finish()
        display.close()
        if previous_handler is not None:
            signal.signal(signal.SIGTERM, previous_handler)
    return {unit.id: results[unit.id] for unit in units}


def _exit_on_sigterm() -> Any:
    """In the main thread, make SIGTERM raise ``SystemExit(143)`` (Python's default ends the
    process at once, no ``finally`` run) so a terminated driver unwinds: the local backend stops
    its running units and removes its temporary folder. Returns the handler to restore, or
    ``None`` where none was changed (another thread, or a handler the caller installed)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return None

    def terminate(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    return signal.signal(signal.SIGTERM, terminate)


def not_run(unit_id: str, blocked: Sequence[str]) -> UnitResult:
    """The result of a unit not run because its prerequisites ``blocked`` did not finish."""
    return UnitResult(unit_id, "failed", error=f"not run: {', '.join(blocked)} did not finish")


def _make_runner(backend: Backend, root: Path, name: str) -> Any:
    if backend.name == "local":
        from rlkit.scale.local import LocalRunner

        return LocalRunner(backend)
    from rlkit.scale.ray_backend import RayRunner

    return RayRunner(backend, root, name)

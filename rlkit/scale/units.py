"""Units of work and the one scheduler that runs them on an executor (``local`` or ``ray``).

A *unit* (``rlkit.scale.unit_graph``) is one independent piece of an experiment or a sweep, named
by a stable ``id`` and described by a JSON-able ``payload``; it may name others it needs in
``after``. ``run_units(units, fn, root)`` calls ``fn(unit, report)`` once per unit, in a process
of its own. Which unit runs when is decided here, the same for both backends: a unit starts as
soon as every unit it needs is done and the executor has room (the first ready in the given order
when there is more than room); a unit whose prerequisite failed or was stopped is failed without
running; a unit that raises is failed with its error and the others go on. The executor only
starts the units it is handed and reports their ends:

- ``local`` (``rlkit.scale.local``): a fresh process per unit on this machine, ``workers`` at once;
- ``ray`` (``rlkit.scale.tune_executor``): a Ray Tune trial per unit (a local Ray, or a cluster
  through ``address``), as many at once as the cluster's CPUs and GPUs hold, with ASHA early
  stopping on a metric when ``metric`` and ``mode`` are given.

``fn`` must be a module-level function (it is pickled to the worker). It returns a JSON-able dict;
``report(metrics)`` passes interim numbers to Tune while it runs (a no-op on the local backend).

Every finished unit leaves ``root/units/<id>.json`` (status, result, error, seconds), written
atomically; with ``resume=True`` units whose file says ``done`` (or ``stopped`` by the scheduler)
are skipped and the others run again (a command that resumes from its run directory picks up
where it was killed).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from rich.console import Console

from rlkit.errors import ConfigError
from rlkit.logging.progress import ProgressDisplay
from rlkit.scale.unit_graph import Unit, check_units, with_prerequisites

Status = Literal["done", "failed", "stopped"]
UnitFn = Callable[["Unit", Callable[[dict[str, float]], None]], dict[str, Any]]
FINISHED: tuple[str, ...] = ("done", "stopped")


@dataclass
class UnitResult:
    """How a unit ended.

    Attributes:
        id: the unit's id.
        status: ``done``, ``failed`` or ``stopped`` (early, by the backend).
        result: what the unit function returned (a stopped unit: its last report).
        error: why it failed or was stopped; None when done.
        seconds: how long it ran.
        skipped: it finished in an earlier run and was not run again (a resume).
    """

    id: str
    status: Status
    result: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
    skipped: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "result": self.result,
                "error": self.error, "seconds": round(self.seconds, 3)}


@dataclass(frozen=True)
class Backend:
    """Where units run: ``local`` (``workers`` processes) or ``ray`` (Tune on ``address``).

    Attributes:
        name: ``local`` or ``ray``.
        workers: local: processes at once (default: the CPU count).
        address: ray: an existing cluster (``auto``, ``ray://host:10001``); None: a local Ray.
        resources: what each unit needs, ``cpu`` and ``gpu``.
        storage: ray: Tune's storage (a shared dir or a URI); default ``root/tune``.
        num_cpus: ray without ``address``: the CPUs the local Ray may use.
        metric: ray: ASHA early stopping on this reported metric.
        mode: ``max`` or ``min``: whether ``metric`` is maximised or minimised.
    """

    name: Literal["local", "ray"] = "local"
    workers: int | None = None
    address: str | None = None
    resources: Mapping[str, float] = field(default_factory=lambda: {"cpu": 1, "gpu": 0})
    storage: str | None = None
    num_cpus: int | None = None
    metric: str | None = None
    mode: Literal["max", "min"] | None = None

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


class Executor(Protocol):
    """Where units run. It starts the units it is handed and reports their ends; which unit
    starts when is ``run_units``'s to decide."""

    def has_room(self) -> bool:
        """Whether a unit started now would run at once (a free worker, room on the cluster)."""
        ...

    def start(self, unit: Unit) -> None:
        """Start ``fn(unit, report)`` in a process of its own; its end comes from ``wait``."""
        ...

    def wait(self) -> list[UnitResult]:
        """Block until a started unit ends; the results of those that ended (``[]`` when the
        executor only has more room to offer)."""
        ...

    def close(self) -> None:
        """End the units still running and release what the executor started."""
        ...




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
        return UnitResult(unit.id, "failed", {}, failure_message(error), time.perf_counter() - start)
    if not isinstance(result, dict):
        return UnitResult(unit.id, "failed", {}, f"unit function returned {type(result).__name__}, "
                          "not a dict", time.perf_counter() - start)
    return UnitResult(unit.id, "done", result, None, time.perf_counter() - start)


def failure_message(error: BaseException) -> str:
    """A failed unit's ``error``: ``Type: message`` and the traceback's last frames; a
    ``UnitError``'s line alone; a pydantic ``ValidationError`` (a payload's config that does not
    validate, one of an older layout) in one line as a ``ConfigError`` says it: each bad field's
    path in the model and what is wrong (``rlkit.config.describe_errors``).

    Args:
        error: what the unit raised.

    Returns:
        The message, its first line the error's own."""
    from pydantic import ValidationError

    from rlkit.config import describe_errors

    if isinstance(error, ValidationError):
        return f"ConfigError: {describe_errors(error.title, error)}"
    message = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    if not isinstance(error, UnitError):
        message += "\n" + "".join(traceback.format_exception(error)[-3:]).rstrip()
    return message


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
    only: Sequence[str] = (),
) -> dict[str, UnitResult]:
    """Run every unit on ``backend``, each as soon as its prerequisites are done and the
    executor has room; returns each unit's result by id.

    ``root`` holds the status files (on a cluster: a path every node sees). ``on_result`` is called
    in the driver as each unit's result is known. ``progress`` shows the units done with an ETA
    (default: a display on stderr, live on a terminal, plain lines otherwise); units finished in
    an earlier run count as done from the start, not as speed.

    Args:
        units: the units; see ``check_units``. Among the units ready at once, the first in this
            order starts first.
        fn: runs one unit: ``fn(unit, report) -> result``; raising fails the unit.
        root: the folder of the status files.
        backend: where units run; local processes when ``None``.
        resume: skip units ``root`` records as finished; run the others again.
        name: the progress bar's and Ray experiment's name; ``root``'s name when ``None``.
        on_result: see above.
        progress: see above.
        only: run just these units and the units they run after (see ``with_prerequisites``);
            every unit when empty.

    Returns:
        The result by id of every unit run (all unless ``only`` says otherwise): ``"done"``,
        ``"stopped"`` (by a scheduler) or ``"failed"`` (with its error; a unit whose prerequisite
        did not finish fails without running).

    Raises:
        InvalidDataError: when the units' ids or prerequisites are malformed (see ``check_units``).
        ConfigError: when ``only`` names a unit that is not one of them.
    """
    if not units:
        return {}
    check_units(units)  # before anything runs
    if only:
        units = with_prerequisites(units, only)
    backend = backend or Backend()
    root = Path(root).absolute()
    root.mkdir(parents=True, exist_ok=True)
    results: dict[str, UnitResult] = {}
    waiting: list[Unit] = []
    for unit in units:
        previous = read_status(root, unit.id) if resume else None
        if previous is not None and previous.status in FINISHED:
            previous.skipped = True
            results[unit.id] = previous
            if not status_path(root, unit.id).is_file():  # known from the trial's own file
                write_status(root, previous)
        else:
            waiting.append(unit)
    to_run = list(waiting)
    display = progress or ProgressDisplay(Console(stderr=True))
    bar = display.add(f"{name or root.name} units", len(units), completed=len(results))
    if on_result is not None:
        for result in list(results.values()):
            on_result(result)

    def settle(result: UnitResult) -> None:
        results[result.id] = result
        write_status(root, result)
        bar.advance()
        if on_result is not None:
            on_result(result)

    executor: Executor | None = None
    running: set[str] = set()

    def start_ready() -> None:
        """Fail the units a prerequisite blocks; start those ready while there is room."""
        nonlocal executor
        blocking = True
        while blocking:  # until no unit is newly blocked (one may block one before it)
            blocking = False
            for unit in list(waiting):
                blocked = [dep for dep in unit.after if dep in results and results[dep].status != "done"]
                if blocked:
                    waiting.remove(unit)
                    settle(not_run(unit.id, blocked))
                    blocking = True
                elif all(dep in results for dep in unit.after) and (
                        executor is None or not running or executor.has_room()):
                    executor = executor or make_executor(backend, fn, root, name or root.name, to_run)
                    waiting.remove(unit)
                    executor.start(unit)
                    running.add(unit.id)

    previous_handler = _exit_on_sigterm()
    try:
        start_ready()
        while running:
            assert executor is not None
            for result in executor.wait():
                running.discard(result.id)
                settle(result)
            start_ready()
    finally:
        if executor is not None:
            executor.close()
        bar.finish()
        display.close()
        if previous_handler is not None:
            signal.signal(signal.SIGTERM, previous_handler)
    return {unit.id: results[unit.id] for unit in units}


def _exit_on_sigterm() -> Any:
    """In the main thread, make SIGTERM raise ``SystemExit(143)`` (Python's default ends the
    process at once, no ``finally`` run) so a terminated driver unwinds: its executor ends the
    running units and removes its temporary folder. Returns the handler to restore, or ``None``
    where none was changed (another thread, or a handler the caller installed)."""
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


def make_executor(backend: Backend, fn: UnitFn, root: Path, name: str,
                  units: Sequence[Unit]) -> Executor:
    """The executor of ``backend`` for ``fn``.

    Args:
        backend: where the units run.
        fn: the unit function (module-level).
        root: the folder of the status files.
        name: the run's name (the Ray experiment's).
        units: every unit it may be handed.

    Returns:
        A ``LocalExecutor`` or, for ``ray``, a ``TuneExecutor`` (Ray connected).
    """
    if backend.name == "local":
        from rlkit.scale.local import LocalExecutor

        return LocalExecutor(backend, fn)
    from rlkit.scale.ray_backend import import_ray

    import_ray()  # a missing extra is named before Tune's module is imported
    from rlkit.scale.tune_executor import TuneExecutor

    return TuneExecutor(backend, fn, root, name, units)

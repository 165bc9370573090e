"""The local backend: one fresh Python process per unit on this machine, ``workers`` at a time,
each unit started as soon as its prerequisites are done.

Each unit runs as ``python -m rlkit.scale.worker`` (not a ``multiprocessing`` pool: a pool's
children re-import the caller's ``__main__``, which breaks scripts without a main guard and
``python -c``). The unit function is named by module and qualified name (a function in the
script being run is loaded from its file under another name, so its main block does not run);
the result comes back as a JSON file. A worker dies with the driver (Linux); a driver that stops
early (SIGTERM, an error, a caller that stops iterating) first ends its workers, so its temporary
folder goes too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from rlkit.errors import InvalidDataError, WrongTypeError
from rlkit.scale.units import Backend, Unit, UnitFn, UnitResult, not_run


def die_with_parent() -> None:
    """Linux: this process gets SIGKILL when the thread that started it ends (its driver dies),
    so a killed driver leaves no unit running and writing into a directory it will resume."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux
        pass


def function_ref(fn: UnitFn) -> dict[str, str]:
    """How a worker finds ``fn``: its module (or, for the script being run, its file) and name."""
    qualname = getattr(fn, "__qualname__", "")
    if not qualname or "<" in qualname:
        raise WrongTypeError(f"a unit function must be a module-level function, got {fn!r}")
    module = fn.__module__
    if module == "__main__":
        path = getattr(sys.modules["__main__"], "__file__", None)
        if path is None:
            raise WrongTypeError(f"{qualname} is defined in an interactive __main__; put it in a "
                                 "module so worker processes can import it")
        return {"path": str(Path(path).absolute()), "name": qualname}
    ref = {"module": module, "name": qualname}
    path = getattr(sys.modules.get(module), "__file__", None)
    if path is not None:  # the folder the module is imported from goes on the worker's path
        root = Path(path).absolute().parent
        for _ in range(module.count(".") + (Path(path).stem == "__init__")):
            root = root.parent
        ref["root"] = str(root)
    return ref


class LocalRunner:
    def __init__(self, backend: Backend) -> None:
        cpu = backend.resources.get("cpu", 1) or 1
        self.workers = backend.workers or max(1, int(len(os.sched_getaffinity(0)) // cpu))

    def run(self, units: Sequence[Unit], fn: UnitFn, stage: int = 0,
            settled: Mapping[str, UnitResult] | None = None) -> Iterator[UnitResult]:
        """Run ``units``, each as soon as its prerequisites are done (the first ready in the given
        order when a worker frees), and yield their results as they finish.

        Args:
            units: the units to run; a prerequisite is one of them or a unit in ``settled``.
            fn: the unit function (module-level).
            stage: unused here (the Ray backend names its experiments by it).
            settled: results known before this call (units finished in an earlier run); read as
                the run goes, so the driver's own dict can be passed.

        Returns:
            An iterator of the results; a unit whose prerequisite did not finish is failed
            without running (``units.not_run``).
        """
        ref = function_ref(fn)
        known: dict[str, UnitResult] = {}
        waiting = list(units)

        def result_of(uid: str) -> UnitResult | None:
            return known.get(uid) or (settled or {}).get(uid)

        # on leaving, in reverse order: the running workers are ended (when the driver stops
        # early: SIGTERM, an error, a caller that stops iterating), the pool's threads return,
        # then the temporary folder goes
        with tempfile.TemporaryDirectory(prefix="rlkit-units-") as tmp, \
                ThreadPoolExecutor(max_workers=max(1, min(self.workers, len(units)))) as pool, \
                _Processes() as units_running:
            running: dict[Future[UnitResult], Unit] = {}
            while waiting or running:
                settling = True
                while settling:  # until no unit is newly blocked (one may block one before it)
                    settling = False
                    for unit in list(waiting):
                        deps = [result_of(dep) for dep in unit.after]
                        blocked = [dep for dep, r in zip(unit.after, deps, strict=True)
                                   if r is not None and r.status != "done"]
                        if blocked:
                            waiting.remove(unit)
                            known[unit.id] = not_run(unit.id, blocked)
                            settling = True
                            yield known[unit.id]
                        elif all(r is not None for r in deps) and len(running) < self.workers:
                            waiting.remove(unit)
                            future = pool.submit(_run_one, ref, unit, Path(tmp), units_running)
                            running[future] = unit
                if not running:
                    if waiting:  # a prerequisite that is neither run here nor settled
                        raise InvalidDataError(f"units {[u.id for u in waiting]} wait on units "
                                               "that are not given")
                    break
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    del running[future]
                    result = future.result()
                    known[result.id] = result
                    yield result

    def close(self) -> None:
        return None


_lock = threading.Lock()


class _Processes:
    """The worker processes of one ``run``; leaving its ``with`` block ends those still running
    (a driver that stops early) and starts no more."""

    def __init__(self) -> None:
        self.live: set[subprocess.Popen[bytes]] = set()
        self.stopping = False

    def start(self, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes] | None:
        """Start a worker, or return ``None`` once the ``with`` block was left."""
        with _lock:  # preexec_fn is safe here: nothing else forks while it runs
            if self.stopping:
                return None
            process = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE,
                                       preexec_fn=die_with_parent)
            self.live.add(process)
            return process

    def finished(self, process: subprocess.Popen[bytes]) -> None:
        with _lock:
            self.live.discard(process)

    def __enter__(self) -> _Processes:
        return self

    def __exit__(self, *_exc: object) -> None:
        """SIGTERM every running worker; start no more."""
        with _lock:
            self.stopping = True
            for process in self.live:
                process.terminate()


def _run_one(ref: dict[str, str], unit: Unit, tmp: Path, processes: _Processes) -> UnitResult:
    job = tmp / f"{unit.id}.json"
    out = tmp / f"{unit.id}.result.json"
    job.write_text(json.dumps({"fn": ref, "unit": {"id": unit.id, "payload": unit.payload,
                                                    "after": list(unit.after)}}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [ref.get("root", ""), os.getcwd(), os.environ.get("PYTHONPATH", "")]))}
    process = processes.start([sys.executable, "-m", "rlkit.scale.worker", str(job), str(out)], env)
    if process is None:
        return UnitResult(unit.id, "failed", error="not run: the driver was stopping")
    try:
        _, err = process.communicate()
    finally:
        processes.finished(process)
    if out.is_file():
        data: dict[str, Any] = json.loads(out.read_text())
        return UnitResult(unit.id, data["status"], data.get("result") or {}, data.get("error"),
                          float(data.get("seconds", 0.0)))
    tail = err.decode(errors="replace").strip().splitlines()[-5:]
    return UnitResult(unit.id, "failed", error=f"worker process exited with code "
                      f"{process.returncode} before reporting: {' / '.join(tail)}")

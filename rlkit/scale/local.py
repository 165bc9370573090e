"""The local backend's executor: one fresh Python process per unit on this machine, ``workers``
at a time (which unit starts when is ``rlkit.scale.units.run_units``'s).

Each unit runs as ``python -m rlkit.scale.worker`` (not a ``multiprocessing`` pool: a pool's
children re-import the caller's ``__main__``, which breaks scripts without a main guard and
``python -c``). The unit function is named by module and qualified name (a function in the
script being run is loaded from its file under another name, so its main block does not run);
the result comes back as a JSON file. A worker dies with the driver (Linux); a driver that stops
early (SIGTERM, an error) first ends its workers, so its temporary folder goes too.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from rlkit.errors import WrongTypeError
from rlkit.scale.unit_graph import Unit
from rlkit.scale.units import Backend, UnitFn, UnitResult


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


class LocalExecutor:
    """The ``Executor`` of the local backend: a fresh worker process per unit, ``workers`` at once
    (default: the CPUs this process may use / the ``cpu`` each unit asks for).

    Closing it ends the workers still running (a driver that stops early: SIGTERM, an error),
    lets the pool's threads return, then removes the temporary folder of the jobs and results.
    """

    def __init__(self, backend: Backend, fn: UnitFn) -> None:
        cpu = backend.resources.get("cpu", 1) or 1
        self.workers = backend.workers or max(1, int(len(os.sched_getaffinity(0)) // cpu))
        self.ref = function_ref(fn)
        self.running: set[Future[UnitResult]] = set()
        self.stack = contextlib.ExitStack()  # left in reverse: workers, the pool's threads, the folder
        self.tmp = Path(self.stack.enter_context(tempfile.TemporaryDirectory(prefix="rlkit-units-")))
        self.pool = self.stack.enter_context(ThreadPoolExecutor(max_workers=self.workers))
        self.processes = self.stack.enter_context(_Processes())

    def has_room(self) -> bool:
        return len(self.running) < self.workers

    def start(self, unit: Unit) -> None:
        self.running.add(self.pool.submit(_run_one, self.ref, unit, self.tmp, self.processes))

    def wait(self) -> list[UnitResult]:
        done, _ = wait(self.running, return_when=FIRST_COMPLETED)
        self.running -= done
        return [future.result() for future in done]

    def close(self) -> None:
        self.stack.close()


_lock = threading.Lock()


class _Processes:
    """The worker processes of one executor; leaving its ``with`` block ends those still running
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

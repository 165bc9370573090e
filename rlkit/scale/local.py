"""The local backend: one fresh Python process per unit on this machine, ``workers`` at a time.

Each unit runs as ``python -m rlkit.scale.worker`` (not a ``multiprocessing`` pool: a pool's
children re-import the caller's ``__main__``, which breaks scripts without a main guard and
``python -c``). The unit function is named by module and qualified name (a function in the
script being run is loaded from its file under another name, so its main block does not run);
the result comes back as a JSON file. A worker dies with the driver (Linux).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from rlkit.errors import WrongTypeError
from rlkit.scale.units import Backend, Unit, UnitFn, UnitResult


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

    def run(self, units: Sequence[Unit], fn: UnitFn, stage: int = 0) -> Iterator[UnitResult]:
        ref = function_ref(fn)
        with tempfile.TemporaryDirectory(prefix="rlkit-units-") as tmp, \
                ThreadPoolExecutor(max_workers=min(self.workers, len(units))) as pool:
            futures: dict[Future[UnitResult], Unit] = {
                pool.submit(_run_one, ref, unit, Path(tmp)): unit for unit in units}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()

    def close(self) -> None:
        return None


_lock = threading.Lock()


def _run_one(ref: dict[str, str], unit: Unit, tmp: Path) -> UnitResult:
    job = tmp / f"{unit.id}.json"
    out = tmp / f"{unit.id}.result.json"
    job.write_text(json.dumps({"fn": ref, "unit": {"id": unit.id, "payload": unit.payload,
                                                    "after": list(unit.after)}}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [ref.get("root", ""), os.getcwd(), os.environ.get("PYTHONPATH", "")]))}
    with _lock:  # preexec_fn is safe here: nothing else forks while it runs
        process = subprocess.Popen([sys.executable, "-m", "rlkit.scale.worker", str(job), str(out)],
                                   env=env, stderr=subprocess.PIPE, preexec_fn=die_with_parent)
    _, err = process.communicate()
    if out.is_file():
        data: dict[str, Any] = json.loads(out.read_text())
        return UnitResult(unit.id, data["status"], data.get("result") or {}, data.get("error"),
                          float(data.get("seconds", 0.0)))
    tail = err.decode(errors="replace").strip().splitlines()[-5:]
    return UnitResult(unit.id, "failed", error=f"worker process exited with code "
                      f"{process.returncode} before reporting: {' / '.join(tail)}")

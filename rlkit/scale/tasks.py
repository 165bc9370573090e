"""Task maps: many small independent tasks of one run (APEC's per-checkpoint rollouts) on the
backend the run was given, as ``rlkit.types.TaskMap``s that the layers below take as an argument.

- ``sequential_map`` (``rlkit.apec.rollouts``): every task in this process, the default;
- ``ProcessPoolMap``: a pool of fresh processes on this machine (``--backend local --workers N``);
- ``RayTaskMap``: one Ray task per item (``--backend ray``), on a local Ray or the cluster at
  ``--address``; each task asks for the backend's per-unit ``resources``. Inside a Ray Tune trial
  (an experiment unit on the ray backend) it uses the trial's connection and runs the tasks in
  the trial's own reservation, as many at once as the unit has CPUs (``--resources cpu=N``).

The tasks' function must be top-level and their items must pickle; results come back in the
items' order, so a map changes where the tasks run, never what they return.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from types import TracebackType
from typing import Any

from rlkit.errors import ConfigError
from rlkit.scale.ray_backend import import_ray, in_tune_trial, init_ray
from rlkit.scale.units import Backend
from rlkit.types import TaskMap


class ProcessPoolMap:
    """A ``TaskMap`` over ``workers`` fresh (spawned) processes on this machine."""

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ConfigError(f"workers must be >= 1, got {workers}")
        self.workers = workers

    def __call__(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        if not items:
            return []
        context = multiprocessing.get_context("spawn")  # no forked torch or env state
        with ProcessPoolExecutor(min(self.workers, len(items)), mp_context=context) as pool:
            return list(pool.map(fn, items))


class RayTaskMap:
    """A ``TaskMap`` of Ray tasks on ``backend`` (``name`` ``"ray"``); connects on first use and,
    if it started the connection, ends it on ``close()``."""

    def __init__(self, backend: Backend) -> None:
        if backend.name != "ray":
            raise ConfigError(f"RayTaskMap needs the ray backend, got {backend.name!r}")
        self.backend = backend
        self.started = False
        self.ray: Any = None

    def __call__(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        if not items:
            return []
        if self.ray is None:
            self.ray = import_ray()
        self.started |= init_ray(self.ray, self.backend)
        resources = self.backend.resources
        cpu, gpu = float(resources.get("cpu", 1)), float(resources.get("gpu", 0))
        if in_tune_trial():
            # The trial's placement group captures its tasks and holds only the trial's own
            # bundle, which the trial's actor keeps while it waits: tasks asking for CPUs would
            # wait for ever on a full cluster (seen: two 1-CPU trials on a 2-CPU Ray). So they run
            # in the trial's reservation, as many at once as it has CPUs.
            remote = self.ray.remote(num_cpus=0, num_gpus=0, max_retries=0)(fn)
            return _bounded(self.ray, remote, items, max(1, int(cpu)))
        remote = self.ray.remote(num_cpus=cpu, num_gpus=gpu, max_retries=0)(fn)
        return list(self.ray.get([remote.remote(item) for item in items]))

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()
            self.started = False

    def __enter__(self) -> RayTaskMap:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()


def _bounded(ray: Any, remote: Any, items: Sequence[Any], slots: int) -> list[Any]:
    """``remote`` on every item, at most ``slots`` at once; results in the items' order."""
    results: list[Any] = [None] * len(items)
    waiting = list(enumerate(items))
    running: dict[Any, int] = {}
    while waiting or running:
        while waiting and len(running) < slots:
            k, item = waiting.pop(0)
            running[remote.remote(item)] = k
        done, _ = ray.wait(list(running), num_returns=1)
        for ref in done:
            results[running.pop(ref)] = ray.get(ref)
    return results


def task_map(backend: Backend | None) -> TaskMap:
    """The ``TaskMap`` of a backend: Ray tasks on ``ray``; on ``local`` a process pool when
    ``workers`` > 1, else this process (``sequential_map``).

    Args:
        backend: the backend; ``None`` is this process.

    Returns:
        The map (a ``RayTaskMap`` should be closed when the run ends).
    """
    if backend is not None and backend.name == "ray":
        return RayTaskMap(backend)
    if backend is not None and backend.workers is not None and backend.workers > 1:
        return ProcessPoolMap(backend.workers)
    from rlkit.apec.rollouts import sequential_map  # loads SB3: only when asked

    return sequential_map


def close_map(mapping: TaskMap) -> None:
    """End what ``mapping`` started (a ``RayTaskMap``'s Ray connection); others need nothing.

    Args:
        mapping: a map of ``task_map``.
    """
    close = getattr(mapping, "close", None)
    if callable(close):
        close()

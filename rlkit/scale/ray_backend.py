"""The ray backend: each unit is a Ray Tune trial (Tune schedules; rlkit only lists the units).

Ray comes with the ``ray`` extra and is imported only here, when this backend is used. Without an
address a local Ray starts (``num_cpus`` of them); with one (``auto``, ``ray://head:10001``) the
units go to that cluster, and the status root must be a path every node sees: that is checked at
start by a task on every alive node, and the run refused by name when a node cannot see it.

What a trial costs beyond its own work is kept small: a local Ray runs its workers at the
caller's priority (Ray's default niceness, 15, let any other work on the machine starve the
trials); of Tune's own loggers only the JSON one stays (``result.json``, read by Tune's result
analysis), not its CSV and TensorBoard copies of every report; and a unit's interim metrics go to
Tune only when a scheduler reads them (``metric``): each report is a round trip through Tune's
driver, and a trial that logged 150 epochs made 150 of them.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from rlkit.errors import ConfigError, StateError
from rlkit.scale.units import Backend, Unit, UnitFn, UnitResult, execute, write_status

STATUS = "rlkit_status"  # the last report of a finished trial carries its result under these keys
RESULT = "rlkit_result"
ERROR = "rlkit_error"


def import_ray() -> Any:
    """``ray`` with Tune, or ``MissingExtraError`` naming the extra (pip install 'rlkit[ray]').

    Returns:
        The ``ray`` module.

    Raises:
        MissingExtraError: when Ray or Ray Tune is not installed.
    """
    from rlkit.extras import extra

    with extra("ray", "--backend ray (Ray Tune)"):
        import ray
        import ray.tune  # noqa: F401 - ray without [tune] lacks it
    return ray


def in_tune_trial() -> bool:
    """True inside a Ray Tune trial (where ``ray.tune.report`` reaches the scheduler).

    Returns:
        Whether this process runs a Tune trial; False also when Ray is not installed.
    """
    try:
        import warnings

        from ray.tune import get_context

        with warnings.catch_warnings():  # outside a trial Ray warns before it answers None
            warnings.simplefilter("ignore")
            return get_context().get_trial_id() is not None
    except Exception:  # noqa: BLE001 - no ray, or no session
        return False


def init_ray(ray: Any, backend: Backend) -> bool:
    """Connect to ``backend``'s Ray unless this process already is (a driver that started it, or a
    Tune trial): the cluster at ``backend.address``, else a local Ray of ``backend.num_cpus``.

    Args:
        ray: the ``ray`` module (``import_ray()``).
        backend: the ray backend's settings.

    Returns:
        True when this call started the connection (the caller shuts it down), else False.
    """
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                              "configure_logging": False}
    if backend.address is None and backend.num_cpus is not None:
        kwargs["num_cpus"] = backend.num_cpus
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    # a local Ray's raylet reads it at start: its workers (and the trials' commands) keep the
    # caller's priority instead of Ray's niceness 15; a cluster keeps what its nodes were started with
    with scoped_env({} if backend.address is not None else WORKER_PRIORITY):
        ray.init(address=backend.address, **kwargs)
    return True


WORKER_PRIORITY = {"RAY_worker_niceness": "0"}
QUIET_TUNE = {"TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1"}  # only the loggers given (JSON)


@contextlib.contextmanager
def scoped_env(values: Mapping[str, str]) -> Iterator[None]:
    """Environment variables set for the block (unless the caller set them), then restored.

    Args:
        values: the variables and their values.

    Yields:
        Nothing; the variables are set inside the block.
    """
    added = {key: value for key, value in values.items() if key not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


def _trainable(config: dict[str, Any], fn: UnitFn, units: dict[str, Unit], root: str,
               forward: bool) -> None:
    """One Tune trial: ``fn`` on the unit ``config`` names; interim metrics reach Tune only when
    ``forward`` (a scheduler reads them), the unit's result always, in the last report."""
    from ray import tune

    unit = units[config["unit"]]
    last: dict[str, float] = {}

    def report(metrics: dict[str, float]) -> None:
        last.clear()
        last.update(metrics)
        if forward:
            tune.report(dict(metrics))

    result = execute(fn, unit, report)
    # on shared storage, known even if the driver dies now; a file of its own, since a trial
    # ASHA stopped may still get here after the driver has written "stopped"
    write_status(Path(root), result, by_trial=True)
    tune.report({**last, STATUS: result.status, RESULT: json.dumps(result.result),
                 ERROR: result.error or ""})


class RayRunner:
    def __init__(self, backend: Backend, root: Path, name: str) -> None:
        self.ray = import_ray()
        self.backend = backend
        self.root = root
        self.name = name
        self.started = init_ray(self.ray, backend)
        alive = [n for n in self.ray.nodes() if n.get("Alive")]
        # one node that this process started or shares (local Ray): nothing to check
        self.nodes = (check_shared_storage(self.ray, root) if backend.address is not None
                      or len(alive) > 1 else [n.get("NodeManagerAddress", "?") for n in alive])

    def run(self, units: Sequence[Unit], fn: UnitFn, stage: int = 0,
            settled: Mapping[str, UnitResult] | None = None) -> Iterator[UnitResult]:
        """One Tune experiment over ``units`` (one stage: their prerequisites are ``settled``)."""
        from ray import tune
        from ray.tune.logger import JsonLoggerCallback

        backend = self.backend
        trainable = tune.with_resources(
            tune.with_parameters(_trainable, fn=fn, units={u.id: u for u in units},
                                 root=str(self.root), forward=backend.metric is not None),
            {"cpu": float(backend.resources.get("cpu", 1)),
             "gpu": float(backend.resources.get("gpu", 0))},
        )
        scheduler = None
        if backend.metric is not None:
            from ray.tune.schedulers import ASHAScheduler

            scheduler = ASHAScheduler(grace_period=1, reduction_factor=2)
        storage = backend.storage or str(self.root / "tune")
        tuner = tune.Tuner(
            trainable,
            param_space={"unit": tune.grid_search([u.id for u in units])},
            # reuse_actors saves a worker start per trial; not with ASHA: a trial it stops leaves
            # its actor to the next trial, whose command was seen to fail
            tune_config=tune.TuneConfig(metric=backend.metric, mode=backend.mode,
                                        scheduler=scheduler, num_samples=1,
                                        reuse_actors=scheduler is None),
            run_config=tune.RunConfig(
                name=f"{self.name}-stage{stage}-{time.strftime('%Y%m%d-%H%M%S')}",
                storage_path=storage if "://" in storage else str(Path(storage).absolute()),
                verbose=0, failure_config=tune.FailureConfig(max_failures=0),
                callbacks=[JsonLoggerCallback()]),
        )
        with scoped_env(QUIET_TUNE):  # read when fit() makes its callbacks
            grid = tuner.fit()
        seen = set()
        for index in range(len(grid)):
            entry = grid[index]
            if entry.config is None:
                raise StateError(f"a Tune result of stage {stage} holds no config")
            unit_id = entry.config["unit"]
            seen.add(unit_id)
            metrics = entry.metrics or {}
            if entry.error is not None:
                yield UnitResult(unit_id, "failed", error=f"trial error: {entry.error}")
            elif STATUS in metrics:
                error = metrics.get(ERROR) or None
                yield UnitResult(unit_id, metrics[STATUS], json.loads(metrics.get(RESULT) or "{}"), error,
                                 float(metrics.get("time_total_s", 0.0)))
            else:  # stopped by the scheduler (ASHA) before it finished
                numbers = {k: v for k, v in metrics.items() if isinstance(v, int | float)}
                yield UnitResult(unit_id, "stopped", {"last_report": numbers},
                                 "stopped early by ASHA", float(metrics.get("time_total_s", 0.0)))
        for unit in units:
            if unit.id not in seen:
                yield UnitResult(unit.id, "failed", error="Tune returned no result for it")

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()


def _look(path: str, token: str) -> tuple[str, bool]:
    import socket

    try:
        return socket.gethostname(), Path(path).read_text() == token
    except OSError:
        return socket.gethostname(), False


def check_shared_storage(ray: Any, root: Path) -> list[str]:
    """A task on every alive node reads a token written under ``root``; a node that cannot is
    named in a ``ConfigError``. Returns the nodes' addresses."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    token_path = root / f".storage-check-{uuid.uuid4().hex}"
    token = uuid.uuid4().hex
    token_path.write_text(token)
    try:
        look = ray.remote(num_cpus=0)(_look)
        refs = [look.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
            n["NodeID"], soft=False)).remote(str(token_path), token) for n in nodes]
        seen = ray.get(refs, timeout=120)
    finally:
        token_path.unlink(missing_ok=True)
    blind = [n.get("NodeManagerAddress", n["NodeID"]) for n, (_, ok) in zip(nodes, seen, strict=True)
             if not ok]
    if blind:
        raise ConfigError(
            f"{root} is not visible on node(s) {blind}: on a cluster the sweep directory "
            "(--run-dir, or --storage DIR) must be a path every node sees (NFS, a shared disk)")
    return [n.get("NodeManagerAddress", "?") for n in nodes]

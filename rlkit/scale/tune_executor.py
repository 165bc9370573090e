"""The ray backend's executor: each unit a Ray Tune trial, in one Tune experiment for the run.

``run_units`` hands a unit over when its prerequisites are done and the cluster has room for it
(the units that fit in its CPUs and GPUs now, at least one; looked at again as the run goes, so
nodes that join are used); a searcher feeds the handed-over units to Tune, which runs
``Tuner.fit`` in a thread of the driver, and a callback reports each trial's end. Imported only
once Ray is (``rlkit.scale.ray_backend.import_ray``).

What a trial costs beyond its own work is kept small: of Tune's own loggers only the JSON one
stays (``result.json``, read by Tune's result analysis), not its CSV and TensorBoard copies of
every report; a unit's interim metrics go to Tune only when a scheduler reads them (``metric``):
each report is a round trip through Tune's driver, and a trial that logged 150 epochs made 150
of them; and Tune's actors are reused between trials, except under ASHA (a trial it stops leaves
its actor to the next trial, whose command was seen to fail).
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlkit.errors import StateError
from rlkit.extras import extra

with extra("ray", "--backend ray (Ray Tune)"):
    from ray import tune
    from ray.tune import Callback, Stopper
    from ray.tune.logger import JsonLoggerCallback
    from ray.tune.search import Searcher

from rlkit.scale.ray_backend import check_shared_storage, import_ray, init_ray, scoped_env
from rlkit.scale.unit_graph import Unit
from rlkit.scale.units import Backend, UnitFn, UnitResult, execute, write_status

STATUS = "rlkit_status"  # the last report of a finished trial carries its result under these keys
RESULT = "rlkit_result"
ERROR = "rlkit_error"
QUIET_TUNE = {"TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1"}  # only the loggers given (JSON)
ROOM_POLL_S = 5.0  # how often a driver waiting on its trials looks for room a new node brings
CLOSE_TIMEOUT_S = 60.0  # how long closing waits for Tune to stop its trials


def _trainable(config: dict[str, Any], fn: UnitFn, units: dict[str, Unit], root: str,
               forward: bool) -> None:
    """One Tune trial: ``fn`` on the unit ``config`` names; interim metrics reach Tune only when
    ``forward`` (a scheduler reads them), the unit's result always, in the last report."""
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


def trial_result(unit_id: str, metrics: dict[str, Any]) -> UnitResult:
    """A trial's last report as its unit's result: the unit's own, or ``stopped`` (ASHA ended it
    before it finished) with the numbers it reported last."""
    if STATUS in metrics:
        return UnitResult(unit_id, metrics[STATUS], json.loads(metrics.get(RESULT) or "{}"),
                          metrics.get(ERROR) or None, float(metrics.get("time_total_s", 0.0)))
    numbers = {k: v for k, v in metrics.items() if isinstance(v, int | float)}
    return UnitResult(unit_id, "stopped", {"last_report": numbers}, "stopped early by ASHA",
                      float(metrics.get("time_total_s", 0.0)))


@dataclass
class _Channel:
    """What an executor shares with the searcher, the callback and the stopper it gives Tune."""

    ready: queue.SimpleQueue[str] = field(default_factory=queue.SimpleQueue)  # units handed over
    events: queue.SimpleQueue[tuple[str, Any]] = field(default_factory=queue.SimpleQueue)
    finished: threading.Event = field(default_factory=threading.Event)  # no more units
    stop: threading.Event = field(default_factory=threading.Event)  # stop the trials running


# Tune pickles its searcher, callbacks and stopper with the experiment (and copies them), which a
# queue does not survive: they hold their executor's token, and the driver's channels live here
_CHANNELS: dict[str, _Channel] = {}


class _Feed(Searcher):
    """Tune's searcher: the units handed over, in order; finished once the executor closes."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self.token = token

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        channel = _CHANNELS[self.token]
        try:
            return {"unit": channel.ready.get_nowait()}
        except queue.Empty:  # Tune asks again while it waits; FINISHED ends its wait at once
            return Searcher.FINISHED if channel.finished.is_set() else None  # type: ignore[return-value]

    def on_trial_complete(self, trial_id: str, result: dict[str, Any] | None = None,
                          error: bool = False) -> None:
        return None  # the callback reports the end, with the trial's error

    def save(self, checkpoint_path: str) -> None:
        return None  # a resumed run reads the status files, not Tune's state


class _Ends(Callback):
    """Tune's callback: each trial's end as its unit's result, onto the channel's events."""

    def __init__(self, token: str) -> None:
        self.token = token

    def on_trial_complete(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        result = trial_result(trial.config["unit"], trial.last_result or {})
        _CHANNELS[self.token].events.put(("end", result))

    def on_trial_error(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        error = trial.get_pickled_error() or trial.get_error()
        result = UnitResult(trial.config["unit"], "failed", error=f"trial error: {error}")
        _CHANNELS[self.token].events.put(("end", result))


class _Stop(Stopper):
    """Stops every trial once the channel says so (a driver that stops early)."""

    def __init__(self, token: str) -> None:
        self.token = token

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        return False

    def stop_all(self) -> bool:
        return _CHANNELS[self.token].stop.is_set()


class TuneExecutor:
    """The ``Executor`` of the ray backend (see the module's docstring).

    Args:
        backend: the ray backend's settings (``address``, ``num_cpus``, ``resources``,
            ``storage``, ``metric`` and ``mode``).
        fn: the unit function (module-level).
        root: the folder of the status files (on a cluster, checked to be seen by every node).
        name: the Tune experiment's name (with the time it starts).
        units: every unit it may be handed.
    """

    def __init__(self, backend: Backend, fn: UnitFn, root: Path, name: str,
                 units: Sequence[Unit]) -> None:
        self.ray = import_ray()
        self.backend = backend
        self.started = init_ray(self.ray, backend)
        alive = [n for n in self.ray.nodes() if n.get("Alive")]
        if backend.address is not None or len(alive) > 1:  # one local node sees what this one does
            check_shared_storage(self.ray, root)
        self.need = {"CPU": float(backend.resources.get("cpu", 1)),
                     "GPU": float(backend.resources.get("gpu", 0))}
        self.token = uuid.uuid4().hex
        self.channel = _CHANNELS[self.token] = _Channel()
        self.outstanding: set[str] = set()
        self.tuner = self._tuner(fn, root, name, units)
        self.thread: threading.Thread | None = None

    def _tuner(self, fn: UnitFn, root: Path, name: str, units: Sequence[Unit]) -> Any:
        backend = self.backend
        trainable = tune.with_resources(
            tune.with_parameters(_trainable, fn=fn, units={u.id: u for u in units},
                                 root=str(root), forward=backend.metric is not None),
            {"cpu": self.need["CPU"], "gpu": self.need["GPU"]},
        )
        scheduler = None
        if backend.metric is not None:
            from ray.tune.schedulers import ASHAScheduler

            scheduler = ASHAScheduler(grace_period=1, reduction_factor=2)
        storage = backend.storage or str(root / "tune")
        return tune.Tuner(
            trainable,
            tune_config=tune.TuneConfig(metric=backend.metric, mode=backend.mode,
                                        search_alg=_Feed(self.token), scheduler=scheduler,
                                        num_samples=len(units), reuse_actors=scheduler is None),
            run_config=tune.RunConfig(
                name=f"{name}-{time.strftime('%Y%m%d-%H%M%S')}",
                storage_path=storage if "://" in storage else str(Path(storage).absolute()),
                verbose=0, stop=_Stop(self.token), failure_config=tune.FailureConfig(max_failures=0),
                callbacks=[JsonLoggerCallback(), _Ends(self.token)]),
        )

    def _fit(self) -> None:
        error: BaseException | None = None
        try:
            with scoped_env(QUIET_TUNE):  # read when fit() makes its callbacks
                self.tuner.fit()
        except BaseException as raised:  # noqa: BLE001 - handed to the driver's thread
            error = raised
        self.channel.events.put(("ended", error))

    def has_room(self) -> bool:
        total = self.ray.cluster_resources()
        fits = [int(total.get(key, 0.0) // need) for key, need in self.need.items() if need > 0]
        return not fits or len(self.outstanding) < max(1, min(fits))

    def start(self, unit: Unit) -> None:
        self.outstanding.add(unit.id)
        self.channel.ready.put(unit.id)
        if self.thread is None:
            self.thread = threading.Thread(target=self._fit, name="rlkit-tune", daemon=True)
            self.thread.start()

    def wait(self) -> list[UnitResult]:
        try:
            events = [self.channel.events.get(timeout=ROOM_POLL_S)]
        except queue.Empty:
            return []
        while not self.channel.events.empty():
            events.append(self.channel.events.get())
        results = []
        for kind, value in events:
            if kind == "end":
                self.outstanding.discard(value.id)
                results.append(value)
            elif value is not None:
                raise StateError(f"Ray Tune stopped: {value}") from value
            else:  # fit() returned with units it never reported
                results += [UnitResult(uid, "failed", error="Tune returned no result for it")
                            for uid in sorted(self.outstanding)]
                self.outstanding.clear()
        return results

    def close(self) -> None:
        self.channel.finished.set()
        if self.outstanding:
            self.channel.stop.set()
        if self.thread is not None:
            self.thread.join(CLOSE_TIMEOUT_S)
        if self.thread is None or not self.thread.is_alive():  # else Tune still reads it
            _CHANNELS.pop(self.token)
        if self.started:
            self.ray.shutdown()

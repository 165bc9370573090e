"""Sweeps: a grid of ``key=value`` overrides x seeds of one ``rlkit`` command, one trial each.

The sweep directory holds ``sweep.json`` (what was asked), ``trials/<id>/`` (each trial an
ordinary run directory of the command), ``units/<id>.json`` (each trial's status) and, at the
end, ``results.md``, ``results.json`` and ``results.png`` (see ``rlkit.scale.aggregate``; the
table and plot show the spec's ``metrics``, or the command's default ones).
W&B runs share one group (the sweep's name) and take the command as their job type.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlkit.errors import ConfigError
from rlkit.scale.unit_graph import Unit
from rlkit.scale.units import Backend, UnitResult, run_units


def split_values(text: str) -> list[str]:
    """``a,b,[1,2]`` -> ``["a", "b", "[1,2]"]``: commas inside brackets or braces stay."""
    values, depth, current = [], 0, ""
    for char in text:
        if char in "[{(":
            depth += 1
        elif char in "]})":
            depth -= 1
        if char == "," and depth == 0:
            values.append(current)
            current = ""
        else:
            current += char
    values.append(current)
    return [v.strip() for v in values]


def parse_grid(items: Sequence[str]) -> dict[str, list[str]]:
    """``["trainer.lr=1e-3,3e-4", "model.hidden=[32],[64]"]`` -> ``{key: [values]}``.

    Args:
        items: ``--grid`` arguments, ``key=v1,v2,...``; commas inside brackets or braces stay.

    Returns:
        Each key's values, as strings in the order given.

    Raises:
        ConfigError: when an item is not ``key=values``, a key repeats, or a value is empty or
            repeated.
    """
    grid: dict[str, list[str]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not key or not values.strip():
            raise ConfigError(f"--grid takes key=v1,v2,... got {item!r}")
        if key in grid:
            raise ConfigError(f"--grid names {key!r} twice")
        parsed = split_values(values)
        if any(not v for v in parsed) or len(set(parsed)) != len(parsed):
            raise ConfigError(f"--grid {key}: empty or repeated values in {values!r}")
        grid[key] = parsed
    return grid


def parse_resources(text: str) -> dict[str, float]:
    """``cpu=1,gpu=0.5`` -> ``{"cpu": 1.0, "gpu": 0.5}``.

    Args:
        text: comma-separated ``cpu=N`` / ``gpu=N`` with N >= 0; empty gives the defaults.

    Returns:
        CPUs and GPUs per trial; 1 CPU and 0 GPUs unless given.

    Raises:
        ConfigError: on another key or a number that is missing or negative.
    """
    out = {"cpu": 1.0, "gpu": 0.0}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not sep or key not in ("cpu", "gpu") or number < 0:
            raise ConfigError(f"--resources takes cpu=N,gpu=N (N >= 0), got {item!r}")
        out[key] = number
    return out


@dataclass(frozen=True)
class SweepSpec:
    """What a sweep runs: a trial per grid point and seed; written to ``sweep.json`` (``to_json``)
    and compared on ``--resume``.

    Attributes:
        command: the ``rlkit`` command each trial runs (``pref-rl``, ``train-reward``, ...).
        grid: each swept config key's values, as strings (``parse_grid``); the grid points are
            their cartesian product.
        seeds: trials per grid point, >= 1: seeds ``0 .. seeds - 1``, set through ``seed_key``.
        overrides: ``key=value`` overrides of every trial, before its grid point and seed.
        config: the command's ``--config`` YAML, an absolute path (None: the command's defaults).
        seed_key: the config field a trial's seed sets; no key of ``grid``.
        logger: each trial's ``--logger`` backends, comma-separated (``rlkit sweep`` adds
            ``jsonl``: a trial's metrics reach the scheduler through its ``metrics.jsonl``).
        metrics: what the results table and plot show, names or ``fnmatch`` patterns
            (``rlkit.scale.aggregate.shown_metrics``; (): the command's default); not in
            ``sweep.json``, so a resumed sweep may show others.

    Raises:
        ConfigError: when ``seeds`` is below 1 or ``grid`` sets ``seed_key``.
    """

    command: str
    grid: dict[str, list[str]]
    seeds: int = 1
    overrides: tuple[str, ...] = ()
    config: str | None = None
    seed_key: str = "seed"
    logger: str = "jsonl,wandb"
    metrics: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.seeds < 1:
            raise ConfigError(f"--seeds must be >= 1, got {self.seeds}")
        if self.seed_key in self.grid:
            raise ConfigError(f"{self.seed_key!r} is set by --seeds; leave it out of --grid")

    def points(self) -> list[dict[str, str]]:
        """Every grid point (the cartesian product, in the order the keys were given)."""
        points: list[dict[str, str]] = [{}]
        for key, values in self.grid.items():
            points = [{**point, key: value} for point in points for value in values]
        return points

    def to_json(self) -> dict[str, Any]:
        """What ``sweep.json`` holds, compared on ``--resume``; not ``metrics``, which change no
        trial (a sweep resumed with others shows those)."""
        return {"command": self.command, "grid": self.grid, "seeds": self.seeds,
                "overrides": list(self.overrides), "config": self.config,
                "seed_key": self.seed_key, "logger": self.logger}


def trial_id(point_index: int, seed: int) -> str:
    return f"p{point_index:03d}-s{seed}"


def sweep_units(spec: SweepSpec, sweep_dir: Path, group: str, torch_threads: int = 1) -> list[Unit]:
    units = []
    for index, point in enumerate(spec.points()):
        for seed in range(spec.seeds):
            uid = trial_id(index, seed)
            overrides = [*spec.overrides, *(f"{k}={v}" for k, v in point.items()),
                         f"{spec.seed_key}={seed}"]
            units.append(Unit(uid, {
                "command": spec.command, "overrides": overrides, "point": point, "seed": seed,
                "run_dir": str(sweep_dir / "trials" / uid), "config": spec.config,
                "logger": spec.logger, "torch_threads": torch_threads, "cwd": os.getcwd(),
                "env": {"WANDB_RUN_GROUP": group},  # the trial's --group; its job type is its command
            }))
    return units


def default_sweep_dir(command: str) -> Path:
    from rlkit.runners.rundir import stamped_dir

    return stamped_dir(f"sweep-{command}")


def prepare_sweep_dir(spec: SweepSpec, sweep_dir: Path, resume: bool) -> None:
    """Write ``sweep.json``; on resume check it asks for the same sweep, else refuse a used dir.

    Args:
        spec: the sweep asked for now.
        sweep_dir: the sweep's folder.
        resume: finish the sweep in ``sweep_dir`` rather than start one.

    Raises:
        ConfigError: ``sweep_dir`` holds a sweep and ``resume`` is False; with ``resume``, it holds
            none, or one ``spec`` differs from in more than ``MAY_CHANGE["sweep"]`` allows
            (``rlkit.persistence.resume_config.refuse_changed_config``).
    """
    from rlkit.persistence.resume_config import refuse_changed_config

    path = sweep_dir / "sweep.json"
    if path.is_file():
        if not resume:
            raise ConfigError(f"{sweep_dir} already holds a sweep: pass --resume to finish it, "
                              "or choose another --run-dir")
        refuse_changed_config("sweep", json.loads(path.read_text()), spec.to_json(), where=sweep_dir)
        return
    if resume:
        raise ConfigError(f"--resume: {sweep_dir} holds no sweep (no sweep.json)")
    from rlkit.persistence import atomic_write_json

    sweep_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, spec.to_json())


def run_sweep(spec: SweepSpec, sweep_dir: str | os.PathLike[str] | None = None,
              backend: Backend | None = None, resume: bool = False,
              echo: Any = None) -> dict[str, Any]:
    """Run (or finish, with ``resume``) a sweep; returns the aggregate written beside it.

    Args:
        spec: what to run: the command, the grid, the seeds and the shared overrides.
        sweep_dir: the sweep's folder; a new ``runs/sweep-<command>-<time>`` when ``None``.
        backend: where trials run; local processes when ``None``.
        resume: finish the sweep already in ``sweep_dir`` (finished trials are skipped).
        echo: called with one line of text per finished trial, when given.

    Returns:
        The aggregate, as written to ``results.json``.

    Raises:
        ConfigError: when ``sweep_dir`` holds a sweep and ``resume`` is False, or with ``resume``
            holds none or a different one.
        MissingExtraError: for the Ray backend without Ray installed.
    """
    from rlkit.scale.aggregate import write_aggregate
    from rlkit.scale.trial import run_trial

    backend = backend or Backend()
    if backend.name == "ray":  # a missing extra is named before anything is written
        from rlkit.scale.ray_backend import import_ray

        import_ray()
    sweep_dir = Path(sweep_dir or default_sweep_dir(spec.command)).absolute()
    prepare_sweep_dir(spec, sweep_dir, resume)
    group = sweep_dir.name
    units = sweep_units(spec, sweep_dir, group, torch_threads=max(1, int(backend.resources.get("cpu", 1))))

    def on_result(result: UnitResult) -> None:
        if echo is not None:
            echo(_line(result))

    results = run_units(units, run_trial, sweep_dir, backend, resume=resume, name=group,
                        on_result=on_result)
    return write_aggregate(spec, units, results, sweep_dir)


def _line(result: UnitResult) -> str:
    if result.skipped:
        return f"{result.id}: {result.status} earlier (skipped)"
    if result.status == "failed":
        return f"{result.id}: FAILED: {(result.error or '').splitlines()[0]}"
    return f"{result.id}: {result.status} in {result.seconds:.1f} s"

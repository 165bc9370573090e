"""Runs beyond one process: sweeps of any ``rlkit`` command and experiment units, scheduled by
their dependencies onto a local process pool or Ray Tune (the ``ray`` extra), with early
stopping, resume and aggregates."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlkit._lazy import lazy_exports

if TYPE_CHECKING:
    from rlkit.scale.aggregate import aggregate, interval, write_aggregate
    from rlkit.scale.ray_backend import import_ray, in_tune_trial
    from rlkit.scale.report import TuneLogger
    from rlkit.scale.sweep import SweepSpec, parse_grid, parse_resources, run_sweep
    from rlkit.scale.trial import read_summary, run_trial
    from rlkit.scale.unit_graph import Unit
    from rlkit.scale.units import Backend, UnitError, UnitResult, run_units

__all__ = [
    "Backend",
    "SweepSpec",
    "TuneLogger",
    "Unit",
    "UnitError",
    "UnitResult",
    "aggregate",
    "import_ray",
    "in_tune_trial",
    "interval",
    "parse_grid",
    "parse_resources",
    "read_summary",
    "run_sweep",
    "run_trial",
    "run_units",
    "write_aggregate",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "rlkit.scale.aggregate": ["aggregate", "interval", "write_aggregate"],
    "rlkit.scale.ray_backend": ["import_ray", "in_tune_trial"],
    "rlkit.scale.report": ["TuneLogger"],
    "rlkit.scale.sweep": ["SweepSpec", "parse_grid", "parse_resources", "run_sweep"],
    "rlkit.scale.trial": ["read_summary", "run_trial"],
    "rlkit.scale.unit_graph": ["Unit"],
    "rlkit.scale.units": ["Backend", "UnitError", "UnitResult", "run_units"],
})

"""A sweep's results across seeds: per grid point and metric, the mean and its 95% t-interval.

The interval is ``mean +- t(0.975, n-1) * sd / sqrt(n)`` with the sample sd (ddof=1) over the
seeds that finished; with one seed there is no interval (null). Written to ``results.json``,
``results.md`` and ``results.png`` in the sweep directory; failed and stopped trials are listed
with their errors and left out of the numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rlkit.scale.units import Unit, UnitResult

MAX_PLOTTED = 12


def interval(values: Sequence[float], level: float = 0.95) -> dict[str, Any]:
    """``{"mean", "sd", "n", "half_width", "low", "high"}`` of ``values`` (sd with ddof=1).

    Args:
        values: one metric's value per finished seed.
        level: the interval's coverage.

    Returns:
        The statistics; ``mean`` is NaN with no values, and ``sd``, ``half_width``, ``low`` and
        ``high`` are ``None`` with fewer than two.
    """
    x = np.asarray(values, dtype=float)
    n = int(x.size)
    mean = float(x.mean()) if n else math.nan
    if n < 2:
        return {"mean": mean, "sd": None, "n": n, "half_width": None, "low": None, "high": None}
    from scipy.special import stdtrit  # Student's t quantile, without scipy.stats's 1.5-s import

    sd = float(x.std(ddof=1))
    half = float(stdtrit(n - 1, 0.5 + level / 2) * sd / math.sqrt(n))
    return {"mean": mean, "sd": sd, "n": n, "half_width": half, "low": mean - half, "high": mean + half}


def aggregate(units: Sequence[Unit], results: Mapping[str, UnitResult]) -> dict[str, Any]:
    """A sweep's table: per grid point, each metric's ``interval`` over the trials that finished.

    Args:
        units: the sweep's trials (payload ``point`` and ``seed``).
        results: every unit's result by id; a ``"done"`` result's ``metrics`` are counted.

    Returns:
        ``{"rows": one row per grid point, "problems": the trials not done, with their errors}``.
    """
    points: dict[str, dict[str, Any]] = {}
    problems = []
    for unit in units:
        point = unit.payload["point"]
        label = point_label(point)
        entry = points.setdefault(label, {"point": point, "trials": [], "values": {}})
        result = results[unit.id]
        entry["trials"].append({"id": unit.id, "seed": unit.payload["seed"], "status": result.status})
        if result.status != "done":
            problems.append({"id": unit.id, "point": point, "seed": unit.payload["seed"],
                             "status": result.status, "error": result.error})
            continue
        for key, value in result.result.get("metrics", {}).items():
            entry["values"].setdefault(key, []).append(value)
    rows = []
    for label, entry in points.items():
        done = sum(t["status"] == "done" for t in entry["trials"])
        rows.append({"label": label, "point": entry["point"], "seeds_done": done,
                     "seeds": len(entry["trials"]), "trials": entry["trials"],
                     "metrics": {k: interval(v) for k, v in sorted(entry["values"].items())}})
    return {"rows": rows, "problems": problems}


def point_label(point: Mapping[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in point.items()) or "(defaults)"


def write_aggregate(spec: Any, units: Sequence[Unit], results: Mapping[str, UnitResult],
                    sweep_dir: Path) -> dict[str, Any]:
    """Aggregate a sweep and write ``results.json``, ``results.md`` and ``results.png`` into its folder.

    Args:
        spec: the sweep's ``SweepSpec`` (its command, grid and seeds head the table).
        units: the sweep's trials.
        results: every unit's result by id.
        sweep_dir: the sweep's folder.

    Returns:
        The table written to ``results.json``: ``aggregate``'s rows and problems with the sweep's
        settings.
    """
    from rlkit.persistence import atomic_open, atomic_write_json

    table = aggregate(units, results)
    table = {"command": spec.command, "grid": spec.grid, "seeds": spec.seeds,
             "sweep_dir": str(sweep_dir),
             "interval": "95% t-interval over seeds (sd with ddof=1)", **table}
    atomic_write_json(sweep_dir / "results.json", table)
    with atomic_open(sweep_dir / "results.md", "w") as handle:
        handle.write(markdown(table))
    plot(table, sweep_dir / "results.png")
    return table


def _fmt(value: float | None) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4g}"


def markdown(table: Mapping[str, Any]) -> str:
    lines = [f"# Sweep of `rlkit {table['command']}`", "",
             f"Mean ± half-width of the {table['interval']}; n = seeds that finished.", ""]
    metrics = sorted({k for row in table["rows"] for k in row["metrics"]})
    lines += ["| grid point | seeds done | " + " | ".join(metrics) + " |",
              "| --- | --- | " + " | ".join("---" for _ in metrics) + " |"]
    for row in table["rows"]:
        cells = []
        for key in metrics:
            stat = row["metrics"].get(key)
            cells.append("—" if stat is None else
                         f"{_fmt(stat['mean'])} ± {_fmt(stat['half_width'])} (n={stat['n']})")
        lines.append(f"| {row['label']} | {row['seeds_done']}/{row['seeds']} | " + " | ".join(cells) + " |")
    if table["problems"]:
        lines += ["", "## Trials that did not finish", ""]
        for p in table["problems"]:
            first = (p["error"] or "").splitlines()[0] if p["error"] else ""
            lines.append(f"- `{p['id']}` ({point_label(p['point'])}, seed {p['seed']}): "
                         f"{p['status']}: {first}")
    return "\n".join(lines) + "\n"


def plot(table: Mapping[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rlkit.persistence import atomic_open

    metrics = sorted({k for row in table["rows"] for k in row["metrics"]})[:MAX_PLOTTED]
    cols = min(3, max(1, len(metrics)))
    rows = max(1, math.ceil(len(metrics) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.5 * cols, 3.2 * rows), squeeze=False)
    labels = [row["label"] for row in table["rows"]]
    x = np.arange(len(labels))
    for ax, key in zip(axes.flat, metrics, strict=False):
        means = [row["metrics"].get(key, {}).get("mean", np.nan) for row in table["rows"]]
        errs = [row["metrics"].get(key, {}).get("half_width") or 0.0 for row in table["rows"]]
        ax.errorbar(x, means, yerr=errs, fmt="o", capsize=4)
        ax.set_title(key, fontsize=9)
        ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=7)
    for ax in list(axes.flat)[len(metrics):]:
        ax.axis("off")
    if not metrics:
        axes.flat[0].text(0.5, 0.5, "no finished trial reported numbers", ha="center")
    fig.suptitle(f"rlkit {table['command']}: mean and 95% t-interval over seeds", fontsize=10)
    fig.tight_layout()
    with atomic_open(path, "wb") as handle:
        fig.savefig(handle, format="png", dpi=100)
    plt.close(fig)

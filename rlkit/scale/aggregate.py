"""A sweep's results across seeds: per grid point and metric, the mean and its 95% t-interval.

The interval is ``mean +- t(0.975, n-1) * sd / sqrt(n)`` with the sample sd (ddof=1) over the
seeds that finished; with one seed there is no interval (null). A quantity with a range (an
accuracy or fraction in [0, 1], a correlation in [-1, 1], a count >= 0: ``bounds_of``) has its
interval clipped to that range. Written to ``results.json`` (every metric), ``results.md`` and
``results.png`` (the metrics ``shown_metrics`` picks: a sweep's own choice, else its command's
default); failed and stopped trials are listed with their errors and left out of the numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import numpy as np

from rlkit.scale.unit_graph import Unit
from rlkit.scale.units import UnitResult

MAX_PLOTTED = 12
#: per command, the metrics its table and plot show by default (``fnmatch`` patterns, in order)
DEFAULT_METRICS: dict[str, tuple[str, ...]] = {
    "pref-rl": ("true_return/mean", "reward_model/*accuracy", "agent_updates", "refits", "labels"),
}
#: what any other command's table leaves out by default: bookkeeping, not results
BOOKKEEPING = ("best_epoch", "epochs", "n_pairs", "*/best_epoch", "*/epochs", "*/n_pairs")
#: a metric's range by name (``fnmatch`` patterns, the first that matches counts)
BOUNDS: tuple[tuple[str, tuple[float | None, float | None]], ...] = (
    ("*accuracy*", (0.0, 1.0)), ("*fraction*", (0.0, 1.0)), ("*pearson*", (-1.0, 1.0)),
    ("*correlation*", (-1.0, 1.0)), ("*spearman*", (-1.0, 1.0)),
    ("labels", (0.0, None)), ("refits", (0.0, None)), ("*updates", (0.0, None)),
    ("*steps", (0.0, None)), ("*epochs", (0.0, None)), ("n_*", (0.0, None)),
)


def bounds_of(name: str) -> tuple[float | None, float | None] | None:
    """The range of the metric ``name`` (``None`` for an unbounded one, e.g. a return).

    Args:
        name: the flattened metric name (``reward_model/fresh_accuracy``).

    Returns:
        ``(low, high)``, either end ``None`` when open, or ``None``.
    """
    leaf = name.rsplit("/", 1)[-1]
    for pattern, bounds in BOUNDS:
        if fnmatchcase(leaf, pattern):
            return bounds
    return None


def shown_metrics(names: Iterable[str], command: str, chosen: Sequence[str] = ()) -> list[str]:
    """The metrics a sweep's table and plot show.

    Args:
        names: every metric the trials reported.
        command: the swept command (its ``DEFAULT_METRICS``, if any, apply without ``chosen``).
        chosen: the sweep's own choice: names or ``fnmatch`` patterns (``reward_model/*``).

    Returns:
        The metrics, in the order of the patterns (each pattern's matches sorted); without a
        choice or default, every metric but ``BOOKKEEPING``, sorted.
    """
    available = sorted(set(names))
    patterns = tuple(chosen) or DEFAULT_METRICS.get(command, ())
    if not patterns:
        return [n for n in available if not any(fnmatchcase(n, b) for b in BOOKKEEPING)]
    shown: list[str] = []
    for pattern in patterns:
        shown += [n for n in available if fnmatchcase(n, pattern) and n not in shown]
    return shown


def interval(values: Sequence[float], level: float = 0.95,
             bounds: tuple[float | None, float | None] | None = None) -> dict[str, Any]:
    """``{"mean", "sd", "n", "half_width", "low", "high"}`` of ``values`` (sd with ddof=1).

    Args:
        values: one metric's value per finished seed.
        level: the interval's coverage.
        bounds: the quantity's range (``bounds_of``): ``low`` and ``high`` are clipped to it
            (``half_width`` stays the t-interval's), and ``clipped`` says whether either was.

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
    low, high = mean - half, mean + half
    floor, ceiling = bounds or (None, None)
    clipped_low = max(low, floor) if floor is not None else low
    clipped_high = min(high, ceiling) if ceiling is not None else high
    return {"mean": mean, "sd": sd, "n": n, "half_width": half, "low": clipped_low,
            "high": clipped_high, "clipped": (clipped_low, clipped_high) != (low, high)}


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
                     "metrics": {k: interval(v, bounds=bounds_of(k))
                                 for k, v in sorted(entry["values"].items())}})
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
    reported = {k for row in table["rows"] for k in row["metrics"]}
    table = {"command": spec.command, "grid": spec.grid, "seeds": spec.seeds,
             "sweep_dir": str(sweep_dir),
             "interval": "95% t-interval over seeds (sd with ddof=1), clipped to a bounded "
                         "quantity's range",
             "shown": shown_metrics(reported, spec.command, spec.metrics), **table}
    atomic_write_json(sweep_dir / "results.json", table)
    with atomic_open(sweep_dir / "results.md", "w") as handle:
        handle.write(markdown(table))
    plot(table, sweep_dir / "results.png")
    return table


def _fmt(value: float | None) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4g}"


def markdown(table: Mapping[str, Any]) -> str:
    lines = [f"# Sweep of `rlkit {table['command']}`", "",
             f"Mean ± half-width of the {table['interval']} (a clipped one as mean [low, high]); "
             "n = seeds that finished. Every metric the trials reported is in results.json.", ""]
    metrics = table["shown"]
    lines += ["| grid point | seeds done | " + " | ".join(metrics) + " |",
              "| --- | --- | " + " | ".join("---" for _ in metrics) + " |"]
    for row in table["rows"]:
        cells = []
        for key in metrics:
            stat = row["metrics"].get(key)
            cells.append("—" if stat is None else _cell(stat))
        lines.append(f"| {row['label']} | {row['seeds_done']}/{row['seeds']} | " + " | ".join(cells) + " |")
    if table["problems"]:
        lines += ["", "## Trials that did not finish", ""]
        for p in table["problems"]:
            first = (p["error"] or "").splitlines()[0] if p["error"] else ""
            lines.append(f"- `{p['id']}` ({point_label(p['point'])}, seed {p['seed']}): "
                         f"{p['status']}: {first}")
    return "\n".join(lines) + "\n"


def _cell(stat: Mapping[str, Any]) -> str:
    if stat.get("clipped"):
        return f"{_fmt(stat['mean'])} [{_fmt(stat['low'])}, {_fmt(stat['high'])}] (n={stat['n']})"
    return f"{_fmt(stat['mean'])} ± {_fmt(stat['half_width'])} (n={stat['n']})"


def _error_bars(stats: Sequence[Mapping[str, Any] | None]) -> np.ndarray:
    """Below and above each mean, to its (clipped) interval's ends; 0 without an interval."""
    bars = np.zeros((2, len(stats)))
    for i, stat in enumerate(stats):
        if stat and stat.get("low") is not None:
            bars[:, i] = stat["mean"] - stat["low"], stat["high"] - stat["mean"]
    return bars


def plot(table: Mapping[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rlkit.persistence import atomic_open

    metrics = list(table["shown"])[:MAX_PLOTTED]
    cols = min(3, max(1, len(metrics)))
    rows = max(1, math.ceil(len(metrics) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.5 * cols, 3.2 * rows), squeeze=False)
    labels = [row["label"] for row in table["rows"]]
    x = np.arange(len(labels))
    for ax, key in zip(axes.flat, metrics, strict=False):
        stats = [row["metrics"].get(key) for row in table["rows"]]
        means = [stat["mean"] if stat else np.nan for stat in stats]
        ax.errorbar(x, means, yerr=_error_bars(stats), fmt="o", capsize=4)
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

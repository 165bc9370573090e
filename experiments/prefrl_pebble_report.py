"""The PEBBLE experiment's report, from its rows (``experiments/prefrl_pebble.py``: one per
(seed, arm)): per arm over seeds the final return's and each learning-curve point's mean, sample
sd (ddof = 1), 95% t-interval and n; the markdown table; the figure.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from experiments.stats import Spread


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per arm over seeds: the final return's and each curve point's mean, sd (ddof = 1), 95%
    t-interval and n.

    Args:
        rows: one per (seed, arm).

    Returns:
        ``{arm: {"final_return": spread, "curve": {step: spread}, "seeds": [...]}}``.
    """
    table: dict[str, Any] = {}
    for arm in dict.fromkeys(r["arm"] for r in rows):
        group = [r for r in rows if r["arm"] == arm]
        steps = sorted({int(s) for r in group for s in r["curve"]})
        table[arm] = {
            "seeds": [r["seed"] for r in group],
            "final_return": Spread.of([r["final_return"] for r in group]).as_dict(),
            # a resumed unit timed only its last sitting: wall and CPU over the unbroken ones
            "wall_s": Spread.of([r["wall_s"] for r in group if not r["resumed_from"]]).as_dict(),
            "cpu_s": Spread.of([r["cpu_s"] for r in group if not r["resumed_from"]]).as_dict(),
            "curve": {str(s): Spread.of([r["curve"][str(s)] for r in group if str(s) in r["curve"]]
                                        ).as_dict() for s in steps},
        }
    return table


def markdown_table(table: dict[str, Any]) -> str:
    """The final returns per arm: mean, sd (ddof = 1), 95% t-interval, n.

    Args:
        table: ``summarise``'s output.

    Returns:
        A markdown table.
    """
    lines = ["| arm | seeds | final true return, mean | sd | 95% t-interval | n "
             "| wall per unbroken run (s), n |",
             "| --- | --- | ---: | ---: | --- | ---: | ---: |"]
    for arm, entry in table.items():
        final = entry["final_return"]
        interval = ("-" if math.isnan(final["ci95_low"])
                    else f"[{final['ci95_low']:.1f}, {final['ci95_high']:.1f}]")
        lines.append(f"| {arm} | {', '.join(map(str, entry['seeds']))} | {final['mean']:.1f} | "
                     f"{final['sd']:.1f} | {interval} | {final['n']} | {_wall(entry['wall_s'])} |")
    return "\n".join(lines) + "\n"


def _wall(spread: dict[str, Any]) -> str:
    """The mean wall of the unbroken runs and their n, or "-" when every run was resumed."""
    return "-" if not spread["n"] else f"{spread['mean']:.0f}, {spread['n']}"


def plot(table: dict[str, Any], title: str, path: Path) -> None:
    """Learning curves: each arm's mean true return with its 95% t-interval, n in the legend.

    Args:
        table: ``summarise``'s output.
        title: the figure's title.
        path: the PNG to write.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4.5))
    for arm, entry in table.items():
        steps = np.array([int(s) for s in entry["curve"]])
        spreads = list(entry["curve"].values())
        mean = np.array([s["mean"] for s in spreads])
        n = min(s["n"] for s in spreads) if spreads else 0
        axis.plot(steps, mean, marker="o", markersize=3, label=f"{arm} (n={n})")
        axis.fill_between(steps, [s["ci95_low"] for s in spreads], [s["ci95_high"] for s in spreads],
                          alpha=0.2)
    axis.set(title=title, xlabel="env steps", ylabel="true return (deterministic policy)")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)

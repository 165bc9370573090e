"""Every arm of the APEC experiment beside APEC: a table per held-out metric with a line per
(task, seed) unit and a column per arm (``unit_table``), and APEC's paired differences from its
ablations (``ablations``): the same unit's rewards, scored on the same held-out set, without the
OT filter (gap only), without the index gap (OT only, at APEC's own margin) and without any
preference learning (the AIL discriminator's own reward). They say which part of APEC carries its
result on each task, as the paper's ablation asks."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from experiments.apec import ApecExperimentConfig
from experiments.apec_report import POOLED, claims_markdown, paired_claims, pyplot
from experiments.apec_rows import METRICS
from rlkit.apec.methods import split_method

ABLATION_METRICS = ("accuracy", "step_pearson", "accuracy_outside_ail")
"""The held-out figures the ablations are compared on (the labels are ``METRICS``')."""


def ablation_arms(methods: list[str], ot_margin: float) -> dict[str, str]:
    """The ablations APEC is compared with, by row method and the name a claim gives each.

    Args:
        methods: the experiment's arms (``pipeline.methods``).
        ot_margin: APEC's own OT margin (``pipeline.pairs.ot_threshold``): OT only is compared at it,
            as ``ot_only`` or ``ot_only@<margin>``, whichever ``methods`` holds first.

    Returns:
        ``{method: name}`` for gap only, OT only at ``ot_margin`` and the raw AIL reward, those of
        them that ``methods`` holds.
    """
    at_margin = (("ot_only", None), ("ot_only", ot_margin))
    ot_only = next((m for m in methods if split_method(m) in at_margin), None)
    names = {"gap_only": "gap only", ot_only: f"OT only ({ot_margin:g})", "raw_ail": "raw AIL reward"}
    return {method: name for method, name in names.items() if method in methods}


def ablations(rows: list[dict[str, Any]], arms: dict[str, str]) -> list[dict[str, Any]]:
    """APEC minus each arm of ``arms`` on each of ``ABLATION_METRICS``, paired by (task, seed):
    per task over its seeds and, with several tasks, pooled over every unit (``paired_claims``:
    mean, sample sd, 95% t-interval, n and verdict). A unit without both arms drops out.

    Args:
        rows: the experiment's rows (``collect_rows``).
        arms: the arms to compare, as ``ablation_arms`` gives them.

    Returns:
        One entry per (task, claim), claims named ``<metric>: APEC - <arm's name>``.
    """
    per_task = {task: {f"{metric}: APEC - {name}": list(unit_differences(rows, arm, metric, task).values())
                       for arm, name in arms.items() for metric in ABLATION_METRICS}
                for task in dict.fromkeys(r["task"] for r in rows)}
    return paired_claims(per_task)


def unit_differences(rows: list[dict[str, Any]], arm: str, metric: str, task: str | None = None
                     ) -> dict[tuple[str, int], float]:
    """APEC's ``metric`` minus ``arm``'s on each (task, seed) unit that has both rows, in the rows'
    order (``task``: that task's units only).

    Args:
        rows: the experiment's rows.
        arm: the other arm's method.
        metric: a key of ``METRICS``.
        task: a task id, or None for every task's units.

    Returns:
        ``{(task, seed): difference}``.
    """
    by = {(r["task"], r["seed"], r["method"]): r for r in rows if task in (None, r["task"])}
    return {(t, s): by[t, s, "apec"][metric] - by[t, s, arm][metric]
            for t, s, m in by if m == "apec" and (t, s, arm) in by}


def unit_table(rows: list[dict[str, Any]], methods: list[str], metric: str) -> str:
    """One line per (task, seed) unit: its AIL run's checkpoint-vs-return Spearman and ``metric``
    for each arm of ``methods`` that has a row (the best of the line in bold, "—" where missing).

    Args:
        rows: the experiment's rows.
        methods: the arms, in the columns' order.
        metric: a key of ``METRICS``.

    Returns:
        A markdown table.
    """
    label = dict(METRICS)[metric]
    by = {(r["task"], r["seed"], r["method"]): r for r in rows}
    lines = [f"| task | seed | AIL progress (Spearman) | {' | '.join(methods)} |",
             "| --- | ---: | ---: | " + " | ".join("---:" for _ in methods) + " |"]
    for task, seed in dict.fromkeys((r["task"], r["seed"]) for r in rows):
        values = [float(by[task, seed, m][metric]) if (task, seed, m) in by else math.nan for m in methods]
        best = max((v for v in values if math.isfinite(v)), default=math.nan)
        cells = ["—" if not math.isfinite(v) else f"**{v:.3f}**" if v == best else f"{v:.3f}" for v in values]
        spearman = next(by[task, seed, m]["ail_spearman"] for m in methods if (task, seed, m) in by)
        lines.append(f"| {task} | {seed} | {spearman:.2f} | {' | '.join(cells)} |")
    return f"{label}, each unit's fits on its task's held-out set:\n\n" + "\n".join(lines) + "\n"


def plot_paired(rows: list[dict[str, Any]], arms: dict[str, str], path: Path) -> None:
    """One panel per metric of ``ABLATION_METRICS``: APEC minus each arm, a line per (arm, task)
    and one pooled over every unit, each unit's difference a dot, the mean with its 95%
    t-interval a bar, n beside it.

    Args:
        rows: the experiment's rows.
        arms: ``{method: name}`` of the arms compared (D-REX and the ablations).
        path: where the PNG goes.
    """
    from experiments.stats import Spread  # by name: a script puts the repo root on sys.path first

    plt = pyplot()
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    groups = [*tasks, POOLED] if len(tasks) > 1 else tasks
    lines = [(arm, name, group) for arm, name in arms.items() for group in groups]
    figure, axes = plt.subplots(1, len(ABLATION_METRICS), figsize=(5.2 * len(ABLATION_METRICS),
                                                                    0.3 * len(lines) + 1.5), sharey=True)
    for axis, metric in zip(axes, ABLATION_METRICS, strict=True):
        for y, (arm, _, group) in enumerate(lines):
            values = list(unit_differences(rows, arm, metric, None if group == POOLED else group).values())
            spread = Spread.of(values)
            axis.scatter(values, [y] * len(values), s=12, color="tab:gray", zorder=2)
            if spread.n > 1:
                axis.plot([spread.low, spread.high], [y, y], color="tab:blue", linewidth=2.5)
            axis.plot([spread.mean], [y], marker="|", markersize=12, color="tab:blue")
            axis.annotate(f"n={spread.n}", (1.01, y), xycoords=("axes fraction", "data"), fontsize=7,
                          ha="left", va="center")
        axis.axvline(0.0, color="black", linewidth=0.8)
        axis.set(title=f"{dict(METRICS)[metric]}: APEC minus",
                 xlabel="difference (dots: units; bar: 95% t-interval)")
    axes[0].set_yticks(range(len(lines)), [f"{name}, {group}" for _, name, group in lines], fontsize=8)
    axes[0].invert_yaxis()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def arms_report(config: ApecExperimentConfig, rows: list[dict[str, Any]], out: Path) -> None:
    """``units.md`` (``unit_table`` for each of ``ABLATION_METRICS``), ``ablations.json`` and
    ``ablations.md`` (``ablations``, in the claims' table) and ``paired.png`` (``plot_paired``:
    APEC minus D-REX and minus each ablation) from the experiment's rows.

    Args:
        config: the experiment's config (its arms and APEC's OT margin).
        rows: the experiment's rows.
        out: the folder they are written to.
    """
    methods = [m for m in config.pipeline.methods if any(r["method"] == m for r in rows)]
    (out / "units.md").write_text("\n".join(unit_table(rows, methods, metric) for metric in ABLATION_METRICS))
    arms = ablation_arms(methods, config.pipeline.pairs.ot_threshold)
    found = ablations(rows, arms)
    (out / "ablations.json").write_text(json.dumps(found, indent=2))
    (out / "ablations.md").write_text(claims_markdown(found))
    plot_paired(rows, {"drex": "D-REX"} | arms, out / "paired.png")

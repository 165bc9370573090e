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
from experiments.apec_report import claims_markdown, paired_claims
from experiments.apec_rows import METRICS

ABLATION_METRICS = ("accuracy", "step_pearson", "accuracy_outside_ail")
"""The held-out figures the ablations are compared on (the labels are ``METRICS``')."""


def ablation_arms(ot_margin: float) -> dict[str, str]:
    """The arms APEC is compared with, by row method and the name a claim gives it.

    Args:
        ot_margin: APEC's own OT margin (``pipeline.pairs.ot_threshold``): OT only is compared at it.

    Returns:
        ``{method: name}`` for gap only, OT only at ``ot_margin`` and the raw AIL reward.
    """
    return {"gap_only": "gap only", f"ot_only@{ot_margin:g}": f"OT only ({ot_margin:g})",
            "raw_ail": "raw AIL reward"}


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
    per_task: dict[str, dict[str, list[float]]] = {}
    for task in dict.fromkeys(r["task"] for r in rows):
        by = {(r["method"], r["seed"]): r for r in rows if r["task"] == task}
        seeds = sorted({seed for _, seed in by})
        per_task[task] = {}
        for arm, name in arms.items():
            paired = [s for s in seeds if ("apec", s) in by and (arm, s) in by]
            for metric in ABLATION_METRICS:
                per_task[task][f"{metric}: APEC - {name}"] = [by["apec", s][metric] - by[arm, s][metric]
                                                              for s in paired]
    return paired_claims(per_task)


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


def arms_report(config: ApecExperimentConfig, rows: list[dict[str, Any]], out: Path) -> None:
    """``units.md`` (``unit_table`` for each of ``ABLATION_METRICS``), ``ablations.json`` and
    ``ablations.md`` (``ablations``, in the claims' table) from the experiment's rows.

    Args:
        config: the experiment's config (its arms and APEC's OT margin).
        rows: the experiment's rows.
        out: the folder they are written to.
    """
    methods = [m for m in config.pipeline.methods if any(r["method"] == m for r in rows)]
    (out / "units.md").write_text("\n".join(unit_table(rows, methods, metric) for metric in ABLATION_METRICS))
    found = ablations(rows, ablation_arms(config.pipeline.pairs.ot_threshold))
    (out / "ablations.json").write_text(json.dumps(found, indent=2))
    (out / "ablations.md").write_text(claims_markdown(found))

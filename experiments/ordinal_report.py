"""The ordinal feedback experiment's report, from its rows (``experiments/ordinal_feedback.py``:
one per (task, seed, study, setting)).

Per (task, study, setting) over seeds the mean, sample sd (ddof = 1), standard error and 95%
t-interval of each held-out metric; paired differences between settings over the same seeds; the
results page's generated section (both as tables, and in words: what holds and what does not);
the figure per task.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from experiments.rows import write_page_section
from experiments.stats import Spread, paired_difference, verdict
from rlkit.errors import FileFormatError

METRICS = (("in_dist_accuracy", "accuracy (ID)", True), ("out_dist_accuracy", "accuracy (OOD)", True),
           ("in_dist_oracle_ce", "oracle CE (ID)", False), ("out_dist_oracle_ce", "oracle CE (OOD)", False),
           ("in_dist_return_pearson", "return r (ID)", True),
           ("out_dist_return_pearson", "return r (OOD)", True))  # (key, label, higher is better)
START, END = "<!-- ordinal-tables -->", "<!-- /ordinal-tables -->"


def _groups(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[int, dict[str, Any]]]:
    """The rows by (task, study, setting), each group by seed, in the rows' order."""
    groups: dict[tuple[str, str, str], dict[int, dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["task"], row["study"], str(row["setting"])), {})[row["seed"]] = row
    return groups


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (task, study, setting) over seeds, for each metric: the mean, the sample sd (ddof = 1),
    the standard error sd / sqrt(n) and the 95% t-interval of the mean; n: the seeds.

    Args:
        rows: one per (task, seed, study, setting), as ``run_seed`` writes them.

    Returns:
        One entry per (task, study, setting), in the rows' order.
    """
    metrics = [key for key, _, _ in METRICS if key in rows[0]]
    table = []
    for (task, study, setting), group in _groups(rows).items():
        entry: dict[str, Any] = {"task": task, "study": study, "setting": setting, "n": len(group)}
        for metric in metrics:
            spread = Spread.of([float(r[metric]) for r in group.values()])
            entry |= {metric: spread.mean, f"{metric}_sd": spread.sd,
                      f"{metric}_se": spread.sd / np.sqrt(spread.n) if spread.n > 1 else float("nan"),
                      f"{metric}_ci95": [spread.low, spread.high]}
        table.append(entry)
    return table


def comparisons(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Paired differences ``a - b`` over the seeds both settings hold (each seed's fits share its
    pairs and test sets), per task and metric: each granularity against the next coarser one and
    against the coarsest; each tie ratio against the next smaller one. With the spread, the
    verdict of ``experiments.stats.verdict`` and ``wins``: the seeds in which ``a`` is better.

    Args:
        rows: as for ``summarise``.

    Returns:
        One entry per (task, study, a, b, metric).
    """
    groups = _groups(rows)
    found = []
    for task in dict.fromkeys(r["task"] for r in rows):
        for study in ("granularity", "tie_ratio"):
            settings = [s for t, st, s in groups if (t, st) == (task, study)]
            if study == "tie_ratio":
                settings.sort(key=float)
            pairs = list(zip(settings[1:], settings[:-1], strict=True))
            if study == "granularity":
                pairs += [(a, settings[0]) for a in settings[2:]]
            for a, b in pairs:
                for metric, _, higher in METRICS:
                    values = [{seed: float(r[metric]) for seed, r in groups[task, study, s].items()}
                              for s in (a, b)]
                    difference = paired_difference(*values)
                    sign = 1 if higher else -1
                    wins = sum(sign * (values[0][k] - values[1][k]) > 0 for k in values[0] if k in values[1])
                    found.append({"task": task, "study": study, "a": a, "b": b, "metric": metric,
                                  **difference.as_dict(), "verdict": verdict(difference, higher),
                                  "wins": int(wins)})
    return found


def _spread_cell(entry: dict[str, Any], key: str) -> str:
    low, high = entry[f"{key}_ci95"]
    if entry["n"] < 2:
        return f"{entry[key]:.3f}"
    return f"{entry[key]:.3f} (sd {entry[key + '_sd']:.3f}) [{low:.3f}, {high:.3f}]"


def markdown_table(table: list[dict[str, Any]]) -> str:
    """One row per (task, study, setting): per metric the mean over seeds, the sample sd
    (ddof = 1) and the 95% t-interval of the mean; the seeds (n)."""
    lines = ["| task | study | setting | n | " + " | ".join(label for _, label, _ in METRICS) + " |",
             "| --- | --- | --- | ---: | " + " | ".join("---:" for _ in METRICS) + " |"]
    for e in table:
        cells = " | ".join(_spread_cell(e, key) for key, _, _ in METRICS)
        lines.append(f"| {e['task']} | {e['study']} | {e['setting']} | {e['n']} | {cells} |")
    return "\n".join(lines) + "\n"


def comparisons_markdown(found: list[dict[str, Any]]) -> str:
    """One row per (task, a - b): per metric the mean paired difference, its 95% t-interval and
    the verdict (which way a differs from b where the interval is clear of 0)."""
    lines = ["| task | a - b | n | " + " | ".join(label for _, label, _ in METRICS) + " |",
             "| --- | --- | ---: | " + " | ".join("---:" for _ in METRICS) + " |"]
    keys = list(dict.fromkeys((c["task"], c["a"], c["b"]) for c in found))
    for task, a, b in keys:
        mine = {c["metric"]: c for c in found if (c["task"], c["a"], c["b"]) == (task, a, b)}
        cells = [f"{c['mean']:+.3f} [{c['ci95_low']:+.3f}, {c['ci95_high']:+.3f}] {c['verdict']}"
                 if c["n"] > 1 else f"{c['mean']:+.3f} ({c['verdict']})"
                 for c in (mine[key] for key, _, _ in METRICS)]
        n = max(c["n"] for c in mine.values())
        lines.append(f"| {task} | {a} - {b} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def statements(table: list[dict[str, Any]], found: list[dict[str, Any]]) -> list[str]:
    """What holds and what does not, in words, from the summary and the paired differences: per
    task the order of the granularities' means on each metric, the neighbours' intervals, the
    comparisons with the coarsest scale, and how each metric moves with the tie share.

    Args:
        table: ``summarise``'s entries.
        found: ``comparisons``' entries of the same rows.

    Returns:
        One sentence per line, without list markers.
    """
    lines = []
    for task in dict.fromkeys(e["task"] for e in table):
        means = {(e["study"], e["setting"]): e for e in table if e["task"] == task}
        settings = [s for study, s in means if study == "granularity"]
        order = " > ".join(reversed(settings))
        mine = [c for c in found if c["task"] == task and c["study"] == "granularity"]
        neighbours = [c for c in mine if settings.index(c["a"]) == settings.index(c["b"]) + 1]
        broken, broken_metrics = [], set()
        for key, label, higher in METRICS:
            for c in (c for c in neighbours if c["metric"] == key):
                if (c["mean"] > 0) != higher:
                    a, b = means["granularity", c["a"]][key], means["granularity", c["b"]][key]
                    broken.append(f"{label}, {c['a']} {a:.3f} vs {c['b']} {b:.3f} "
                                  f"({'higher' if higher else 'lower'} is better)")
                    broken_metrics.add(key)
        held = len(METRICS) - len(broken_metrics)
        lines.append(f"{task}: the mean order {order} holds on {held} of {len(METRICS)} metrics"
                     + (f"; it breaks on {'; '.join(broken)}." if broken else "."))
        unresolved = [c for c in neighbours if c["verdict"] != "better"]
        lines.append(f"{task}: of the {len(neighbours)} neighbour differences (finer - next coarser, "
                     f"per metric), {len(neighbours) - len(unresolved)} have a 95% interval on the "
                     "finer scale's side of 0" + ("; the others: " + "; ".join(_said(c) for c in unresolved)
                                                  if unresolved else "") + ".")
        for a in settings[2:]:
            against = [c for c in mine if (c["a"], c["b"]) == (a, settings[0])]
            other = [c for c in against if c["verdict"] != "better"]
            others = f" (the others: {'; '.join(_said(c) for c in other)})" if other else ""
            every = ", and better in every seed on every metric" if all(
                c["wins"] == c["n"] for c in against) else ""
            lines.append(f"{task}: {a} - {settings[0]} is better on {len(against) - len(other)} of "
                         f"{len(against)} metrics with the interval clear of 0{others}{every}.")
        ties = sorted((e for e in table if e["task"] == task and e["study"] == "tie_ratio"),
                      key=lambda e: float(e["setting"]))
        if len(ties) > 1:
            lines.append(f"{task}, tie share r: " + "; ".join(_trend(ties, key, label, higher)
                                                              for key, label, higher in METRICS) + ".")
    return lines


def _said(c: dict[str, Any]) -> str:
    label = next(label for key, label, _ in METRICS if key == c["metric"])
    return (f"{c['a']} - {c['b']} on {label} {c['mean']:+.3f} [{c['ci95_low']:+.3f}, "
            f"{c['ci95_high']:+.3f}], {c['verdict']}, better in {c['wins']} of {c['n']} seeds")


def _trend(ties: list[dict[str, Any]], key: str, label: str, higher: bool) -> str:
    values = np.array([e[key] for e in ties]) * (1 if higher else -1)  # larger is better
    steps = np.diff(values)
    shown = ", ".join(f"{e[key]:.3f}" for e in ties)
    if (steps < 0).all():
        return f"{label} worse with every step up ({shown})"
    if (steps > 0).all():
        return f"{label} better with every step up ({shown})"
    return f"{label} best at r = {ties[int(values.argmax())]['setting']} ({shown})"


def page_section(rows: list[dict[str, Any]]) -> str:
    """The results page's generated part: spreads, paired differences and statements.

    Args:
        rows: as for ``summarise``.

    Returns:
        Markdown, the text between the page's markers.
    """
    table, found = summarise(rows), comparisons(rows)
    seeds = sorted({r["seed"] for r in rows})
    return "\n".join([
        f"Generated by `experiments/ordinal_feedback.py` from {len(rows)} rows (seeds {seeds}); "
        "do not edit by hand.", "",
        "### Spread over seeds", "",
        "Per setting and metric: the mean over seeds, the sample sd (ddof = 1) and the 95% "
        "t-interval of the mean; n: seeds. Oracle CE: lower is better; the others: higher.", "",
        markdown_table(table),
        "### Paired differences", "",
        "a - b per seed (the same seed's pairs, test sets and initial net on both sides), then the "
        "mean over seeds and its 95% t-interval. `better` / `worse`: the interval lies on one side "
        "of 0, in the metric's own sense (for oracle CE a negative difference is better); "
        "`not resolved`: it holds 0.", "",
        comparisons_markdown(found),
        "### What holds and what does not", "",
        *(f"- {line}" for line in statements(table, found)), ""])


def write_page(page: Path, text: str) -> None:
    """The page's tables (between ``START`` and ``END``) replaced with ``text``."""
    write_page_section(page, START, END, text)


def check_rows(rows: list[dict[str, Any]], source: Path) -> None:
    """Fail, naming the file and line, on a row without a field the report reads."""
    needed = ("task", "seed", "study", "setting", *(key for key, _, _ in METRICS))
    for number, row in enumerate(rows, 1):
        missing = [key for key in needed if not isinstance(row, dict) or key not in row]
        if missing:
            raise FileFormatError(f"{source}: line {number} has no {', '.join(missing)}")


def plot(table: list[dict[str, Any]], path: Path) -> None:
    """Per task: the granularities' and the tie ratios' accuracy and oracle CE, in and out of
    distribution, with the 95% t-interval over seeds as error bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def bars(entries: list[dict[str, Any]], key: str) -> np.ndarray:
        means = np.array([e[key] for e in entries])
        bounds = np.array([e[f"{key}_ci95"] for e in entries], dtype=float).reshape(-1, 2)
        return np.abs(np.stack([means - bounds[:, 0], bounds[:, 1] - means]))

    tasks = list(dict.fromkeys(e["task"] for e in table))
    n = max(e["n"] for e in table)
    figure, axes = plt.subplots(len(tasks), 4, figsize=(20, 3.8 * len(tasks)), squeeze=False)
    for row, task in enumerate(tasks):
        gran = [e for e in table if e["task"] == task and e["study"] == "granularity"]
        names = [e["setting"] for e in gran]
        for col, (metric, label) in enumerate((("accuracy", "held-out accuracy"),
                                               ("oracle_ce", "oracle cross-entropy"))):
            for offset, split in ((-0.2, "in_dist"), (0.2, "out_dist")):
                axes[row, col].bar(np.arange(len(gran)) + offset, [e[f"{split}_{metric}"] for e in gran],
                                   width=0.4, yerr=bars(gran, f"{split}_{metric}"), label=split)
            values = [e[f"{s}_{metric}"] for e in gran for s in ("in_dist", "out_dist")]
            spread = max(values) - min(values)
            axes[row, col].set_ylim(min(values) - spread - 0.01, max(values) + spread + 0.01)
            axes[row, col].set_xticks(range(len(gran)), names)
            axes[row, col].set(title=f"{task}: {label}\n(mean, 95% t-interval, n = {n} seeds)")
            axes[row, col].legend()
        ties = sorted((e for e in table if e["task"] == task and e["study"] == "tie_ratio"),
                      key=lambda e: float(e["setting"]))
        ratios = [float(e["setting"]) for e in ties]
        for col, (metric, label) in ((2, ("accuracy", "held-out accuracy")),
                                     (3, ("oracle_ce", "oracle cross-entropy"))):
            for split in ("in_dist", "out_dist"):
                axes[row, col].errorbar(ratios, [e[f"{split}_{metric}"] for e in ties],
                                        yerr=bars(ties, f"{split}_{metric}"), marker="o", label=split)
            axes[row, col].set(title=f"{task}: tie ratio (3-level)\n(mean, 95% t-interval, n = {n} seeds)",
                               xlabel="share of tied pairs",
                               ylabel=label)
            axes[row, col].legend()
        axes[row, 3].set_yscale("log")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)

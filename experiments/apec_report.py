"""The APEC experiment's results, read from its run directories (``experiments/apec.py``).

Rows per (task, seed, method); per (task, method) over seeds the mean, standard error (ddof = 1)
and 95% t-interval of each held-out metric, the policies' true return and the diagnostics (AIL
progress, label agreement); the paper's two claims as paired differences over seeds; the
demonstrators' curves; every AIL run's true return per round; a figure per task and the policies'
learning curves. ``report`` writes them all, after a run or with ``--report-only``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from experiments.apec import (
    ApecExperimentConfig,
    demo_dir,
    file_name,
    heldout_dir,
    seed_dir,
    task_config,
)
from experiments.apec_rows import DIAGNOSTICS, METRICS, PAIR_COUNTS, POLICY_RETURNS, collect_rows
from rlkit.apec.demonstrator import checkpoint_step
from rlkit.persistence import read_json, read_json_lines


def pyplot() -> Any:
    """``matplotlib.pyplot`` drawing to files (the Agg backend): no display needed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (task, method) over seeds: mean, standard error (ddof = 1) and 95% t-interval of each
    metric, and the held-out pairs each seed's accuracy rests on (smallest and largest)."""
    from experiments.stats import Spread  # by name: a script puts the repo root on sys.path first

    keys = list(dict.fromkeys((r["task"], r["method"]) for r in rows))
    table = []
    for task, method in keys:
        group = [r for r in rows if (r["task"], r["method"]) == (task, method)]
        entry: dict[str, Any] = {"task": task, "method": method, "n": len(group)}
        for metric in [key for key, _ in (*METRICS, *POLICY_RETURNS)] + list(DIAGNOSTICS):
            spread = Spread.of([float(r.get(metric, float("nan"))) for r in group])
            entry[metric] = spread.mean
            entry[f"{metric}_se"] = spread.sd / np.sqrt(spread.n) if spread.n > 1 else float("nan")
            entry[f"{metric}_ci95"] = [spread.low, spread.high]
            entry[f"{metric}_n"] = spread.n  # fewer than n where a seed's policies still train
        for count in PAIR_COUNTS:
            known = [int(r[count]) for r in group if count in r]
            entry[count] = [min(known), max(known)] if known else None
        table.append(entry)
    return table


POOLED = "all tasks, pooled"  # the claims' task name for every task's (task, seed) pairs together


def claims(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The paper's claims per task, as paired differences over the seeds that have both sides:
    APEC minus D-REX on each held-out metric (one seed's rewards scored on the same held-out set),
    APEC's policy true return minus the demonstration's and minus D-REX's policy's (a policy still
    training has no return, so its seed drops out). Each with its mean, sample sd (ddof = 1),
    95% t-interval and n; ``verdict``: ``holds`` where the interval lies above 0,
    ``reversed`` where below, ``not shown`` where it holds 0, ``too few seeds`` under n = 2.
    With more than one task, the same claims once more over every (task, seed) pair together
    (task ``POOLED``): that interval treats the tasks as exchangeable draws, which three MuJoCo
    tasks of different return scales are not for the policy returns, so read those per task."""
    return paired_claims({task: _differences([r for r in rows if r["task"] == task])
                          for task in dict.fromkeys(r["task"] for r in rows)})


def paired_claims(per_task: dict[str, dict[str, list[float]]]) -> list[dict[str, Any]]:
    """Each task's paired differences per claim (one per seed) as the claims report them: mean,
    sample sd, 95% t-interval, n and verdict, and with more than one task the same over every
    (task, seed) pair together (task ``POOLED``)."""
    from experiments.stats import Spread  # by name: a script puts the repo root on sys.path first

    per_task = dict(per_task)
    if len(per_task) > 1:
        per_task[POOLED] = {claim: [d for found in list(per_task.values()) for d in found[claim]]
                            for claim in next(iter(per_task.values()))}
    out = []
    for task, found in per_task.items():
        for claim, differences in found.items():
            spread = Spread.of(differences)
            verdict = ("too few seeds" if spread.n < 2 else "holds" if spread.low > 0
                       else "reversed" if spread.high < 0 else "not shown")
            out.append({"task": task, "claim": claim, **spread.as_dict(), "verdict": verdict})
    return out


def _differences(rows: list[dict[str, Any]]) -> dict[str, list[float]]:
    """One task's paired differences per claim, one per seed that has both sides."""
    by = {(r["method"], r["seed"]): r for r in rows}
    seeds = sorted({seed for _, seed in by})
    paired = [s for s in seeds if ("apec", s) in by and ("drex", s) in by]
    found = {f"{metric}: APEC - D-REX": [by["apec", s][metric] - by["drex", s][metric] for s in paired]
             for metric, _ in METRICS}
    for key, name in (("policy_return", "policy return"),
                      ("policy_return_stochastic", "policy return, stochastic")):
        found[f"{name}: APEC - demo"] = [by["apec", s].get(key, np.nan) - by["apec", s]["demo_return"]
                                         for s in seeds if ("apec", s) in by]
        found[f"{name}: APEC - D-REX"] = [by["apec", s].get(key, np.nan) - by["drex", s].get(key, np.nan)
                                          for s in paired]
    return found


def claims_markdown(found: list[dict[str, Any]]) -> str:
    """One line per (task, claim): mean, sd, 95% t-interval, seeds and the verdict."""
    lines = ["| task | paired difference | mean | sd (ddof = 1) | 95% t-interval | seeds | verdict |",
             "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for c in found:
        interval = "—" if c["n"] < 2 else f"[{c['ci95_low']:.3f}, {c['ci95_high']:.3f}]"
        sd = "—" if c["n"] < 2 else f"{c['sd']:.3f}"
        mean = "—" if c["n"] == 0 else f"{c['mean']:.3f}"
        lines.append(f"| {c['task']} | {c['claim']} | {mean} | {sd} | {interval} | {c['n']} "
                     f"| {c['verdict']} |")
    return "\n".join(lines) + "\n"


def markdown_table(table: list[dict[str, Any]]) -> str:
    """Mean ± standard error (ddof = 1) [95% t-interval] over seeds; the pairs per seed."""
    columns = [*METRICS, *POLICY_RETURNS,
               ("ail_spearman", "AIL progress (Spearman)"), ("label_agreement", "label agreement")]
    lines = ["| task | method | seeds | held-out pairs (all / non-AIL) | "
             + " | ".join(label for _, label in columns) + " |",
             "| --- | --- | ---: | ---: | " + " | ".join("---:" for _ in columns) + " |"]
    for e in table:
        counts = " / ".join("–".join(str(v) for v in dict.fromkeys(e[c])) if e.get(c) else "—"
                            for c in PAIR_COUNTS)
        lines.append(f"| {e['task']} | {e['method']} | {e['n']} | {counts} | "
                     + " | ".join(_cell(e, key) for key, _ in columns) + " |")
    return "\n".join(lines) + "\n"


def _cell(entry: dict[str, Any], key: str) -> str:
    if not np.isfinite(entry[key]):
        return "—"
    n = entry.get(f"{key}_n", entry["n"])
    seeds = "" if n == entry["n"] else f" (n={n})"
    if not np.isfinite(entry[f"{key}_se"]):
        return f"{entry[key]:.3f}{seeds}"
    low, high = entry[f"{key}_ci95"]
    return f"{entry[key]:.3f} ± {entry[key + '_se']:.3f} [{low:.3f}, {high:.3f}]{seeds}"


def plot(table: list[dict[str, Any]], task: str, demo_return: float, path: Path) -> None:
    """Each metric's mean ± standard error per method, the seeds (n) under each bar."""
    plt = pyplot()
    entries = [e for e in table if e["task"] == task]
    names = [f"{e['method']} (n={e['n']})" for e in entries]
    figure, axes = plt.subplots(1, len(METRICS) + 1, figsize=(4.2 * (len(METRICS) + 1), 4.4))
    for axis, (metric, label) in zip(axes, METRICS, strict=False):
        axis.bar(range(len(entries)), [e[metric] for e in entries],
                 yerr=[e[f"{metric}_se"] for e in entries], color="tab:blue")
        axis.set_xticks(range(len(entries)), names, rotation=60, ha="right")
        axis.set(title=f"{task}: {label}")
        axis.axhline(0.5 if metric == "accuracy" else 0.0, color="grey", linewidth=0.8)
    trained = [e for e in entries if np.isfinite(e["policy_return"])]
    for shift, key, label, colour in ((-0.2, "policy_return", "deterministic", "tab:green"),
                                      (0.2, "policy_return_stochastic", "stochastic (the reference's)",
                                       "tab:olive")):
        axes[-1].bar(np.arange(len(trained)) + shift, [e[key] for e in trained], width=0.4,
                     yerr=[e[f"{key}_se"] for e in trained], color=colour, label=label)
    axes[-1].set_xticks(range(len(trained)),
                        [f"{e['method']} (n={e['policy_return_n']}/{e['policy_return_stochastic_n']})"
                         for e in trained], rotation=60, ha="right")
    axes[-1].axhline(demo_return, color="tab:red", linewidth=1, label="demonstration")
    axes[-1].set(title=f"{task}: policy true return", xlabel="(n seeds: deterministic / stochastic)")
    axes[-1].legend(fontsize="small", loc="lower left")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def curve_table(rows: list[dict[str, Any]], task: str) -> dict[str, list[dict[str, Any]]]:
    """Per policy method of ``task``: at each evaluation step every seed reached, the mean true
    return over seeds with its 95% t-interval and n."""
    from experiments.stats import Spread  # by name: a script puts the repo root on sys.path first

    curves: dict[str, list[dict[str, Any]]] = {}
    for method in dict.fromkeys(r["method"] for r in rows if r["task"] == task):
        seeds = [dict(zip(r["policy_curve"]["timesteps"], r["policy_curve"]["true_returns"], strict=True))
                 for r in rows if (r["task"], r["method"]) == (task, method)
                 and r.get("policy_curve", {}).get("timesteps")]
        if not seeds:
            continue
        shared = sorted(set.intersection(*(set(seed) for seed in seeds)))
        curves[method] = [{"timesteps": step, **vars(Spread.of([seed[step] for seed in seeds]))}
                          for step in shared]
    return curves


def plot_curves(curves: dict[str, list[dict[str, Any]]], task: str, demo_return: float, path: Path) -> None:
    """Each policy's deterministic true return over training: mean over seeds, 95% t-band, n."""
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(6.4, 4.0))
    for method, points in curves.items():
        steps = [p["timesteps"] for p in points]
        axis.plot(steps, [p["mean"] for p in points], label=f"{method} (n={points[-1]['n']} seeds)")
        axis.fill_between(steps, [p["low"] for p in points], [p["high"] for p in points], alpha=0.2)
    axis.axhline(demo_return, color="tab:red", linewidth=1, label="demonstration")
    axis.set(title=f"{task}: policies on the learned rewards", xlabel="env steps",
             ylabel="true return (deterministic evaluation)")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def demonstrator_rows(config: ApecExperimentConfig, out: Path) -> list[dict[str, Any]]:
    """Per task whose demos exist: the demonstrator's budget, every checkpoint's return (the mean
    of ``demos.eval_episodes`` deterministic episodes), the last and the best of them, and the
    demo picked (its checkpoint, return and fraction of the best above the baseline)."""
    rows = []
    for task in config.tasks:
        path = demo_dir(config, task, out) / "demos" / "demos.json"
        if not path.is_file():
            continue
        demos = read_json(path)
        settings = task_config(config, task, config.demo_seed).demos
        scores = demos["checkpoint_returns"]
        curve = sorted((checkpoint_step(Path(name)), ret) for name, ret in scores.items())
        rows.append({"task": task.id, "algo": settings.algo, "total_timesteps": settings.total_timesteps,
                     "eval_episodes": settings.eval_episodes, "checkpoint_steps": [s for s, _ in curve],
                     "checkpoint_returns": [r for _, r in curve], "last_return": curve[-1][1],
                     "best_return": demos["best_return"], "baseline_return": demos["baseline_return"],
                     "demo_checkpoint_step": demos["checkpoint_step"],
                     "demo_returns": demos["demo_returns"], "demo_fraction": demos["fraction"]})
    return rows


def demonstrator_report(rows: list[dict[str, Any]], out: Path, name: str) -> None:
    """``demonstrators.json``, ``demonstrators.md`` and ``<name>_demonstrators.png``: each task's
    demonstrator curve (checkpoint returns over its steps) with the demo picked."""
    plt = pyplot()
    (out / "demonstrators.json").write_text(json.dumps(rows, indent=1))
    lines = ["| task | demonstrator | env steps | checkpoints | last checkpoint return | best checkpoint "
             "return | demo: checkpoint step | demo return | fraction of best |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['task']} | {r['algo']} | {r['total_timesteps']:,} | {len(r['checkpoint_steps'])} "
                     f"| {r['last_return']:.0f} | {r['best_return']:.0f} | {r['demo_checkpoint_step']:,} "
                     f"| {np.mean(r['demo_returns']):.0f} | {r['demo_fraction']:.2f} |")
    (out / "demonstrators.md").write_text("\n".join(lines) + "\n")
    figure, axes = plt.subplots(1, len(rows), figsize=(4.6 * len(rows), 3.6), squeeze=False)
    for axis, r in zip(axes[0], rows, strict=True):
        axis.plot(r["checkpoint_steps"], r["checkpoint_returns"], marker="o",
                  label=f"checkpoint (mean of {r['eval_episodes']} episodes)")
        axis.scatter([r["demo_checkpoint_step"]], [np.mean(r["demo_returns"])], color="tab:red", zorder=3,
                     label=f"demo (n={len(r['demo_returns'])})")
        axis.set(title=f"{r['task']}: {r['algo']} demonstrator", xlabel="env steps", ylabel="true return")
        axis.xaxis.set_major_formatter(lambda steps, _: f"{steps / 1000:.0f}k")
        axis.legend()
    figure.tight_layout()
    figure.savefig(out / f"{name}_demonstrators.png", dpi=100)
    plt.close(figure)


def ail_curve(path: Path, prefix: str) -> dict[int, float]:
    """An AIL run's true return per round from a run's ``metrics.jsonl``: the rows logged under
    ``prefix`` (``ail/`` or ``heldout_ail/``), the last one of a round that was trained again
    after a resume; empty when the file does not exist. A torn last line (a run still writing, or
    killed mid-line) is left out; a torn line before it is an error naming the file."""
    if not path.is_file():
        return {}
    curve = {int(row[f"{prefix}round"]): float(row[f"{prefix}true_return"])
             for row in read_json_lines(path, torn_tail=True) if f"{prefix}round" in row}
    return dict(sorted(curve.items()))


def ail_runs(config: ApecExperimentConfig, out: Path, demo_returns: dict[str, float]) -> list[dict[str, Any]]:
    """Per task, every AIL run that has logged a round (the held-out run, then each seed's own):
    the generator's true return per round (the mean of that round's training episodes), the first
    and last, the best and its round, the first round whose return passed the demo's
    (``demo_returns``, by task id, from ``demonstrator_rows``; NaN for a task without one), and the
    Spearman correlation between round and return over the ``n_rounds`` logged (NaN under 3)."""
    from scipy import stats

    runs = []
    for task in config.tasks:
        demo_return = demo_returns.get(task.id, float("nan"))
        shared = heldout_dir(config, task, out)
        logs = [("held-out run", shared / "metrics.jsonl", "heldout_ail/")] if shared is not None else []
        for seed in config.seeds:
            path = seed_dir(task, seed, out) / "metrics.jsonl"
            logs.append((f"seed {seed}", path, "ail/"))
            if shared is None:
                logs.append((f"seed {seed}'s held-out run", path, "heldout_ail/"))
        for run, path, prefix in logs:
            if not (curve := ail_curve(path, prefix)):
                continue
            rounds, returns = list(curve), list(curve.values())
            best = int(np.argmax(returns))
            passed = next((r for r, value in curve.items() if value > demo_return), None)
            runs.append({"task": task.id, "run": run, "n_rounds": len(rounds), "rounds": rounds,
                         "true_returns": returns, "first_return": returns[0], "last_return": returns[-1],
                         "best_return": returns[best], "best_round": rounds[best],
                         "demo_return": demo_return, "first_round_past_demo": passed,
                         "spearman": (float(stats.spearmanr(rounds, returns).statistic) if len(rounds) >= 3
                                      else float("nan"))})
    return runs


def ail_report(runs: list[dict[str, Any]], out: Path, name: str) -> None:
    """``ail_runs.json``, ``ail_runs.md`` and ``<name>_ail.png``: each AIL run's true return per
    round, a panel per task with its demo's return."""
    plt = pyplot()
    (out / "ail_runs.json").write_text(json.dumps(runs, indent=1))
    lines = ["| task | AIL run | rounds | first / last return | best return (round) | first round past "
             "the demo (demo return) | Spearman, round vs return (n rounds) |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in runs:
        passed = "never" if r["first_round_past_demo"] is None else str(r["first_round_past_demo"])
        lines.append(f"| {r['task']} | {r['run']} | {r['n_rounds']} | {r['first_return']:.0f} / "
                     f"{r['last_return']:.0f} | {r['best_return']:.0f} ({r['best_round']}) | {passed} "
                     f"({r['demo_return']:.0f}) | {r['spearman']:.2f} (n={r['n_rounds']}) |")
    (out / "ail_runs.md").write_text("\n".join(lines) + "\n")
    tasks = list(dict.fromkeys(r["task"] for r in runs))
    figure, axes = plt.subplots(1, len(tasks), figsize=(5.2 * len(tasks), 3.8), squeeze=False)
    for axis, task in zip(axes[0], tasks, strict=True):
        mine = [r for r in runs if r["task"] == task]
        for r in mine:
            axis.plot(r["rounds"], r["true_returns"], label=f"{r['run']} (n={r['n_rounds']} rounds)")
        axis.axhline(mine[0]["demo_return"], color="tab:red", linewidth=1, label="demonstration")
        axis.set(title=f"{task}: AIL generator", xlabel="round",
                 ylabel="true return (mean of the round's episodes)")
        axis.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(out / f"{name}_ail.png", dpi=100)
    plt.close(figure)


def report(config: ApecExperimentConfig, out: Path, name: str = "apec") -> int:
    """``rows.jsonl``, ``summary.json``, ``table.md``, the paper's claims as paired differences
    (``claims.json``, ``claims.md``), every arm by unit and APEC against its ablations
    (``units.md``, ``ablations.json``, ``ablations.md``: ``experiments/apec_arms.py``) and a
    ``<name>_<task>.png`` per task from the rows of ``collect_rows`` (a seed whose policies still
    train counts for its rewards); where the policies were evaluated during training, their curves per task
    (``<name>_<task>_policy.png`` and ``_policy_curves.json``); the demonstrators' table and curves
    (``demonstrator_report``) as soon as a task's demos exist, and the AIL runs' curves
    (``ail_report``) as soon as one has logged a round."""
    if demonstrators := demonstrator_rows(config, out):
        demonstrator_report(demonstrators, out, name)
    demo_returns = {r["task"]: float(np.mean(r["demo_returns"])) for r in demonstrators}
    if runs := ail_runs(config, out, demo_returns):
        ail_report(runs, out, name)
    rows = collect_rows(config, out)
    if not rows:
        print(f"no finished runs under {out}", file=sys.stderr)
        return 1
    from experiments.rows import write_rows  # by name: a script puts the repo root on sys.path first

    write_rows(out, rows)
    table = summarise(rows)
    (out / "summary.json").write_text(json.dumps(table, indent=2))
    (out / "table.md").write_text(markdown_table(table))
    found = claims(rows)
    (out / "claims.json").write_text(json.dumps(found, indent=2))
    (out / "claims.md").write_text(claims_markdown(found))
    from experiments.apec_arms import arms_report  # by name, as above

    arms_report(config, rows, out)
    for task in dict.fromkeys(e["task"] for e in table):
        demo_return = float(np.mean([r["demo_return"] for r in rows if r["task"] == task]))
        plot(table, task, demo_return, out / f"{name}_{file_name(task)}.png")
        if curves := curve_table(rows, task):
            (out / f"{name}_{file_name(task)}_policy_curves.json").write_text(json.dumps(curves, indent=1))
            plot_curves(curves, task, demo_return, out / f"{name}_{file_name(task)}_policy.png")
    print(json.dumps({"summary": str(out / "summary.json"), "table": str(out / "table.md")}))
    return 0

"""Does feedback of mixed quality help IPPO, and how much does bad feedback cost? (M3HF, ICML 2025)

One command (from the repository root):
    python -m experiments.m3hf [--config FILE] [key=value ...] [--report-only]
                               [--backend local|ray] [--workers N] [--address ADDR] [--resume]

Overcooked map A, lettuce-tomato salad, 3 agents, macro actions; every arm gets the same env-step
budget, (phases + 1) x generation_steps, and its seeds. Main arms: IPPO on the env reward; M3HF
with scripted good feedback; M3HF with a simulated teacher whose texts are half correct, half
wrong; M3HF with only wrong feedback. Ablation arms change the run config (``run:``) of an arm:
rollback, weight rule, shaping scale. Generation 0 is the same training in every arm of a seed
(no feedback yet), so the arms part only at phase 1. Each run is an ``rlkit m3hf`` run directory
(resumable: rerun to continue); each (arm, seed) is a unit of ``rlkit.scale`` (a process of its
own, or a Ray Tune trial), and ``--resume`` also skips the units already finished. Writes the
resolved config, ``metrics.jsonl`` / ``metrics.csv`` (one row per arm, seed and generation),
``m3hf.png`` / ``m3hf_ablations.png`` (ORIGINAL return against env steps, 95% t-intervals),
``summary.json`` and ``table.md`` (final return, area under the curve, env steps to a threshold
return, paired differences against IPPO).
"""

from __future__ import annotations

import csv
import importlib
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from rlkit.config import StrictModel, load_config, save_config
from rlkit.errors import ConfigError
from rlkit.m3hf.run_config import FeedbackSettings, M3HFConfig
from rlkit.persistence import atomic_open, atomic_write_json, read_json
from rlkit.scale.command import backend_from_args, exit_status, experiment_parser
from rlkit.scale.unit_graph import Unit
from rlkit.scale.units import Backend, UnitResult, run_units

ARM_LABELS = {
    "ippo": "IPPO (env reward)",
    "good": "M3HF, scripted good feedback",
    "half_wrong": "M3HF, 50% wrong feedback",
    "wrong": "M3HF, only wrong feedback",
}
ROW_KEYS = ("generation", "env_steps", "original_return", "shaped_return", "episode_length", "delivered",
            "train_original_return", "performance", "improved")


class ArmSettings(StrictModel):
    """One arm: its feedback, changes to the run config (ablations), its seeds (default: all)."""

    label: str | None = None
    group: Literal["main", "ablation"] = "main"
    feedback: FeedbackSettings = FeedbackSettings(source="none")
    run: dict[str, Any] = {}
    seeds: list[int] | None = None


class M3HFExperimentConfig(StrictModel):
    """``rows``: a committed rows file (``metrics.jsonl`` as this command writes it, e.g. under
    ``docs/results/``): an (arm, seed) whose rows it holds is finished, not run again, and its rows
    count where its run directory is gone (a run spanning machines loses no finished run)."""

    out_dir: str = "runs/m3hf"
    rows: str | None = None
    seeds: list[int] = [0, 1, 2]
    threshold: float = 25.0  # original return for "env steps to threshold" (chosen from the pilot)
    reference_arm: str = "ippo"  # paired differences (same seed, same generation 0) against it
    arms: dict[str, ArmSettings] = {"ippo": ArmSettings()}
    run: M3HFConfig = M3HFConfig()


def arm_config(config: M3HFExperimentConfig, arm: str, seed: int) -> M3HFConfig:
    settings = config.arms[arm]
    data = _merge(config.run.model_dump(mode="json"), settings.run)
    return M3HFConfig.model_validate(data | {"seed": seed, "feedback": settings.feedback.model_dump()})


def _merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in changes.items():
        nested = isinstance(value, dict) and isinstance(base.get(key), dict)
        merged[key] = _merge(base[key], value) if nested else value
    return merged


def arm_seeds(config: M3HFExperimentConfig, arm: str) -> list[int]:
    return config.arms[arm].seeds or config.seeds


def label(config: M3HFExperimentConfig, arm: str) -> str:
    return config.arms[arm].label or ARM_LABELS.get(arm, arm)


def jobs(config: M3HFExperimentConfig, out: Path) -> list[tuple[str, int, Path]]:
    """Main arms first, seed by seed, so a part-finished run already compares every main arm."""
    order = sorted(config.arms, key=lambda arm: config.arms[arm].group != "main")
    seeds = sorted({seed for arm in order for seed in arm_seeds(config, arm)})
    return [(arm, seed, out / arm / f"seed{seed}")
            for group in ("main", "ablation") for seed in seeds for arm in order
            if config.arms[arm].group == group and seed in arm_seeds(config, arm)]


def units(config: M3HFExperimentConfig, out: Path) -> list[Unit]:
    """One unit per (arm, seed) not finished in the committed rows, in ``jobs`` order; none
    depends on another."""
    base = {"config": config.model_dump(mode="json"), "out": str(out.absolute())}
    done = {(row["arm"], row["seed"]) for row in committed_rows(config)}
    return [Unit(f"{arm}-s{seed}", base | {"arm": arm, "seed": seed}) for arm, seed, _ in jobs(config, out)
            if (arm, seed) not in done]


def committed_rows(config: M3HFExperimentConfig) -> list[dict[str, Any]]:
    """The rows of ``config.rows`` (none when unset or not written yet) of this config's arms and
    seeds, each (arm, seed) whole: as many generations as its run has."""
    if config.rows is None or not Path(config.rows).is_file():
        return []
    rows = [json.loads(line) for line in Path(config.rows).read_text().splitlines() if line.strip()]
    kept = []
    for arm in config.arms:
        for seed in arm_seeds(config, arm):
            run = [row for row in rows if row.get("arm") == arm and row.get("seed") == seed]
            expected = arm_config(config, arm, seed).phases + 1
            if run and [row["generation"] for row in run] != list(range(expected)):
                raise ConfigError(f"{config.rows}: {arm} seed {seed} has generations "
                                  f"{[row['generation'] for row in run]}, expected 0 to {expected - 1}")
            kept += run
    return kept


def run_unit(unit: Unit, report: Any) -> dict[str, Any]:
    """One (arm, seed) in its own process: the ``rlkit m3hf`` run directory, started or resumed."""
    config = M3HFExperimentConfig.model_validate(unit.payload["config"])
    arm, seed = unit.payload["arm"], int(unit.payload["seed"])
    run_dir = Path(unit.payload["out"]) / arm / f"seed{seed}"
    return {"summary": run_one(config, arm, seed, run_dir)}


def run_all(config: M3HFExperimentConfig, out: Path, backend: Backend, resume: bool = False,
            only: Sequence[str] = ()) -> None:
    fn = importlib.import_module("experiments.m3hf").run_unit  # by name, not a pickled copy
    results = run_units(units(config, out), fn, out, backend, resume=resume, name="m3hf",
                        on_result=_echo, only=only)
    for key, result in results.items():
        if result.status != "done":
            print(f"unit {key} failed: {result.error}", file=sys.stderr)


def _echo(result: UnitResult) -> None:
    state = "done earlier" if result.skipped else result.status
    summary = (result.result or {}).get("summary", "")
    print(f"unit {result.id}: {state} ({result.seconds:.0f} s) {summary}".rstrip(), flush=True)


def run_one(config: M3HFExperimentConfig, arm: str, seed: int, run_dir: Path) -> str:
    """One arm and seed (one torch thread, quiet)."""
    import torch

    from rlkit.runners.m3hf import run_m3hf

    torch.set_num_threads(1)
    run_config = arm_config(config, arm, seed)
    save_config(run_config, run_dir / "config.yaml")
    state = run_m3hf(run_config, run_dir)
    returns = ", ".join(f"{row['original_return']:.1f}" for row in state["history"])
    return f"{arm} seed {seed}: original return by generation [{returns}]"


def collect_rows(config: M3HFExperimentConfig, out: Path) -> list[dict[str, Any]]:
    """One row per arm, seed and generation of every finished run (a run still going is left out):
    from the committed rows where they hold it, else from its run directory."""
    committed = committed_rows(config)
    done = {(row["arm"], row["seed"]) for row in committed}
    rows = []
    for arm in config.arms:
        for seed in arm_seeds(config, arm):
            if (arm, seed) in done:
                rows += [row for row in committed if (row["arm"], row["seed"]) == (arm, seed)]
                continue
            state_path = out / arm / f"seed{seed}" / "state.json"
            if not state_path.is_file():
                continue
            state = read_json(state_path)
            if state["completed"] < arm_config(config, arm, seed).phases:
                continue
            for row in state["history"]:
                quality = row["feedback_quality"]
                rows.append({
                    "arm": arm, "seed": seed, **{k: row[k] for k in ROW_KEYS},
                    "feedback": row["feedback"],
                    **{f"feedback_{q}": quality.get(q, 0) for q in ("correct", "irrelevant", "wrong")},
                    "pool_size": sum(row["pool_sizes"]),
                })
    return rows


def _runs(rows: list[dict[str, Any]], arm: str) -> dict[int, list[dict[str, Any]]]:
    runs: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        if r["arm"] == arm:
            runs.setdefault(r["seed"], []).append(r)
    return {seed: sorted(run, key=lambda r: r["generation"]) for seed, run in sorted(runs.items())}


def area_under_curve(run: list[dict[str, Any]]) -> float:
    """The evaluation's original return averaged over the env steps of the run (trapezoids between
    generations, from the end of generation 0 to the end): a curve's mean height."""
    steps = np.array([r["env_steps"] for r in run], dtype=np.float64)
    values = np.array([r["original_return"] for r in run], dtype=np.float64)
    return float(np.trapezoid(values, steps) / (steps[-1] - steps[0]))


def steps_to_threshold(run: list[dict[str, Any]], threshold: float) -> float:
    """Env steps at the end of the first generation whose evaluation reached ``threshold`` (NaN: never)."""
    return next((float(r["env_steps"]) for r in run if r["original_return"] >= threshold), math.nan)


def summarise(config: M3HFExperimentConfig, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per arm, over seeds: final return, area under the curve, steps to the threshold, deliveries,
    and paired differences against the reference arm (same seeds). No maximum over generations."""
    from experiments.stats import Spread  # by name: the script puts the repo root on sys.path first

    reference = _runs(rows, config.reference_arm)
    table = []
    for arm in config.arms:
        runs = _runs(rows, arm)
        if not runs:
            continue
        reached = [steps_to_threshold(run, config.threshold) for run in runs.values()]
        paired = [seed for seed in runs if seed in reference]
        entry = {
            "arm": arm, "label": label(config, arm), "group": config.arms[arm].group,
            "seeds": sorted(runs), "env_steps": next(iter(runs.values()))[-1]["env_steps"],
            "final": Spread.of([run[-1]["original_return"] for run in runs.values()]).as_dict(),
            "auc": Spread.of([area_under_curve(run) for run in runs.values()]).as_dict(),
            "delivered_final": Spread.of([run[-1]["delivered"] for run in runs.values()]).as_dict(),
            "reached_threshold": sum(math.isfinite(s) for s in reached),
            "steps_to_threshold": Spread.of(reached).as_dict(),
            "feedback": {q: sum(r[f"feedback_{q}"] for run in runs.values() for r in run)
                         for q in ("correct", "irrelevant", "wrong")},
        }
        if arm != config.reference_arm and paired:
            entry["paired_seeds"] = paired
            final = [runs[s][-1]["original_return"] - reference[s][-1]["original_return"] for s in paired]
            entry["final_minus_reference"] = Spread.of(final).as_dict()
            entry["auc_minus_reference"] = Spread.of(
                [area_under_curve(runs[s]) - area_under_curve(reference[s]) for s in paired]).as_dict()
        table.append(entry)
    return table


def _cell(spread: dict[str, float], digits: int = 1) -> str:
    from experiments.stats import Spread  # by name: the script puts the repo root on sys.path first

    low, high = spread["ci95_low"], spread["ci95_high"]
    return Spread(spread["mean"], spread["sd"], int(spread["n"]), low, high).cell(digits)


def markdown_table(config: M3HFExperimentConfig, table: list[dict[str, Any]]) -> str:
    lines = [
        f"Mean [95% t-interval] (n seeds). Threshold for 'steps to threshold': evaluation return >= "
        f"{config.threshold:g}; paired differences are against {label(config, config.reference_arm)} on "
        "the same seeds.",
        "",
        "| arm | env steps | final return | area under curve | final deliveries (share of games) | "
        "reached threshold | thousand env steps to threshold (seeds that reached it) | final − reference | "
        "AUC − reference | feedback texts (correct / irrelevant / wrong) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for e in table:
        f = e["feedback"]
        steps = e["steps_to_threshold"]
        cells = [
            e["label"], f"{e['env_steps']:,}", _cell(e["final"]), _cell(e["auc"]),
            _cell(e["delivered_final"], 2), f"{e['reached_threshold']}/{len(e['seeds'])}",
            _cell({k: v / 1e3 if k != "n" else v for k, v in steps.items()}, 0) if steps["n"] else "—",
            _cell(e["final_minus_reference"]) if "final_minus_reference" in e else "—",
            _cell(e["auc_minus_reference"]) if "auc_minus_reference" in e else "—",
            f"{f['correct']} / {f['irrelevant']} / {f['wrong']}",
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(config: M3HFExperimentConfig, rows: list[dict[str, Any]], path: Path, group: str = "main") -> None:
    """Evaluation return against env steps (left) and each arm's paired difference from the
    reference arm on the seeds both ran (right): mean and 95% t-interval over seeds, n in the
    legends."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, diff_ax) = plt.subplots(1, 2, figsize=(13, 4.8))
    reference = _runs(rows, config.reference_arm)
    for arm in config.arms:
        runs = _runs(rows, arm)
        if config.arms[arm].group != group or not runs:
            continue
        steps = [r["env_steps"] for r in next(iter(runs.values()))]
        line = _band(ax, steps, {seed: [r["original_return"] for r in run] for seed, run in runs.items()},
                     f"{label(config, arm)} (n={len(runs)})")
        paired = {seed: [r["original_return"] - ref["original_return"]
                         for r, ref in zip(run, reference[seed], strict=True)]
                  for seed, run in runs.items() if seed in reference and len(reference[seed]) == len(run)}
        if arm != config.reference_arm and paired:
            _band(diff_ax, steps, paired, f"{label(config, arm)} (n={len(paired)} seeds)",
                  color=line.get_color())
    ax.axhline(config.threshold, color="grey", lw=0.8, ls=":", label=f"threshold {config.threshold:g}")
    diff_ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_ylabel("original env return (evaluation)")
    diff_ax.set_ylabel(f"minus {label(config, config.reference_arm)}, same seed")
    for axis, title in ((ax, "return"), (diff_ax, "paired difference")):
        axis.set_xlabel("env steps (all games)")
        axis.set_title(f"{title}: mean and 95% t-interval over seeds", fontsize=10)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    fig.suptitle(f"M3HF on Overcooked A, lettuce-tomato, 3 agents ({group} arms)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _band(ax: Any, steps: list[int], values: dict[int, list[float]], name: str,
          color: str | None = None) -> Any:
    """One curve of per-seed values at each generation's env steps: the mean, and its 95%
    t-interval as a band when there are two seeds or more; returns the line."""
    from experiments.stats import Spread  # by name: the script puts the repo root on sys.path first

    spreads = [Spread.of([per_seed[i] for per_seed in values.values() if i < len(per_seed)])
               for i in range(len(steps))]
    (line,) = ax.plot(steps, [s.mean for s in spreads], marker="o", label=name, color=color)
    if len(values) > 1:
        ax.fill_between(steps, [s.low for s in spreads], [s.high for s in spreads],
                        color=line.get_color(), alpha=0.15)
    return line


def write_metrics(rows: list[dict[str, Any]], out: Path) -> None:
    with atomic_open(out / "metrics.jsonl", "w") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in rows)
    with atomic_open(out / "metrics.csv", "w") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    parser = experiment_parser(__doc__, Path(__file__).parent / "configs/m3hf.yaml",
                               "rebuild metrics, table and plot from the finished runs; no training",
                               "skip the units already finished in out_dir (unfinished runs resume)")
    args = parser.parse_args(argv)
    backend = backend_from_args(args)
    config = load_config(M3HFExperimentConfig, args.config, args.overrides)
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    save_config(config, out / "config.yaml")
    if not args.report_only:
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        run_all(config, out, backend, resume=args.resume, only=args.only)
    rows = collect_rows(config, out)
    if not rows:
        print(f"no finished runs under {out}", file=sys.stderr)
        return 1
    write_metrics(rows, out)
    table = summarise(config, rows)
    atomic_write_json(out / "summary.json", table)
    with atomic_open(out / "table.md", "w") as handle:
        handle.write(markdown_table(config, table))
    plot(config, rows, out / "m3hf.png", "main")
    if any(arm.group == "ablation" for arm in config.arms.values()):
        plot(config, rows, out / "m3hf_ablations.png", "ablation")
    print(markdown_table(config, table))
    print(json.dumps({"table": str(out / "table.md"), "plot": str(out / "m3hf.png")}))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `experiments` by name
    sys.exit(exit_status(main, Path(__file__).name))

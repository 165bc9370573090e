"""Does feedback of mixed quality help IPPO, and how much does bad feedback cost? (M3HF, ICML 2025)

One command:  python experiments/m3hf.py [--config FILE] [key=value ...] [--report-only] [--workers N]

Overcooked map A, lettuce-tomato salad, 3 agents, macro actions; every arm gets the same env-step
budget, (phases + 1) x generation_steps, and the same seeds. Arms: IPPO on the env reward; M3HF
with scripted good feedback; M3HF with a simulated teacher whose texts are half correct, half
wrong; M3HF with only wrong feedback. Generation 0 is the same training in every arm of a seed
(no feedback yet), so the arms part only at phase 1. Each run is an ``rlkit m3hf`` run directory
(resumable: rerun to continue). Writes the resolved config, ``metrics.jsonl`` / ``metrics.csv``
(one row per arm, seed and generation), ``m3hf.png`` (ORIGINAL return against env steps) and
``table.md``.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from rlkit.config import StrictModel, experiment_parser, load_config, save_config
from rlkit.m3hf.run_config import FeedbackSettings, M3HFConfig
from rlkit.persistence import atomic_open, atomic_write_json

ARM_LABELS = {
    "ippo": "IPPO (env reward)",
    "good": "M3HF, scripted good feedback",
    "half_wrong": "M3HF, 50% wrong feedback",
    "wrong": "M3HF, only wrong feedback",
}


HISTORY_KEYS = ("generation", "env_steps", "original_return", "shaped_return")


class M3HFExperimentConfig(StrictModel):
    out_dir: str = "runs/m3hf"
    seeds: list[int] = [0, 1, 2]
    arms: dict[str, FeedbackSettings] = {"ippo": FeedbackSettings(source="none")}
    run: M3HFConfig = M3HFConfig()


def arm_config(config: M3HFExperimentConfig, arm: str, seed: int) -> M3HFConfig:
    return config.run.model_copy(update={"seed": seed, "feedback": config.arms[arm]})


def run_one(config: M3HFExperimentConfig, arm: str, seed: int, run_dir: Path) -> str:
    """One arm and seed (in a worker process: one torch thread, quiet)."""
    import torch

    from rlkit.runners.m3hf import run_m3hf

    torch.set_num_threads(1)
    run_config = arm_config(config, arm, seed)
    save_config(run_config, run_dir / "config.yaml")
    state = run_m3hf(run_config, run_dir)
    returns = ", ".join(f"{row['original_return']:.1f}" for row in state["history"])
    return f"{arm} seed {seed}: original return by generation [{returns}]"


def collect_rows(config: M3HFExperimentConfig, out: Path) -> list[dict[str, Any]]:
    rows = []
    for arm in config.arms:
        for seed in config.seeds:
            state_path = out / arm / f"seed{seed}" / "state.json"
            if not state_path.is_file():
                continue
            for row in json.loads(state_path.read_text())["history"]:
                quality = row["feedback_quality"]
                rows.append(
                    {
                        "arm": arm,
                        "seed": seed,
                        **{k: row[k] for k in HISTORY_KEYS},
                        "train_original_return": row["train_original_return"],
                        "feedback": row["feedback"],
                        **{f"feedback_{q}": quality.get(q, 0) for q in ("correct", "irrelevant", "wrong")},
                        "pool_size": sum(row["pool_sizes"]),
                    }
                )
    return rows


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per arm, over seeds: final, best and mean-over-phases original return (mean and sd)."""
    table = []
    for arm in dict.fromkeys(r["arm"] for r in rows):
        per_seed: dict[int, list[dict[str, Any]]] = {}
        for r in rows:
            if r["arm"] == arm:
                per_seed.setdefault(r["seed"], []).append(r)
        runs = [sorted(v, key=lambda r: r["generation"]) for v in per_seed.values()]
        final = [run[-1]["original_return"] for run in runs]
        best = [max(r["original_return"] for r in run) for run in runs]
        phases = [np.mean([r["original_return"] for r in run if r["generation"] > 0]) for run in runs]
        table.append(
            {
                "arm": arm,
                "seeds": len(runs),
                "generations": len(runs[0]),
                "env_steps": runs[0][-1]["env_steps"],
                "final": (float(np.mean(final)), float(np.std(final))),
                "best": (float(np.mean(best)), float(np.std(best))),
                "phase_mean": (float(np.mean(phases)), float(np.std(phases))),
                "feedback": {q: sum(r[f"feedback_{q}"] for run in runs for r in run)
                             for q in ("correct", "irrelevant", "wrong")},
            }
        )
    return table


def markdown_table(table: list[dict[str, Any]]) -> str:
    def cell(pair: tuple[float, float]) -> str:
        return f"{pair[0]:.1f} ± {pair[1]:.1f}"

    lines = [
        "| arm | seeds | env steps | final original return | best generation | mean over phases 1.. | "
        "feedback texts (correct / irrelevant / wrong) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for e in table:
        f = e["feedback"]
        cells = [
            ARM_LABELS.get(e["arm"], e["arm"]), str(e["seeds"]), f"{e['env_steps']:,}", cell(e["final"]),
            cell(e["best"]), cell(e["phase_mean"]), f"{f['correct']} / {f['irrelevant']} / {f['wrong']}",
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for arm in dict.fromkeys(r["arm"] for r in rows):
        steps = sorted({r["env_steps"] for r in rows if r["arm"] == arm})
        values = np.array(
            [[r["original_return"] for r in rows if r["arm"] == arm and r["env_steps"] == s] for s in steps],
            dtype=object,
        )
        mean = np.array([np.mean(v) for v in values])
        sem = np.array([np.std(v) / np.sqrt(len(v)) for v in values])
        (line,) = ax.plot(steps, mean, marker="o", label=ARM_LABELS.get(arm, arm))
        ax.fill_between(steps, mean - sem, mean + sem, color=line.get_color(), alpha=0.2)
    ax.set_xlabel("env steps (all games)")
    ax.set_ylabel("original env return (eval, mean ± s.e. over seeds)")
    ax.set_title("M3HF on Overcooked A, lettuce-tomato, 3 agents")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_metrics(rows: list[dict[str, Any]], out: Path) -> None:
    with atomic_open(out / "metrics.jsonl", "w") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in rows)
    with atomic_open(out / "metrics.csv", "w") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    parser = experiment_parser(__doc__, Path(__file__).parent / "configs/m3hf.yaml",
                               "rebuild metrics, table and plot from the finished runs; no training")
    parser.add_argument("--workers", type=int, default=1,
                        help="runs in parallel (one process and one torch thread each)")
    args = parser.parse_args(argv)
    config = load_config(M3HFExperimentConfig, args.config, args.overrides)
    unknown = sorted(set(config.arms) - set(ARM_LABELS))
    if unknown:
        print(f"note: arms {unknown} have no label; their names are used", file=sys.stderr)
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    save_config(config, out / "config.yaml")
    if not args.report_only:
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        jobs = [(arm, seed, out / arm / f"seed{seed}") for seed in config.seeds for arm in config.arms]
        if args.workers <= 1:
            for arm, seed, run_dir in jobs:
                print(run_one(config, arm, seed, run_dir), flush=True)
        else:
            with ProcessPoolExecutor(max_workers=args.workers) as pool:
                futures = [pool.submit(run_one, config, arm, seed, run_dir) for arm, seed, run_dir in jobs]
                for future in futures:
                    print(future.result(), flush=True)
    rows = collect_rows(config, out)
    if not rows:
        print(f"no finished runs under {out}", file=sys.stderr)
        return 1
    write_metrics(rows, out)
    table = summarise(rows)
    atomic_write_json(out / "summary.json", table)
    with atomic_open(out / "table.md", "w") as handle:
        handle.write(markdown_table(table))
    plot(rows, out / "m3hf.png")
    print(markdown_table(table))
    print(json.dumps({"table": str(out / "table.md"), "plot": str(out / "m3hf.png")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``make demo`` over several seeds: does the learned-reward agent beat random on every seed, and
how close does it come to the same agent on the true reward?

One command:  python experiments/demo_seeds.py [--seeds 0 1 2 3 4] [--out runs/demo_seeds]
                  [--results docs/results] [--report-only] [key=value ...]

Each seed is one ``rlkit demo seed=<s> env.seed=<s>`` run (its defaults, or the overrides given)
in ``out/seed<s>``; a seed whose ``summary.json`` is there is not run again. Then, from the
summaries: one row per (seed, arm) in ``results/demo_rows.jsonl``, the spread over seeds per arm
(mean, sample sd, 95% t-interval, n) in ``results/demo_summary.json``, the paired differences
(learned - true reward, learned - random) over seeds, the figure ``results/demo.png``, and the
tables of ``results/demo.md`` between its ``<!-- demo-tables -->`` markers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from rlkit.persistence import atomic_write_json, read_json

START, END = "<!-- demo-tables -->", "<!-- /demo-tables -->"


def run_seeds(seeds: list[int], out: Path, overrides: list[str]) -> None:
    """``rlkit demo`` per seed, skipping seeds already finished in ``out``."""
    for seed in seeds:
        folder = out / f"seed{seed}"
        if (folder / "summary.json").is_file():
            continue
        # a process of its own, as `make demo` runs: it pins torch's CPU kernels before torch loads
        command = [sys.executable, "-m", "rlkit.cli", "demo", f"seed={seed}", f"env.seed={seed}", *overrides,
                   "--run-dir", str(folder), "--logger", "jsonl,wandb"]
        code = subprocess.run(command, check=False).returncode
        if code:
            raise SystemExit(f"rlkit demo seed={seed} ended with status {code}")


def rows_of(seeds: list[int], out: Path) -> list[dict[str, Any]]:
    """One row per (seed, arm) of the finished seeds' summaries."""
    rows = []
    for seed in seeds:
        summary = read_json(out / f"seed{seed}" / "summary.json")
        unpinned = sorted(name for name, value in summary["cpu_kernels"].items() if not value)
        if unpinned:  # then its floats are not what `make demo` gives on another machine
            raise SystemExit(f"{out / f'seed{seed}'}: ran with {', '.join(unpinned)} unset (torch "
                             "was loaded before `rlkit demo` could pin its CPU kernels); run it again "
                             "as its own process")
        for arm, stats in summary["arms"].items():
            rows.append({"seed": seed, "arm": arm, "true_return": stats["mean"], "episode_sd": stats["sd"],
                         "episodes": stats["n"], "actions": summary["evaluation"]["actions"],
                         "labels": summary["reward_model"]["labels"],
                         "last_fresh_accuracy": summary["reward_model"]["last_fresh_accuracy"],
                         "seconds": summary["seconds"]["total"]})
    return rows


def spreads(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per arm, the spread of the per-seed returns; paired differences of the learned arm."""
    from experiments.stats import Spread
    from rlkit.runners.demo import LEARNED, RANDOM, TRUE

    by_arm: dict[str, dict[int, float]] = {}
    for row in rows:
        by_arm.setdefault(row["arm"], {})[row["seed"]] = row["true_return"]
    arms = {arm: Spread.of(list(values.values())).as_dict() for arm, values in by_arm.items()}
    result: dict[str, Any] = {"arms": arms, "differences": {}}
    learned = by_arm[LEARNED]
    for other, name in ((TRUE, "learned - true reward"), (RANDOM, "learned - random")):
        if other in by_arm:
            paired = [learned[s] - by_arm[other][s] for s in learned if s in by_arm[other]]
            result["differences"][name] = Spread.of(paired).as_dict()
    result["every_seed_above_random"] = all(learned[s] > by_arm[RANDOM][s] for s in learned)
    return result


def tables(rows: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    """The page's tables: per seed and arm, then over seeds."""
    from experiments.stats import Spread
    from rlkit.runners.demo import ARM_KEYS

    arms = [arm for arm in ARM_KEYS if any(row["arm"] == arm for row in rows)]
    seeds = sorted({row["seed"] for row in rows})
    first = rows[0]
    lines = [f"True return per seed: mean ± sd over {first['episodes']} evaluation episodes of each "
             f"agent ({first['actions']}; the random policy's over as many random episodes).", "",
             "| seed | " + " | ".join(arms) + " | labels | reward model, last round's new pairs | wall (s) |",
             "| ---: | " + " | ".join("---:" for _ in arms) + " | ---: | ---: | ---: |"]
    for seed in seeds:
        mine = {row["arm"]: row for row in rows if row["seed"] == seed}
        any_row = next(iter(mine.values()))
        returns = " | ".join(f"{mine[a]['true_return']:.1f} ± {mine[a]['episode_sd']:.1f}" for a in arms)
        lines.append(f"| {seed} | {returns} | {any_row['labels']} | {any_row['last_fresh_accuracy']:.3f} "
                     f"| {any_row['seconds']:.0f} |")
    lines += ["", f"Over seeds (n = {len(seeds)} seeds): mean of the per-seed returns, sample sd (ddof = 1), "
              "95% t-interval of the mean.", "",
              "| | mean | sd | 95% interval | n |", "| --- | ---: | ---: | --- | ---: |"]
    ordered = [(arm, summary["arms"][arm]) for arm in arms]
    for name, spread in [*ordered, *summary["differences"].items()]:
        s = Spread(spread["mean"], spread["sd"], spread["n"], spread["ci95_low"], spread["ci95_high"])
        lines.append(f"| {name} | {s.mean:.1f} | {s.sd:.1f} | [{s.low:.1f}, {s.high:.1f}] | {s.n} |")
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], out: Path, path: Path) -> None:
    """Left: every seed's training curves of both agents; right: each arm's evaluated return per
    seed, with the mean over seeds and its 95% interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from experiments.stats import Spread
    from rlkit.runners.demo import ARM_KEYS, LEARNED, RANDOM, TRUE

    colours = {LEARNED: "tab:blue", TRUE: "tab:green", RANDOM: "tab:red"}
    seeds = sorted({row["seed"] for row in rows})
    figure, axes = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    for seed in seeds:
        summary = read_json(out / f"seed{seed}" / "summary.json")
        for arm, log in summary["training_episodes"].items():
            values = np.asarray(log["true_returns"])
            window = 20
            if len(values) >= window:
                smooth = np.convolve(values, np.ones(window) / window, mode="valid")
                label = f"{arm} (mean of {window} training episodes)" if seed == seeds[0] else None
                axes[0].plot(log["timesteps"][window - 1:], smooth, color=colours[arm], alpha=0.6,
                             label=label)
    axes[0].set(xlabel="env steps", ylabel="true episode return",
                title=f"both agents while training, one line per seed, n = {len(seeds)} seeds")
    axes[0].legend(fontsize=8)
    arms = [arm for arm in ARM_KEYS if any(row["arm"] == arm for row in rows)]
    for x, arm in enumerate(arms):
        values = [row["true_return"] for row in rows if row["arm"] == arm]
        spread = Spread.of(values)
        axes[1].plot(np.full(len(values), x) + np.linspace(-0.12, 0.12, len(values)), values, "o",
                     color=colours.get(arm, "black"), alpha=0.7)
        interval = [[spread.mean - spread.low], [spread.high - spread.mean]]
        axes[1].errorbar([x + 0.3], [spread.mean], yerr=interval, fmt="s", capsize=5, color="black")
    axes[1].set_xticks(range(len(arms)), [arm.replace(" (", "\n(") for arm in arms], fontsize=8)
    episodes = rows[0]["episodes"]
    axes[1].set(ylabel="true return",
                title=f"evaluated: each seed's mean of {episodes} episodes\n({rows[0]['actions']}); "
                      f"black: mean over\nn = {len(seeds)} seeds, 95% t-interval")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="rlkit demo's config overrides")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--out", type=Path, default=Path("runs/demo_seeds"))
    parser.add_argument("--results", type=Path, default=Path("docs/results"))
    parser.add_argument("--report-only", action="store_true", help="only the report, from finished seeds")
    args = parser.parse_args(argv)
    from experiments.rows import write_page_section
    from rlkit.config import load_config
    from rlkit.factories.configs import DemoConfig

    load_config(DemoConfig, None, args.overrides)  # a bad setting is named before any seed runs
    os.environ.setdefault("WANDB_MODE", "offline")
    if not args.report_only:
        run_seeds(args.seeds, args.out, args.overrides)
    rows = rows_of(args.seeds, args.out)
    summary = spreads(rows) | {"seeds": args.seeds, "overrides": args.overrides,
                               "machine": {"cpu": platform.processor() or platform.machine(),
                                           "load_average_at_report": os.getloadavg()[0]}}
    args.results.mkdir(parents=True, exist_ok=True)
    with (args.results / "demo_rows.jsonl").open("w") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in rows)
    atomic_write_json(args.results / "demo_summary.json", summary)
    plot(rows, args.out, args.results / "demo.png")
    write_page_section(args.results / "demo.md", START, END, tables(rows, summary))
    print(json.dumps({"every_seed_above_random": summary["every_seed_above_random"],
                      **{arm: round(s["mean"], 1) for arm, s in summary["arms"].items()}}))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `experiments` by name
    from rlkit.scale.command import exit_status

    sys.exit(exit_status(main, Path(__file__).name))

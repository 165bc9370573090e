"""Does APEC's reward generalise better than D-REX's? (Zhang et al., ICML 2025, on MuJoCo.)

One command:  python experiments/apec.py [--config FILE] [key=value ...] [--report-only]

Per task and seed, ``rlkit apec``'s pipeline: one suboptimal demonstration (a demonstrator
checkpoint near a fraction of its best return; trained once per task and shared by the seeds),
adversarial imitation with a checkpoint per round, rollouts of every checkpoint, then five reward
models on the same data budget: APEC (index gap + OT filter), gap only, OT only, D-REX, and the
AIL discriminator's own reward. Each is scored on a held-out set (random, AIL and demonstrator
trajectories): preference accuracy, per-step and return correlations; policies trained on the
learned rewards report their true return. Every run directory is resumable: rerun to continue.

The work runs as units through ``rlkit.scale`` (``--backend local``: a process each on this
machine; ``--backend ray``: Ray Tune trials, on a cluster with ``--address``): one unit per task
trains its demonstrator and saves the demos, then one unit per (task, seed) runs the pipeline on
them. ``--resume`` skips the units already finished in ``out_dir``.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from pydantic import model_validator

from rlkit.apec.config import ApecConfig
from rlkit.apec.demonstrator import checkpoint_step
from rlkit.apec.rollouts import sequential_map
from rlkit.config import StrictModel, apply_overrides, load_config, save_config
from rlkit.errors import ConfigError
from rlkit.logging import make_logger
from rlkit.runners.apec import REWARD_METRICS, run_apec, run_demos, run_heldout, venv_factory
from rlkit.scale.command import backend_from_args, experiment_parser
from rlkit.scale.tasks import close_map, task_map
from rlkit.scale.units import Backend, Unit, run_units
from rlkit.types import TaskMap

METRICS = (("accuracy", "held-out accuracy"), ("step_pearson", "per-step reward r"),
           ("return_pearson", "segment return r"), ("trajectory_pearson", "trajectory return r"),
           ("accuracy_outside_ail", "accuracy, non-AIL trajectories"),
           ("trajectory_pearson_outside_ail", "trajectory r, non-AIL"))
PAIR_COUNTS = ("n_pairs", "n_pairs_outside_ail")
DIAGNOSTICS = ("ail_spearman", "label_agreement")


class TaskSettings(StrictModel):
    """One task: its env id and any overrides of the shared pipeline config (dotted keys)."""

    id: str
    overrides: list[str] = []


class ApecExperimentConfig(StrictModel):
    """``shared_heldout``: one held-out set per task, shared by its seeds (the reference's one test
    buffer), built by a unit of its own from the demo seed's pipeline config (its AIL run at
    ``pipeline.heldout.ail_seed``, default the demo seed + 1000, which must be none of ``seeds``);
    false: every seed builds its own (its seed + 1000)."""

    out_dir: str = "runs/apec"
    seeds: list[int] = [0, 1, 2]
    demos_from_seed: int | None = None  # share this seed's demos (default: the first seed's)
    shared_heldout: bool = False
    tasks: list[TaskSettings] = [TaskSettings(id="Hopper-v5")]
    pipeline: ApecConfig = ApecConfig()

    @model_validator(mode="after")
    def _heldout_run_is_no_seed(self) -> ApecExperimentConfig:
        if self.shared_heldout:
            for task in self.tasks:
                held_out = task_config(self, task, self.demo_seed).heldout_ail_seed
                if held_out in self.seeds:
                    raise ConfigError(f"{task.id}: the shared held-out AIL run's seed {held_out} is one "
                                      "of the seeds; set pipeline.heldout.ail_seed to another")
        return self

    @property
    def demo_seed(self) -> int:
        """The seed whose run dir trains the task's demonstrator (the seeds link to its demos)."""
        return self.seeds[0] if self.demos_from_seed is None else self.demos_from_seed


def task_config(config: ApecExperimentConfig, task: TaskSettings, seed: int) -> ApecConfig:
    base = config.pipeline.model_dump(mode="json")
    base["env"]["id"], base["seed"] = task.id, seed
    return ApecConfig.model_validate(apply_overrides(base, list(task.overrides)))


def demo_dir(config: ApecExperimentConfig, task: TaskSettings, out: Path) -> Path:
    return out / task.id / f"seed{config.demo_seed}"


def heldout_dir(config: ApecExperimentConfig, task: TaskSettings, out: Path) -> Path | None:
    """The task's shared held-out set (None: each seed's own, in its run dir)."""
    return out / task.id / "heldout" if config.shared_heldout else None


def run_task_demos(config: ApecExperimentConfig, task: TaskSettings, out: Path) -> dict[str, Any]:
    """The task's demonstrator and demos, in the demo seed's run dir (the seeds link to them)."""
    first = demo_dir(config, task, out)
    pipeline = task_config(config, task, config.demo_seed)
    first.mkdir(parents=True, exist_ok=True)
    logger = make_logger(first / "demos", backends=("jsonl",))
    try:
        demos = run_demos(pipeline.env, pipeline.demos, config.demo_seed, first / "demos", logger)
    finally:
        logger.close()
    return {"demos": str(first / "demos" / "demos.npz"),
            "returns": [float(t.ret) for t in demos]}


def run_task_heldout(config: ApecExperimentConfig, task: TaskSettings, out: Path,
                     task_map: TaskMap | None = None) -> dict[str, Any]:
    """The task's shared held-out set, from the demo seed's config and demos (``heldout_dir``)."""
    folder = heldout_dir(config, task, out)
    if folder is None:
        raise ConfigError("a held-out unit runs only with shared_heldout: true")
    first = demo_dir(config, task, out)
    pipeline = task_config(config, task, config.demo_seed)
    folder.mkdir(parents=True, exist_ok=True)
    logger = make_logger(folder, backends=("jsonl",))
    try:
        demos = run_demos(pipeline.env, pipeline.demos, config.demo_seed, first / "demos", logger)
        store, pairs, _ = run_heldout(pipeline, venv_factory(pipeline.env), demos, first / "demos",
                                      folder, logger, task_map or sequential_map)
    finally:
        logger.close()
    return {"trajectories": len(store), "pairs": len(pairs), "ail_seed": pipeline.heldout_ail_seed}


def run_seed(config: ApecExperimentConfig, task: TaskSettings, seed: int, out: Path,
             task_map: TaskMap | None = None) -> list[dict[str, Any]]:
    """One (task, seed): the pipeline on the task's shared demos; its rows land in its run dir.
    ``task_map`` runs its checkpoint and held-out rollouts (default: in this process)."""
    first = demo_dir(config, task, out)
    run_dir = out / task.id / f"seed{seed}"
    run_dir.mkdir(parents=True, exist_ok=True)
    if run_dir != first and not (run_dir / "demos").exists():
        if not (first / "demos" / "demos.npz").is_file():
            raise SystemExit(f"{first}/demos: run {first.name} first; the seeds share its demos")
        (run_dir / "demos").symlink_to((first / "demos").resolve(), target_is_directory=True)
    shared = heldout_dir(config, task, out)
    if shared is not None and not (run_dir / "heldout").exists():
        if not (shared / "store.npz").is_file():
            raise SystemExit(f"{shared}: run the task's held-out unit first; the seeds share it")
        (run_dir / "heldout").symlink_to(shared.resolve(), target_is_directory=True)
    pipeline = task_config(config, task, seed)
    save_config(pipeline, run_dir / "config.yaml")
    logger = make_logger(run_dir, backends=("jsonl", "wandb"), project="rlkit-apec",
                         config=pipeline.model_dump(mode="json"))
    try:
        results = run_apec(pipeline, run_dir, logger, task_map or sequential_map)
    finally:
        logger.close()
    rows = seed_rows(task.id, seed, results)
    (run_dir / "rows.json").write_text(json.dumps(rows, indent=1))
    return rows


def seed_rows(task_id: str, seed: int, results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per method of a (task, seed)'s ``run_apec`` results; without a policy (not trained,
    or not yet: ``reward_metrics.json``) its return is NaN and its curve empty."""
    rows = []
    for method, metrics in results["methods"].items():
        policy = metrics.get("policy", {})
        rows.append({"task": task_id, "seed": seed, "method": method,
                     **{key: metrics[key] for key, _ in METRICS},
                     **{key: metrics[key] for key in PAIR_COUNTS if key in metrics},
                     "ail_spearman": results["ail_progress"]["spearman_checkpoints"],
                     "label_agreement": metrics.get("label_agreement", float("nan")),
                     "policy_return": policy.get("final_true_return", float("nan")),
                     "policy_curve": {"timesteps": policy.get("eval_timesteps", []),
                                      "true_returns": policy.get("eval_true_returns", [])},
                     "demo_return": float(np.mean(results["demos"]["returns"])),
                     "demo_fraction": results["demos"].get("fraction", float("nan"))})
    return rows


def units(config: ApecExperimentConfig, out: Path, backend: Backend | None = None) -> list[Unit]:
    """Per task, in task order: its demonstrator unit, its held-out unit (``shared_heldout``) after
    it, then one unit per seed after both. Locally a unit starts as soon as its prerequisites are
    done, the first ready in this order, so a task's seeds go before the next task's. On the ray
    backend a (task, seed) unit runs its rollouts as Ray tasks (``rlkit.scale.tasks``)."""
    base = {"config": config.model_dump(mode="json"), "out": str(out.absolute())}
    if backend is not None and backend.name == "ray":
        base["tasks"] = {"name": "ray", "address": backend.address, "num_cpus": backend.num_cpus,
                         "resources": dict(backend.resources)}
    out_units: list[Unit] = []
    for i, task in enumerate(config.tasks):
        name = _name(task.id)
        task_units = [Unit(f"demos-{i}-{name}", base | {"kind": "demos", "task": i})]
        if config.shared_heldout:
            task_units.append(Unit(f"heldout-{i}-{name}", base | {"kind": "heldout", "task": i},
                                   after=(task_units[0].id,)))
        prerequisites = tuple(u.id for u in task_units)
        seeds = [Unit(f"apec-{i}-{name}-s{seed}", base | {"kind": "seed", "task": i, "seed": seed},
                      after=prerequisites) for seed in config.seeds]
        out_units += task_units + seeds
    return out_units


def run_unit(unit: Unit, report: Any) -> dict[str, Any]:
    """One unit in its own process: a task's demos, or one (task, seed) of the pipeline."""
    torch.set_num_threads(1)  # small nets: one thread is fastest and leaves a core for the envs
    payload = unit.payload
    config = ApecExperimentConfig.model_validate(payload["config"])
    task, out = config.tasks[payload["task"]], Path(payload["out"])
    if payload["kind"] == "demos":
        return run_task_demos(config, task, out)
    tasks = task_map(Backend(**payload["tasks"]) if "tasks" in payload else None)
    try:
        if payload["kind"] == "heldout":
            return run_task_heldout(config, task, out, tasks)
        return {"rows": run_seed(config, task, payload["seed"], out, tasks)}
    finally:
        close_map(tasks)


def _name(task_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in task_id)


def run_all(config: ApecExperimentConfig, out: Path, backend: Backend, resume: bool = False,
            name: str = "apec") -> None:
    fn = importlib.import_module("experiments.apec").run_unit  # by name, not a pickled copy
    results = run_units(units(config, out, backend), fn, out, backend, resume=resume, name=name,
                        on_result=lambda r: print(
                            f"unit {r.id}: {'done earlier' if r.skipped else r.status} "
                            f"({r.seconds:.0f} s){': ' + (r.error or '') if r.status == 'failed' else ''}",
                            file=sys.stderr))
    if any(r.status != "done" for r in results.values()):
        print("some units did not finish; rerun with --resume to finish them", file=sys.stderr)


def collect_rows(config: ApecExperimentConfig, out: Path) -> list[dict[str, Any]]:
    """The rows of every (task, seed) of the config whose rewards are scored, in config order:
    a finished one's ``rows.json``, else, while its policies train, its ``reward_metrics.json``
    (``"policies_done": False``, no policy return)."""
    rows = []
    for task in config.tasks:
        for seed in config.seeds:
            run_dir = out / task.id / f"seed{seed}"
            if (run_dir / "rows.json").is_file():
                finished = json.loads((run_dir / "rows.json").read_text())
                rows += [row | {"policies_done": True} for row in finished]
            elif (run_dir / REWARD_METRICS).is_file():
                partial = seed_rows(task.id, seed, json.loads((run_dir / REWARD_METRICS).read_text()))
                rows += [row | {"policies_done": False} for row in partial]
    return rows


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (task, method) over seeds: mean, standard error (ddof = 1) and 95% t-interval of each
    metric, and the held-out pairs each seed's accuracy rests on (smallest and largest)."""
    from experiments.stats import Spread  # by name: a script puts the repo root on sys.path first

    keys = list(dict.fromkeys((r["task"], r["method"]) for r in rows))
    table = []
    for task, method in keys:
        group = [r for r in rows if (r["task"], r["method"]) == (task, method)]
        entry: dict[str, Any] = {"task": task, "method": method, "n": len(group)}
        for metric in [key for key, _ in METRICS] + ["policy_return", *DIAGNOSTICS]:
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


def claims(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The paper's two claims per task, as paired differences over the seeds that have both sides:
    APEC minus D-REX on each held-out metric (one seed's rewards scored on the same held-out set),
    and APEC's policy true return minus the demonstration's. Each with its mean, sample sd
    (ddof = 1), 95% t-interval and n; ``verdict``: ``holds`` where the interval lies above 0,
    ``reversed`` where below, ``not shown`` where it holds 0, ``too few seeds`` under n = 2."""
    from experiments.stats import Spread  # by name: a script puts the repo root on sys.path first

    out = []
    for task in dict.fromkeys(r["task"] for r in rows):
        by = {(r["method"], r["seed"]): r for r in rows if r["task"] == task}
        seeds = sorted({seed for _, seed in by})
        paired = [s for s in seeds if ("apec", s) in by and ("drex", s) in by]
        comparisons = [(f"{metric}: APEC - D-REX", [by["apec", s][metric] - by["drex", s][metric]
                                                    for s in paired]) for metric, _ in METRICS]
        comparisons.append(("policy return: APEC - demo",
                            [by["apec", s]["policy_return"] - by["apec", s]["demo_return"]
                             for s in seeds if ("apec", s) in by]))
        for claim, differences in comparisons:
            spread = Spread.of(differences)
            verdict = ("too few seeds" if spread.n < 2 else "holds" if spread.low > 0
                       else "reversed" if spread.high < 0 else "not shown")
            out.append({"task": task, "claim": claim, **spread.as_dict(), "verdict": verdict})
    return out


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
    columns = [*METRICS, ("policy_return", "policy true return"),
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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    entries = [e for e in table if e["task"] == task]
    names = [f"{e['method']}\n(n={e['n']})" for e in entries]
    figure, axes = plt.subplots(1, len(METRICS) + 1, figsize=(4.2 * (len(METRICS) + 1), 3.6))
    for axis, (metric, label) in zip(axes, METRICS, strict=False):
        axis.bar(range(len(entries)), [e[metric] for e in entries],
                 yerr=[e[f"{metric}_se"] for e in entries], color="tab:blue")
        axis.set_xticks(range(len(entries)), names, rotation=30)
        axis.set(title=f"{task}: {label}")
        axis.axhline(0.5 if metric == "accuracy" else 0.0, color="grey", linewidth=0.8)
    trained = [e for e in entries if np.isfinite(e["policy_return"])]
    axes[-1].bar(range(len(trained)), [e["policy_return"] for e in trained],
                 yerr=[e["policy_return_se"] for e in trained], color="tab:green")
    axes[-1].set_xticks(range(len(trained)), [f"{e['method']}\n(n={e['policy_return_n']})" for e in trained],
                        rotation=30)
    axes[-1].axhline(demo_return, color="tab:red", linewidth=1, label="demonstration")
    axes[-1].set(title=f"{task}: policy true return")
    axes[-1].legend()
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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
        demos = json.loads(path.read_text())
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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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


def report(config: ApecExperimentConfig, out: Path, name: str = "apec") -> int:
    """``rows.jsonl``, ``summary.json``, ``table.md``, the paper's claims as paired differences
    (``claims.json``, ``claims.md``) and a ``<name>_<task>.png`` per task from the
    rows of ``collect_rows`` (a seed whose policies still train counts for its rewards);
    where the policies were evaluated during training, their curves per task
    (``<name>_<task>_policy.png`` and ``_policy_curves.json``); the demonstrators' table and curves
    (``demonstrator_report``) as soon as a task's demos exist."""
    if demonstrators := demonstrator_rows(config, out):
        demonstrator_report(demonstrators, out, name)
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
    for task in dict.fromkeys(e["task"] for e in table):
        demo_return = float(np.mean([r["demo_return"] for r in rows if r["task"] == task]))
        plot(table, task, demo_return, out / f"{name}_{_name(task)}.png")  # ids may hold "/"
        if curves := curve_table(rows, task):
            (out / f"{name}_{_name(task)}_policy_curves.json").write_text(json.dumps(curves, indent=1))
            plot_curves(curves, task, demo_return, out / f"{name}_{_name(task)}_policy.png")
    print(json.dumps({"summary": str(out / "summary.json"), "table": str(out / "table.md")}))
    return 0


def check_finished_runs(argv: list[str] | None, doc: str | None, default_config: Path,
                        check: Callable[[Path, list[str]], list[dict[str, Any]]],
                        methods: Callable[[ApecConfig], Sequence[str]], out_name: str) -> int:
    """The command line of a check over the experiment's finished runs (``apec_policy_check``,
    ``apec_heldout_check``): ``check(run_dir, methods)`` per finished (task, seed), each row
    printed as a JSON line and all of them written to ``out_dir/out_name``.

    Args:
        argv: the command line (default ``sys.argv[1:]``): ``key=value`` overrides, ``--config``.
        doc: the check's description for ``--help``.
        default_config: the experiment config checked without ``--config``.
        check: the rows of one finished run directory, for the methods given.
        methods: the methods to check, from the pipeline's config.
        out_name: the JSON file written in ``out_dir``.

    Returns:
        The exit status (1 when no run has finished or none gave a row).
    """
    import argparse

    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("overrides", nargs="*", metavar="key=value")
    parser.add_argument("--config", default=default_config)
    args = parser.parse_args(argv)
    config = load_config(ApecExperimentConfig, args.config, args.overrides)
    torch.set_num_threads(1)
    out = Path(config.out_dir)
    results = []
    for task in config.tasks:
        for seed in config.seeds:
            run_dir = out / task.id / f"seed{seed}"
            if not (run_dir / "rows.json").is_file():
                continue
            for row in check(run_dir, list(methods(config.pipeline))):
                results.append({"task": task.id, "seed": seed, **row})
                print(json.dumps(results[-1]), flush=True)
    if not results:
        print(f"no finished run to check under {out}", file=sys.stderr)
        return 1
    (out / out_name).write_text(json.dumps(results, indent=1))
    return 0


def main(argv: list[str] | None = None, doc: str | None = __doc__,
         default_config: Path = Path(__file__).parent / "configs/apec.yaml", name: str = "apec") -> int:
    """The experiment's command line; ``experiments/apec_pixels.py`` runs it with its own config,
    docstring and ``name`` (the units' and plots' prefix)."""
    parser = experiment_parser(doc, default_config,
                               "rebuild summary, table and plots from the finished runs; no training",
                               "skip the units already finished in out_dir")
    args = parser.parse_args(argv)
    config = load_config(ApecExperimentConfig, args.config, args.overrides)
    backend = backend_from_args(args)
    torch.set_num_threads(1)  # small nets: one thread is fastest and leaves a core for the envs
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        run_all(config, out, backend, resume=args.resume, name=name)
    return report(config, out, name)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `experiments` by name
    sys.exit(main())

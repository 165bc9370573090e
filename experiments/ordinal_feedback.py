"""Does finer feedback learn better rewards? (Liu et al., ICML 2025, on MuJoCo segments.)

One command:  python experiments/ordinal_feedback.py [--config FILE] [key=value ...]
                  [--backend local|ray] [--address ADDR] [--resume]
                  [--report-only | --rows FILE] [--page PAGE]

The work is split into units that run through ``rlkit.scale`` (a process each on this machine, or
Ray Tune trials on a cluster): first one unit per task trains its PPO checkpoints (one per
(task, seed) with ``ppo_per_seed=true``), then one unit per (task, seed) collects that seed's data
and fits every arm (each granularity and tie ratio) on it. ``--resume`` skips the units already
finished in ``out_dir``. The report (``summary.json``, ``differences.json``, ``table.md``,
``ordinal.png`` in ``out_dir``) gives per arm the mean over seeds, sample sd and 95% t-interval,
and paired differences between arms over the same seeds; ``--page`` also writes it between a
results page's marker comments.

Per task: PPO checkpoints of rising quality give a spread of behaviour (random + checkpoints;
the best checkpoint is held out as the out-of-distribution policy, so without ``ppo_per_seed``
every seed's OOD pairs come from that one policy). A simulated teacher's oracle
probability p = sigmoid(beta * (G_A - G_B)) is rounded, unbiasedly, onto each scale; every
granularity gets the same number of training pairs. The tie sweep (paper section 5.2) mixes
tied (z = 0.5) and untied 3-level labels in a ratio r at a fixed total. Metrics on held-out
pairs of unseen trajectories (in distribution) and of the held-out policy (out of distribution):
binary accuracy on non-tied oracle preferences, cross-entropy against p, and return correlation.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from pydantic import Field
from stable_baselines3 import PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.env_util import make_vec_env

from rlkit.config import StrictModel, load_config
from rlkit.data import SegmentPairs, TrajectoryStore, collect_trajectories, sample_pairs
from rlkit.devices import Device, resolve_device
from rlkit.errors import FileFormatError
from rlkit.factories.builders import build_reward_model, store_spaces, trainer_config
from rlkit.factories.configs import RewardModelConfig
from rlkit.feedback import OrdinalScale, beta_for_spread
from rlkit.persistence import atomic_write_json, read_json_lines
from rlkit.persistence.agents import load_agent, save_agent
from rlkit.reward import RewardTrainer, evaluate_reward
from rlkit.reward.config import TrainerConfig
from rlkit.scale.command import backend_from_args, exit_status, experiment_parser
from rlkit.scale.unit_graph import Unit
from rlkit.scale.units import Backend, UnitResult, run_units


class TaskConfig(StrictModel):
    id: str
    checkpoint_steps: list[int]


class OrdinalExperimentConfig(StrictModel):
    """``ppo_device``: where the PPO checkpoints train (``cpu``: SB3's MLP PPO is fastest there);
    the reward models fit where ``trainer.device`` says. ``ppo_per_seed``: each seed trains its own
    PPO checkpoints (PPO and env seeded with the seed), so the spread over seeds includes the PPO
    runs' and each seed's out-of-distribution policy is its own; off, one set per task, trained
    with seed 0, serves every seed (and its last checkpoint is every seed's OOD policy)."""

    out_dir: str = "runs/ordinal_feedback"
    seeds: list[int] = [0, 1, 2, 3, 4]
    tasks: list[TaskConfig] = [TaskConfig(id="HalfCheetah-v5", checkpoint_steps=[20000, 150000])]
    ppo_kwargs: dict[str, Any] = {}
    ppo_device: Device = "cpu"
    ppo_per_seed: bool = False
    n_envs: int = Field(4, ge=1)
    steps_per_policy: int = Field(10_000, ge=1)
    max_length: int = Field(200, ge=1)
    segment_length: int = Field(50, ge=1)
    train_pairs: int = Field(500, ge=2)
    test_pairs: int = Field(2000, ge=1)
    auto_beta_std: float = Field(2.0, gt=0)
    granularities: list[str] = ["binary", "ternary", "five", "oracle"]
    tie_ratios: list[float] = [0.0, 0.25, 0.5, 0.75, 1.0]
    model: RewardModelConfig = RewardModelConfig(hidden=(64, 64))
    trainer: TrainerConfig = TrainerConfig()


def train_checkpoints(task: TaskConfig, config: OrdinalExperimentConfig, folder: Path,
                      seed: int = 0) -> list[Path]:
    """PPO on the true reward, seeded with ``seed``, saved at each checkpoint step in ``folder``
    (reused when already there)."""
    paths = [folder / f"ppo_{steps}.zip" for steps in task.checkpoint_steps]
    if all(p.exists() and p.with_suffix(".json").exists() for p in paths):
        return paths
    device = resolve_device(config.ppo_device)  # SB3 would quietly take the CPU for a missing GPU
    folder.mkdir(parents=True, exist_ok=True)
    venv = make_vec_env(task.id, n_envs=config.n_envs, seed=seed)
    model = PPO("MlpPolicy", venv, seed=seed, device=device, verbose=0, **config.ppo_kwargs)
    done = 0
    for steps, path in zip(task.checkpoint_steps, paths, strict=True):
        model.learn(steps - done, reset_num_timesteps=False)
        done = steps
        save_agent(model, path)
    venv.close()
    return paths


def collect(task: TaskConfig, policies: list[BaseAlgorithm | None], config: OrdinalExperimentConfig,
            seed: int) -> tuple[TrajectoryStore, list[np.ndarray]]:
    """One store; returns the trajectory ids each policy produced."""
    store = TrajectoryStore()
    venv = make_vec_env(task.id, n_envs=config.n_envs, seed=1000 + seed)
    rng = np.random.default_rng(seed)
    ids = []
    for policy in policies:
        trajectories = collect_trajectories(venv, policy, rng, n_steps=config.steps_per_policy,
                                            max_length=config.max_length)
        ids.append(np.array(store.extend(trajectories)))
    venv.close()
    return store, ids


def oracle(gaps: np.ndarray, beta: float) -> np.ndarray:
    """The teacher's ``P(A > B)`` from true return gaps."""
    return 1.0 / (1.0 + np.exp(-np.clip(beta * gaps, -50, 50)))


def tie_mix(pool: SegmentPairs, p: np.ndarray, ratio: float, n: int,
            rng: np.random.Generator) -> tuple[SegmentPairs, np.ndarray]:
    """``n`` pairs of which ``ratio`` have a sampled 3-level tie and the rest a sampled 0 or 1."""
    z = OrdinalScale.get("ternary").quantize(p, rng)
    tied, untied = np.flatnonzero(z == 0.5), np.flatnonzero(z != 0.5)
    n_tied = int(round(ratio * n))
    if n_tied > len(tied) or n - n_tied > len(untied):
        raise ValueError(f"the pool of {len(p)} pairs is too small for tie ratio {ratio}")
    rows = np.concatenate([rng.choice(tied, n_tied, replace=False),
                           rng.choice(untied, n - n_tied, replace=False)])
    return pool.subset(rows), z[rows]


def fit_and_score(store: TrajectoryStore, pairs: SegmentPairs, labels: np.ndarray,
                  tests: dict[str, tuple[SegmentPairs, np.ndarray]],
                  config: OrdinalExperimentConfig, seed: int) -> dict[str, float]:
    model = build_reward_model(config.model, *store_spaces(store), seed)
    trainer = RewardTrainer(model, trainer_config(config.trainer, seed))
    report = trainer.fit(pairs, labels, rng=np.random.default_rng(seed))
    row: dict[str, float] = {"epochs": report.epochs}
    for name, (test_pairs, test_p) in tests.items():
        decided = np.abs(test_p - 0.5) > 1e-6
        metrics = evaluate_reward(model, test_pairs.subset(decided),
                                  (test_p[decided] > 0.5).astype(np.float32), test_p[decided])
        row |= {f"{name}_accuracy": metrics["accuracy"],
                f"{name}_oracle_ce": metrics["oracle_cross_entropy"],
                f"{name}_return_pearson": metrics["return_pearson"]}
    return row


def run_seed(task: TaskConfig, config: OrdinalExperimentConfig, out: Path,
             seed: int) -> list[dict[str, Any]]:
    """Every arm (granularities, tie ratios) of one (task, seed), on that seed's data."""
    checkpoints = train_checkpoints(task, config, *_policies(task, config, out, seed))  # already there
    policies: list[BaseAlgorithm | None] = [None, *(load_agent({"PPO": PPO}, p) for p in checkpoints)]
    rows = []
    rng = np.random.default_rng(seed)
    store, ids = collect(task, policies, config, seed)
    train_ids, in_dist_ids = _split_trajectories(np.concatenate(ids[:-1]), rng)
    pool = sample_pairs(store, 20 * config.train_pairs, config.segment_length, rng, train_ids)
    pool_gaps = _gaps(pool)  # one gather of the pool serves beta and the labels
    beta = beta_for_spread(pool_gaps, config.auto_beta_std)
    p_pool = oracle(pool_gaps, beta)
    tests = {}
    for name, trajectory_ids in (("in_dist", in_dist_ids), ("out_dist", ids[-1])):
        test = sample_pairs(store, config.test_pairs, config.segment_length, rng, trajectory_ids)
        tests[name] = (test, oracle(_gaps(test), beta))
    first = np.arange(config.train_pairs)
    for granularity in config.granularities:
        labels = OrdinalScale.get(granularity).quantize(p_pool[first], rng)
        row = fit_and_score(store, pool.subset(first), labels, tests, config, seed)
        rows.append({"task": task.id, "seed": seed, "study": "granularity",
                     "setting": granularity, "beta": beta} | row)
    for ratio in config.tie_ratios:
        pairs, labels = tie_mix(pool, p_pool, ratio, config.train_pairs, rng)
        row = fit_and_score(store, pairs, labels, tests, config, seed)
        rows.append({"task": task.id, "seed": seed, "study": "tie_ratio",
                     "setting": ratio, "beta": beta} | row)
    return rows


def units(config: OrdinalExperimentConfig, out: Path) -> list[Unit]:
    """One PPO unit per task (per (task, seed) with ``ppo_per_seed``), then one unit per
    (task, seed) after the PPO checkpoints it uses."""
    base = {"config": config.model_dump(mode="json"), "out": str(out.absolute())}
    ppo: dict[tuple[int, int], Unit] = {}
    fits = []
    for i, t in enumerate(config.tasks):
        for seed in config.seeds:
            key = (i, seed if config.ppo_per_seed else 0)
            if key not in ppo:
                suffix = f"-s{seed}" if config.ppo_per_seed else ""
                ppo[key] = Unit(f"ppo-{i}-{_name(t.id)}{suffix}",
                                base | {"kind": "ppo", "task": i, "seed": key[1]})
            fits.append(Unit(f"fit-{i}-{_name(t.id)}-s{seed}",
                             base | {"kind": "fit", "task": i, "seed": seed}, after=(ppo[key].id,)))
    return [*ppo.values(), *fits]


def run_unit(unit: Unit, report: Any) -> dict[str, Any]:
    """One unit in its own process: a task's PPO checkpoints, or a (task, seed)'s rows."""
    torch.set_num_threads(1)  # small nets: one thread is fastest and leaves a core for the envs
    payload = unit.payload
    config = OrdinalExperimentConfig.model_validate(payload["config"])
    task, out = config.tasks[payload["task"]], Path(payload["out"])
    if payload["kind"] == "ppo":
        paths = train_checkpoints(task, config, *_policies(task, config, out, payload["seed"]))
        return {"checkpoints": [str(p) for p in paths]}
    rows = run_seed(task, config, out, payload["seed"])
    print(f"{task.id} seed {payload['seed']}: done", file=sys.stderr)
    return {"rows": rows}


def _policies(task: TaskConfig, config: OrdinalExperimentConfig, out: Path, seed: int) -> tuple[Path, int]:
    """Where the PPO checkpoints a seed uses live, and the seed they are trained with."""
    if config.ppo_per_seed:
        return out / "policies" / task.id / f"seed{seed}", seed
    return out / "policies" / task.id, 0


def _name(task_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in task_id)


def run_all(config: OrdinalExperimentConfig, out: Path, backend: Backend,
            resume: bool = False, only: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Run the units on ``backend`` (only those named and those they need, when ``only`` names
    some); the rows of the finished ones, in config order."""
    fn = importlib.import_module("experiments.ordinal_feedback").run_unit  # by name, not a copy
    results = run_units(units(config, out), fn, out, backend, resume=resume, name="ordinal",
                        on_result=_echo, only=only)
    failed = {k: r.error for k, r in results.items() if r.status != "done"}
    for key, error in failed.items():
        print(f"unit {key} failed: {error}", file=sys.stderr)
    return [row for r in results.values() if r.status == "done" for row in r.result.get("rows", [])]


def _echo(result: UnitResult) -> None:
    state = "done earlier" if result.skipped else result.status
    print(f"unit {result.id}: {state} ({result.seconds:.0f} s)", file=sys.stderr)


def _split_trajectories(ids: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    shuffled = rng.permutation(ids)
    half = len(shuffled) * 3 // 4
    return np.sort(shuffled[:half]), np.sort(shuffled[half:])


def _gaps(pairs: SegmentPairs) -> np.ndarray:
    left, right = pairs.gather()
    return left.returns() - right.returns()


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
    from experiments.stats import Spread  # by name: a script puts the repo root on sys.path first

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
    from experiments.stats import paired_difference, verdict

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
    from experiments.rows import write_page_section  # by name: the script puts the repo root on sys.path

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


def main(argv: list[str] | None = None) -> int:
    parser = experiment_parser(__doc__, Path(__file__).parent / "configs/ordinal_feedback.yaml",
                               "rebuild summary, differences, table and plot from out_dir/rows.jsonl; "
                               "no training",
                               "skip the units already finished in out_dir (their rows are kept)")
    parser.add_argument("--rows", type=Path, help="rebuild the report from this rows file (no "
                        "training), e.g. a results page's committed rows")
    parser.add_argument("--page", type=Path, help=f"also write the tables between the page's {START} "
                        f"markers and the plot beside it (PAGE with .png)")
    args = parser.parse_args(argv)
    from experiments.rows import run_or_read  # by name: the script puts the repo root on sys.path
    config = load_config(OrdinalExperimentConfig, args.config, args.overrides)
    backend = backend_from_args(args)
    torch.set_num_threads(1)  # small nets: one thread is fastest and leaves a core for the envs
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] | None
    if args.rows is not None:
        rows = read_json_lines(args.rows)
    else:
        rows = run_or_read(out, config, args.report_only,
                           lambda: run_all(config, out, backend, resume=args.resume, only=args.only))
    if rows is None:
        return 1
    check_rows(rows, args.rows or out / "rows.jsonl")
    table = summarise(rows)
    atomic_write_json(out / "summary.json", table)
    atomic_write_json(out / "differences.json", comparisons(rows))
    (out / "table.md").write_text(page_section(rows))
    plot(table, out / "ordinal.png")
    if args.page is not None:
        write_page(args.page, page_section(rows))
        plot(table, args.page.with_suffix(".png"))
    print(json.dumps({"summary": str(out / "summary.json"), "plot": str(out / "ordinal.png")}))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `experiments` by name
    sys.exit(exit_status(main, Path(__file__).name))

"""Does finer feedback learn better rewards? (Liu et al., ICML 2025, on MuJoCo segments.)

One command:  python experiments/ordinal_feedback.py [--config FILE] [key=value ...]
                  [--backend local|ray] [--address ADDR] [--resume]
                  [--report-only | --rows FILE] [--page PAGE]

The work is split into units that run through ``rlkit.scale`` (a process each on this machine, or
Ray Tune trials on a cluster): first one unit per task trains its PPO checkpoints (one per
(task, seed) with ``ppo_per_seed=true``), then one unit per (task, seed) collects that seed's data
and fits every arm (each granularity and tie ratio) on it. ``--resume`` skips the units already
finished in ``out_dir``. The report (``experiments/ordinal_report.py``'s, from the rows:
``summary.json``, ``differences.json``, ``table.md``, ``ordinal.png`` in ``out_dir``) gives per
arm the mean over seeds, sample sd and 95% t-interval, and paired differences between arms over
the same seeds; ``--page`` also writes it between a results page's marker comments.

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


def main(argv: list[str] | None = None) -> int:
    # by name: the script puts the repo root on sys.path
    from experiments.ordinal_report import (
        START,
        check_rows,
        comparisons,
        page_section,
        plot,
        summarise,
        write_page,
    )
    from experiments.rows import run_or_read

    parser = experiment_parser(__doc__, Path(__file__).parent / "configs/ordinal_feedback.yaml",
                               "rebuild summary, differences, table and plot from out_dir/rows.jsonl; "
                               "no training",
                               "skip the units already finished in out_dir (their rows are kept)")
    parser.add_argument("--rows", type=Path, help="rebuild the report from this rows file (no "
                        "training), e.g. a results page's committed rows")
    parser.add_argument("--page", type=Path, help=f"also write the tables between the page's {START} "
                        f"markers and the plot beside it (PAGE with .png)")
    args = parser.parse_args(argv)
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

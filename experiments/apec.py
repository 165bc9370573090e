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
trains its demonstrator and saves the demos, one builds its shared held-out set, then one unit per
(task, seed) fits and scores every arm's reward on them (an AIL run and the fits: under ~2 h on a
core), and after all of those one unit per (task, seed, method) trains that method's policy
(``policy-<i>-<task>-s<seed>-<method>``), so the rewards' results land before any policy
trains. A task whose inputs are committed data (``inputs``, default ``experiments/data``;
``experiments/apec_data.py``) copies them instead of training the demonstrator or the held-out
AIL run again. ``--resume`` skips the units already finished in
``out_dir``. The tables, claims and plots are ``experiments/apec_report.py``'s, from the run
directories.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from pydantic import model_validator

from rlkit.apec.config import ApecConfig
from rlkit.apec.inputs import (
    MANIFEST,
    Inputs,
    install_demos,
    install_heldout,
    load_inputs,
    refuse_other_settings,
)
from rlkit.apec.rollouts import sequential_map
from rlkit.config import StrictModel, apply_overrides, load_config, save_config
from rlkit.errors import ConfigError
from rlkit.logging import make_logger
from rlkit.persistence import atomic_write_json
from rlkit.runners.apec import run_apec, run_demos, run_heldout, venv_factory
from rlkit.scale.command import backend_from_args, exit_status, experiment_parser
from rlkit.scale.tasks import close_map, task_map
from rlkit.scale.unit_graph import Unit
from rlkit.scale.units import Backend, run_units
from rlkit.types import TaskMap


class TaskSettings(StrictModel):
    """One task: its env id and any overrides of the shared pipeline config (dotted keys)."""

    id: str
    overrides: list[str] = []


class ApecExperimentConfig(StrictModel):
    """``shared_heldout``: one held-out set per task, shared by its seeds (the reference's one test
    buffer), built by a unit of its own from the demo seed's pipeline config (its AIL run at
    ``pipeline.heldout.ail_seed``, default the demo seed + 1000, which must be none of ``seeds``);
    false: every seed builds its own (its seed + 1000).

    ``rows``: a committed rows file (``rows.jsonl`` as the report writes it, e.g. under
    ``docs/results/``): a (task, seed) whose scored rewards it holds counts where its run
    directory is gone, and its reward unit runs again only for a policy still to train; a policy
    whose return it holds is finished (a run spanning machines loses no finished unit)."""

    out_dir: str = "runs/apec"
    inputs: str | None = "experiments/data"  # committed inputs per task (rlkit.apec.inputs); null: make them
    rows: str | None = None
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
    return seed_dir(task, config.demo_seed, out)


def seed_dir(task: TaskSettings, seed: int, out: Path) -> Path:
    """A (task, seed)'s run directory (seed 0's also holds the task's demonstrator)."""
    return out / task.id / f"seed{seed}"


def heldout_dir(config: ApecExperimentConfig, task: TaskSettings, out: Path) -> Path | None:
    """The task's shared held-out set (None: each seed's own, in its run dir)."""
    return out / task.id / "heldout" if config.shared_heldout else None


def committed_inputs(config: ApecExperimentConfig, task: TaskSettings) -> Inputs | None:
    """The task's committed inputs (``config.inputs``/<task>, ``experiments/apec_data.py``), if any."""
    folder = None if config.inputs is None else Path(config.inputs) / file_name(task.id)
    return load_inputs(folder) if folder is not None and (folder / MANIFEST).is_file() else None


def heldout_settings(pipeline: ApecConfig) -> dict[str, Any]:
    """What a task's shared held-out set depends on besides the demos (recorded with it as data)."""
    dumped = pipeline.model_dump(mode="json")
    heldout = {k: v for k, v in dumped["heldout"].items() if k not in ("n_pairs", "segment_length")}
    return {"env": dumped["env"], "ail": dumped["ail"], "heldout": heldout,  # pairs: drawn when scored
            "seed": pipeline.seed, "ail_seed": pipeline.heldout_ail_seed}


def run_task_demos(config: ApecExperimentConfig, task: TaskSettings, out: Path) -> dict[str, Any]:
    """The task's demonstrator and demos, in the demo seed's run dir (the seeds link to them):
    copied from its committed inputs when there are some, else trained."""
    first = demo_dir(config, task, out)
    pipeline = task_config(config, task, config.demo_seed)
    first.mkdir(parents=True, exist_ok=True)
    inputs = committed_inputs(config, task)
    if inputs is not None:
        refuse_other_settings(inputs.manifest["settings"],
                              pipeline.demos.model_dump(mode="json") | {"seed": config.demo_seed},
                              "demos", inputs.folder / MANIFEST)
        demos = install_demos(inputs, first / "demos")
        return {"demos": str(first / "demos" / "demos.npz"), "returns": [float(t.ret) for t in demos],
                "from": str(inputs.folder)}
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
    inputs = committed_inputs(config, task)
    if inputs is not None and "heldout" in inputs.manifest:
        refuse_other_settings(inputs.manifest["heldout"]["settings"], heldout_settings(pipeline),
                              "held-out set", inputs.folder / MANIFEST)
        if not (folder / "store.npz").is_file():
            install_heldout(inputs, folder)
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
             task_map: TaskMap | None = None, policy: str | None = None) -> list[dict[str, Any]]:
    """One (task, seed) on the task's shared demos: its rewards fitted and scored (``policy``
    None), or, once they are, one method's policy trained on its reward, logging to that policy's
    folder (so two policies of a seed train side by side). Returns its rows, with every policy
    finished so far; ``rows.json`` lands in its run dir once all are. ``task_map`` runs its
    checkpoint and held-out rollouts (default: in this process)."""
    first = demo_dir(config, task, out)
    run_dir = seed_dir(task, seed, out)
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
    log_dir = run_dir if policy is None else run_dir / "policies" / policy
    logger = make_logger(log_dir, backends=("jsonl", "wandb"), project="rlkit-apec",
                         config=pipeline.model_dump(mode="json"))
    try:
        results = run_apec(pipeline, run_dir, logger, task_map or sequential_map,
                           policies=() if policy is None else (policy,))
    finally:
        logger.close()
    from experiments.apec_rows import seed_rows  # by name: a script puts the repo root on sys.path first

    rows = seed_rows(task.id, seed, results)
    if all("policy" in results["methods"][method] for method in pipeline.policy_methods):
        atomic_write_json(run_dir / "rows.json", rows)
    return rows


def units(config: ApecExperimentConfig, out: Path, backend: Backend | None = None) -> list[Unit]:
    """Per task, in task order, its demonstrator unit and its held-out unit (``shared_heldout``)
    after it; then one reward unit per (task, seed) after both, seed by seed (every task's first
    seed before any task's second); then, in the same order, a policy unit per method after its
    (task, seed)'s reward unit. With committed rows (``config.rows``) a policy whose return they
    hold is left out, and so is a reward unit they hold with all its policies; one they hold whose
    policies still train comes after every other reward unit (it fits its rewards again: the same
    ones on a machine of the same kind, another draw on another CPU, whose rows then replace them).
    On either backend a unit starts as soon as its prerequisites are done, the first ready in
    this order: the long chains of demonstrator, held-out run and seeds start early, so no worker
    idles at the end waiting on one, and a cut-short run has each task's first seeds. Units whose
    work has begun in ``out`` go first (their order kept): a run spanning several sittings
    finishes what it started before opening more. On the ray backend a (task, seed) unit runs its
    rollouts as Ray tasks (``rlkit.scale.tasks``)."""
    base = {"config": config.model_dump(mode="json"), "out": str(out.absolute())}
    if backend is not None and backend.name == "ray":
        base["tasks"] = {"name": "ray", "address": backend.address, "num_cpus": backend.num_cpus,
                         "resources": dict(backend.resources)}
    task_units: list[Unit] = []
    prerequisites: list[tuple[str, ...]] = []
    for i, task in enumerate(config.tasks):
        name = file_name(task.id)
        ours = [Unit(f"demos-{i}-{name}", base | {"kind": "demos", "task": i})]
        if config.shared_heldout:
            ours.append(Unit(f"heldout-{i}-{name}", base | {"kind": "heldout", "task": i},
                             after=(ours[0].id,)))
        task_units += ours
        prerequisites.append(tuple(u.id for u in ours))
    from experiments.apec_rows import committed_rows, has_policy_return  # by name, as in main

    committed = {(row["task"], row["seed"], row.get("method")): row for row in committed_rows(config)}
    held = {key[:2] for key in committed}  # the (task, seed)s whose rewards are committed
    seeds, scored, policies = [], [], []
    for seed in config.seeds:
        for i, task in enumerate(config.tasks):
            unit = Unit(f"apec-{i}-{file_name(task.id)}-s{seed}",
                        base | {"kind": "seed", "task": i, "seed": seed}, after=prerequisites[i])
            ours = [Unit(f"policy-{i}-{file_name(task.id)}-s{seed}-{file_name(method)}",
                         unit.payload | {"kind": "policy", "method": method}, after=(unit.id,))
                    for method in task_config(config, task, seed).policy_methods
                    if not has_policy_return(committed.get((task.id, seed, method), {}))]
            if (task.id, seed) not in held:
                seeds.append(unit)
            elif ours:
                scored.append(unit)
            policies += ours
    return sorted(task_units + seeds + scored + policies, key=lambda unit: not begun(config, unit, out))


def begun(config: ApecExperimentConfig, unit: Unit, out: Path) -> bool:
    """Has ``unit``'s work begun in ``out`` (so a rerun resumes it)? A seed's has when its AIL
    run has, a policy's when its folder exists, the demonstrator's and held-out set's likewise."""
    task = config.tasks[unit.payload["task"]]
    if unit.payload["kind"] == "demos":
        return (demo_dir(config, task, out) / "demos").exists()
    if unit.payload["kind"] == "heldout":
        folder = heldout_dir(config, task, out)
        return folder is not None and folder.exists()
    run_dir = seed_dir(task, unit.payload["seed"], out)
    if unit.payload["kind"] == "policy":
        return (run_dir / "policies" / unit.payload["method"]).exists()
    return (run_dir / "ail").exists()


def run_unit(unit: Unit, report: Any) -> dict[str, Any]:
    """One unit in its own process: a task's demos or held-out set, a (task, seed)'s rewards, or
    one of its policies."""
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
        return {"rows": run_seed(config, task, payload["seed"], out, tasks, policy=payload.get("method"))}
    finally:
        close_map(tasks)


def file_name(task_id: str) -> str:
    """A task id as a file-name part (ids may hold "/")."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in task_id)


def run_all(config: ApecExperimentConfig, out: Path, backend: Backend, resume: bool = False,
            name: str = "apec", only: Sequence[str] = ()) -> None:
    fn = importlib.import_module("experiments.apec").run_unit  # by name, not a pickled copy
    results = run_units(units(config, out, backend), fn, out, backend, resume=resume, name=name, only=only,
                        on_result=lambda r: print(
                            f"unit {r.id}: {'done earlier' if r.skipped else r.status} "
                            f"({r.seconds:.0f} s){': ' + (r.error or '') if r.status == 'failed' else ''}",
                            file=sys.stderr))
    if any(r.status != "done" for r in results.values()):
        print("some units did not finish; rerun with --resume to finish them", file=sys.stderr)


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
        run_all(config, out, backend, resume=args.resume, name=name, only=args.only)
    from experiments.apec_report import report  # by name: a script puts the repo root on sys.path first

    return report(config, out, name)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `experiments` by name
    sys.exit(exit_status(main, Path(__file__).name))

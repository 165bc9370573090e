"""The ``rlkit`` command: each subcommand is a typed config (YAML + ``key=value``) and a run dir.

Start-up stays cheap: a command's config schema is imported when its help is shown or it runs, and
its heavy stacks (torch, SB3, ...) only inside its runner.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rlkit.errors import RlkitError
from rlkit.runners.commands import COMMANDS, CommandParser, add_command, command_schema

if TYPE_CHECKING:
    from pydantic import BaseModel

    from rlkit.apec.config import ApecConfig, DemosCommandConfig
    from rlkit.factories import configs
    from rlkit.human.settings import ServeConfig
    from rlkit.m3hf.run_config import M3HFConfig


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rlkit", description="Reward learning from feedback of any granularity."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version('rlkit')}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=CommandParser)
    for name in COMMANDS:
        command = add_command(sub, name)
        if name == "apec":  # its checkpoint and held-out rollouts may run as Ray tasks
            from rlkit.scale.command import add_task_arguments  # argparse only; no ray

            add_task_arguments(command)
    from rlkit.scale.command import add_parser as add_sweep_parser  # argparse only; no ray

    add_sweep_parser(sub)  # rlkit sweep COMMAND ...: runs of the commands above (rlkit.scale)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    os.environ.setdefault("WANDB_MODE", "offline")
    os.environ.setdefault("WANDB_SILENT", "true")  # the run directory says where W&B writes
    try:
        if args.command == "sweep":
            from rlkit.scale.command import run as run_sweep

            return run_sweep(args, command_schema)
        if args.command == "demo":  # before torch computes: the same numbers on other CPUs
            from rlkit.devices import pin_cpu_kernels

            pin_cpu_kernels()
        schema = command_schema(args.command)
        import torch

        from envs.mujoco_log import route_mujoco_warnings
        from rlkit.config import load_config
        from rlkit.runners.checks import check_before_run
        from rlkit.runners.session import refused_runs_leave_nothing

        route_mujoco_warnings()  # no MUJOCO_LOG.TXT in the working directory, no deprecation noise
        torch.set_num_threads(args.torch_threads)
        config = load_config(schema, args.config, args.overrides)
        check_before_run(args.command, config, build_env=not args.print_config)  # before any run dir
        if args.command == "serve":
            _check_database_url(cast("ServeConfig", config))
        if args.print_config:
            import yaml

            print(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False), end="")
            return 0
        with refused_runs_leave_nothing():
            return RUNNERS[args.command](config, args)
    except RlkitError as error:
        print(f"rlkit {args.command}: error: {error}", file=sys.stderr)
        return 2


def _session(command: str, config: BaseModel, args: argparse.Namespace) -> tuple[Path, Any]:
    from rlkit.runners.session import open_session

    return open_session(command, config, args.run_dir, overwrite=args.overwrite, logger=args.logger,
                        group=args.group, resumes=_resume_check(command, config))


def _resume_check(command: str, config: Any) -> Callable[[Path], bool] | None:
    """How ``command`` tells that a used run directory holds the run it goes on from (None: it
    never resumes, so a used directory is refused)."""
    if command == "pref-rl":
        from rlkit.prefrl import resume

        return lambda path: resume.check(path / resume.RESUME_DIR, config.model_dump(mode="json"))
    if command == "m3hf":
        from rlkit.m3hf.loop import resumable

        return lambda path: resumable(path, config)
    if command in ("apec", "demos"):  # their stages are skipped when their outputs are there
        from rlkit.runners.rundir import same_config

        return same_config(config, command)
    return None


def _run_demo(config: configs.DemoConfig, args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from rlkit.factories.budget import announce, check_prefrl
    from rlkit.runners.demo import evaluation_note, run_demo, summary_rows
    from rlkit.runners.session import dataset_files, log_outputs

    announce(check_prefrl(config), "demo")  # a budget that trains little (none: refused on load)
    run_dir, logger = _session("demo", config, args)
    try:
        summary = run_demo(config, run_dir, logger)
        log_outputs(logger, run_dir, reward_model=("model", [run_dir / "reward_model"]),
                    preferences=("dataset", dataset_files(run_dir / "preferences")),
                    agents=("model", sorted(run_dir.glob("agent_*"))))
    finally:
        logger.close()
    table = Table(title=f"rlkit demo — {summary['env']}, {summary['env_steps']:,} env steps, "
                        f"seed {summary['seed']}", caption=evaluation_note(summary))
    table.add_column("measure")
    table.add_column("value", justify="right")
    for row in summary_rows(summary):
        table.add_row(*row)
    console = Console()
    console.print(table)
    console.print(f"plot: {run_dir / 'demo.png'}   run directory: {run_dir}")
    return 0


def _run_collect(config: configs.CollectConfig, args: argparse.Namespace) -> int:
    import numpy as np

    from rlkit.factories.builders import collect_store
    from rlkit.runners.session import log_outputs

    run_dir, logger = _session("collect", config, args)
    store = collect_store(config, np.random.default_rng(config.seed))
    path = store.save(run_dir / "trajectories")
    returns = [t.ret for t in store]
    stats = {"trajectories": len(store), "steps": store.n_steps,
             "mean_return": float(np.mean(returns)), "path": str(path)}
    logger.log({"collect/steps": store.n_steps, "collect/mean_return": stats["mean_return"]}, 0)
    log_outputs(logger, run_dir, trajectories=("dataset", [path]))
    logger.close()
    print(json.dumps(stats))
    return 0


def _run_label(config: configs.LabelConfig, args: argparse.Namespace) -> int:
    from rlkit.runners.label import label_by_hand, label_simulated

    if not args.human and config.trajectories is None:
        raise configs_error("label", "trajectories", "the .npz written by `rlkit collect`")
    run_dir, logger = _session("label", config, args)
    try:
        summary = (label_by_hand if args.human else label_simulated)(config, run_dir, logger)
    finally:
        logger.close()
    print(json.dumps(summary))
    return 0


def _run_train_reward(config: configs.TrainRewardConfig, args: argparse.Namespace) -> int:
    import numpy as np

    from rlkit.factories.builders import build_reward_model, store_spaces, trainer_config
    from rlkit.feedback import PreferenceDataset
    from rlkit.persistence import atomic_write_json
    from rlkit.reward import RewardTrainer, evaluate_dataset, save_reward_model
    from rlkit.runners.session import log_outputs

    if config.dataset is None:
        raise configs_error("train-reward", "dataset", "the prefix written by `rlkit label`")
    run_dir, logger = _session("train-reward", config, args)
    rng = np.random.default_rng(config.seed)
    dataset = PreferenceDataset.load(config.dataset)
    train, held_out = dataset.labelled().split(config.held_out_fraction, rng)
    model = build_reward_model(config.model, *store_spaces(dataset.store), config.seed)
    report = RewardTrainer(model, trainer_config(config.trainer, config.seed)).fit(train, rng=rng)
    for epoch, (loss, acc) in enumerate(zip(report.val_loss, report.val_accuracy, strict=True)):
        logger.log({"reward/val_loss": loss, "reward/val_accuracy": acc}, step=epoch)
    metrics = evaluate_dataset(model, held_out)
    save_reward_model(model, run_dir / "reward_model")
    held_out_files = held_out.save(run_dir / "held_out")
    trained = {"epochs": report.epochs, "reward_updates": report.steps, "train_pairs": report.n_train}
    atomic_write_json(run_dir / "metrics.json", {"held_out": metrics, **trained,
                                                 "best_epoch": report.best_epoch})
    logger.log({f"held_out/{k}": float(v) for k, v in metrics.items()}, step=report.epochs)
    log_outputs(logger, run_dir, reward_model=("model", [run_dir / "reward_model"]),
                held_out=("dataset", list(held_out_files)))
    logger.close()
    print(json.dumps({"held_out": metrics, **trained, "model": str(run_dir / "reward_model")}))
    return 0


def _run_eval_reward(config: configs.EvalRewardConfig, args: argparse.Namespace) -> int:
    from rlkit.factories.builders import store_spaces
    from rlkit.feedback import PreferenceDataset
    from rlkit.persistence import atomic_write_json
    from rlkit.reward import evaluate_dataset, load_reward_model

    if config.model is None or config.dataset is None:
        raise configs_error("eval-reward", "model and dataset", "a model dir and a dataset prefix")
    run_dir, logger = _session("eval-reward", config, args)
    dataset = PreferenceDataset.load(config.dataset)
    loaded = load_reward_model(config.model, *store_spaces(dataset.store))
    metrics = evaluate_dataset(loaded.model, dataset.labelled())
    atomic_write_json(run_dir / "metrics.json", metrics)
    logger.log({f"eval/{k}": float(v) for k, v in metrics.items()}, step=0)
    logger.close()
    print(json.dumps(metrics))
    return 0


def _run_pref_rl(config: configs.PrefRLConfig, args: argparse.Namespace) -> int:
    from rlkit.factories.budget import announce, check_prefrl
    from rlkit.factories.builders import true_return
    from rlkit.persistence import atomic_write_json
    from rlkit.persistence.agents import save_agent
    from rlkit.prefrl.loop import train_on_true_reward
    from rlkit.reward import save_reward_model
    from rlkit.runners.prefrl import build_preference_rl
    from rlkit.runners.session import log_outputs

    announce(check_prefrl(config), "pref-rl")  # a budget that trains little (none: refused on load)
    run_dir, logger = _session("pref-rl", config, args)
    try:
        outputs: dict[str, tuple[str, list[Path]]] = {}
        if config.reward == "env":  # the baseline: the same agent and budget on the env's reward
            result = train_on_true_reward(config, logger)
        else:
            loop = build_preference_rl(config, logger, run_dir)  # teacher.kind=human: its label store
            if loop.resume_point is not None:
                print(f"rlkit pref-rl: resuming {run_dir} at step {loop.resume_point.timestep} (the start "
                      "of its last query round)", file=sys.stderr)
            result = loop.learn()
            save_reward_model(loop.model, run_dir / "reward_model")
            outputs = {"reward_model": ("model", [run_dir / "reward_model"]),
                       "preferences": ("dataset", list(result.dataset.save(run_dir / "preferences")))}
        mean, std = true_return(result.agent, config.env, config.agent.eval_episodes)
        outputs["agent"] = ("model", [save_agent(result.agent, run_dir / "agent"), run_dir / "agent.json"])
        summary = result.summary((mean, std))
        atomic_write_json(run_dir / "summary.json", summary)
        logger.log({"eval/true_return": mean}, step=result.agent.num_timesteps)  # after the last round
        log_outputs(logger, run_dir, **outputs)
    finally:
        logger.close()
    print(json.dumps({key: summary[key] for key in ("reward", "true_return", "labels", "agent_updates",
                                                    "refits", "reward_model")} | {"run_dir": str(run_dir)}))
    return 0


def _run_serve(config: ServeConfig, args: argparse.Namespace) -> int:
    from rlkit.human.server import serve

    if config.run_dir is None and args.run_dir is not None:
        config = config.model_copy(update={"run_dir": args.run_dir})
    serve(config)
    return 0


def _check_database_url(config: ServeConfig) -> None:
    """``serve``'s ``database=``, when a URL (a path is a SQLite file), names a kind of database
    SQLAlchemy knows here; refused by name before the web app opens anything."""
    url = config.database
    if url is None or "://" not in url:
        return
    from rlkit.errors import ConfigError
    from rlkit.extras import extra

    with extra("human", "the label store's database"):
        from sqlalchemy import exc, make_url
    try:
        make_url(url).get_dialect()
    except exc.NoSuchModuleError:  # an ArgumentError too
        raise ConfigError(f"database={url}: no database of the kind {url.partition('://')[0]!r} "
                          "(sqlite:///path/labels.sqlite, postgresql://user@host/name)") from None
    except (exc.ArgumentError, ValueError):  # ValueError: a port that is no number
        raise ConfigError(f"database={url}: not a database URL (sqlite:///path/labels.sqlite, "
                          "postgresql://user@host/name)") from None


def configs_error(command: str, field: str, what: str) -> RlkitError:
    from rlkit.errors import ConfigError

    return ConfigError(f"`rlkit {command}` needs {field}=... ({what})")


def _run_demos(config: DemosCommandConfig, args: argparse.Namespace) -> int:
    from rlkit.runners.apec import demonstrator_updates, run_demos
    from rlkit.runners.session import log_outputs

    run_dir, logger = _session("demos", config, args)
    try:
        demos = run_demos(config.env, config.demos, config.seed, run_dir, logger)
        log_outputs(logger, run_dir, demos=("dataset", [run_dir / "demos.npz"]))
    finally:
        logger.close()
    report = run_dir / "demos.json"
    summary = json.loads(report.read_text()) if report.is_file() else {}
    print(json.dumps({"demos": str(run_dir / "demos.npz"), "n": len(demos),
                      "returns": [float(t.ret) for t in demos],
                      "fraction": summary.get("fraction"), "best_return": summary.get("best_return"),
                      "agent_updates": demonstrator_updates(run_dir, config.demos.algo)}))
    return 0


def _run_apec(config: ApecConfig, args: argparse.Namespace) -> int:
    from rlkit.runners.apec import run_apec
    from rlkit.runners.session import log_outputs
    from rlkit.scale.command import task_map_from_args
    from rlkit.scale.tasks import close_map

    run_dir, logger = _session("apec", config, args)
    tasks = task_map_from_args(args)
    try:
        results = run_apec(config, run_dir, logger, tasks)
        outputs = {"reward_models": ("model", run_dir / "rewards"),
                   "datasets": ("dataset", run_dir / "datasets")}
        log_outputs(logger, run_dir, **{name: (kind, [path]) for name, (kind, path) in outputs.items()
                                        if path.is_dir()})  # raw_ail alone has neither
    finally:
        close_map(tasks)
        logger.close()
    for method, metrics in results["methods"].items():
        policy = metrics.get("policy", {}).get("final_true_return")
        print(json.dumps({"method": method, "heldout_accuracy": metrics["accuracy"],
                          "step_pearson": metrics["step_pearson"],
                          "trajectory_pearson": metrics["trajectory_pearson"],
                          "reward_updates": metrics.get("reward_updates"), "policy_true_return": policy,
                          "policy_agent_updates": metrics.get("policy", {}).get("agent_updates")}))
    print(json.dumps({"ail": results["ail"],  # raw_ail's reward is the discriminator: its steps here
                      "demonstrator_agent_updates": results["demos"].get("agent_updates")}))
    print(f"run directory: {run_dir}")
    return 0


def _run_m3hf(config: M3HFConfig, args: argparse.Namespace) -> int:
    from rlkit.m3hf.loop import best_line
    from rlkit.runners.m3hf import run_m3hf

    run_dir, logger = _session("m3hf", config, args)
    try:
        state = run_m3hf(config, run_dir, logger)  # an existing --run-dir resumes
    finally:
        logger.close()
    for row in state["history"]:
        print(json.dumps({key: row[key] for key in ("generation", "env_steps", "original_return",
                                                   "train_original_return", "shaped_return",
                                                   "feedback", "pool_sizes")}
                         | {"agent_updates": row.get("agent_updates")}))  # None: a row without the count
    print(best_line(state["best"]))
    print(json.dumps({"best": state["best"], "run_dir": str(run_dir)}))
    return 0


RUNNERS: dict[str, Callable[[Any, argparse.Namespace], int]] = {
    "demo": _run_demo,
    "collect": _run_collect,
    "label": _run_label,
    "train-reward": _run_train_reward,
    "eval-reward": _run_eval_reward,
    "pref-rl": _run_pref_rl,
    "demos": _run_demos,
    "apec": _run_apec,
    "serve": _run_serve,
    "m3hf": _run_m3hf,
}

if __name__ == "__main__":
    sys.exit(main())

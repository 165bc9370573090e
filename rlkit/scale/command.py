"""``rlkit sweep COMMAND``: its parser and runner (hooked into ``rlkit.cli``; imports nothing heavy
until it runs, and Ray only with ``--backend ray``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

DESCRIPTION = """\
Run COMMAND once per grid point and seed, each trial an ordinary run directory
(SWEEP_DIR/trials/<id>), on a local process pool or on Ray Tune (a laptop's cores or a cluster).
A failing trial is reported and the others go on; --resume finishes a killed sweep (finished trials
are skipped, the others resume from their run directories). At the end SWEEP_DIR/results.md,
results.json and results.png hold the mean and 95% t-interval over seeds per grid point of what
each trial reports (its summary.json, metrics.json or printed JSON). W&B: one group per sweep,
job_type = COMMAND.

example:
  rlkit sweep train-reward dataset=runs/label/preferences --grid trainer.lr=1e-3,3e-4 --seeds 3
  rlkit sweep pref-rl --config cfg.yaml --grid agent.total_timesteps=20000,50000 --seeds 5 \\
      --backend ray --address auto --resources cpu=2,gpu=0 --run-dir /shared/sweeps/prefrl
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "sweep", help="run a command over a grid of overrides x seeds (local processes or Ray)",
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep_command", metavar="COMMAND", help="the rlkit command each trial runs")
    parser.add_argument("overrides", nargs="*", metavar="key=value",
                        help="overrides every trial gets")
    parser.add_argument("--config", type=Path, help="the command's YAML config (every trial)")
    parser.add_argument("--grid", action="append", default=[], metavar="key=v1,v2",
                        help="a swept field and its values (repeat for more; commas inside [...] "
                             "stay in one value)")
    parser.add_argument("--seeds", type=int, default=1, help="seeds 0..N-1 per grid point")
    parser.add_argument("--seed-key", default="seed", help="the config field the seed sets")
    add_backend_arguments(parser)
    parser.add_argument("--run-dir", help="the sweep directory (default runs/sweep-COMMAND-<time>); "
                                          "on a cluster a path every node sees")
    parser.add_argument("--resume", action="store_true", help="finish the sweep in --run-dir")
    parser.add_argument("--metric", help="ray: stop poor trials early (ASHA) on this logged metric")
    parser.add_argument("--mode", choices=("max", "min"), help="with --metric")
    parser.add_argument("--logger", default="jsonl,wandb",
                        help="each trial's logging backends (jsonl is always added)")
    parser.add_argument("--metrics", help="what results.md and results.png show: comma-separated "
                        "metric names or patterns (reward_model/*); default: the command's own "
                        "(pref-rl: true_return/mean, reward_model/*accuracy, agent_updates, refits, "
                        "labels), else every metric but bookkeeping (epochs, best_epoch, n_pairs)")
    return parser


def experiment_parser(doc: str | None, default_config: Path, report_help: str,
                      resume_help: str) -> argparse.ArgumentParser:
    """The command line every script under ``experiments/`` shares: ``key=value`` overrides of its
    YAML config (``--config``), ``--report-only`` to rebuild its report from finished runs,
    ``--resume`` to finish a killed run, ``--only`` to run a part of it (a unit and those it needs),
    and where its units run (``add_backend_arguments``).

    Args:
        doc: the script's description (its docstring).
        default_config: the YAML config used without ``--config``.
        report_help: what ``--report-only`` rebuilds.
        resume_help: what ``--resume`` skips and what it continues.

    Returns:
        The parser.
    """
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("overrides", nargs="*", metavar="key=value")
    parser.add_argument("--config", default=default_config)
    parser.add_argument("--report-only", action="store_true", help=report_help)
    parser.add_argument("--resume", action="store_true", help=resume_help)
    parser.add_argument("--only", action="append", default=[], metavar="UNIT",
                        help="run only this unit and the units it runs after (repeat for more); "
                             "with --resume those already finished are skipped; a name that is "
                             "not a unit's is refused with the list of units")
    add_backend_arguments(parser)
    return parser


def exit_status(main: Callable[[], int], name: str) -> int:
    """Run an experiment script's ``main`` as ``rlkit`` runs a command: an error rlkit raises on
    purpose (a config off its schema, a damaged run file) ends it with ``NAME: error: ...`` on
    stderr and status 2, not a traceback.

    Args:
        main: the script's entry point, returning its exit status.
        name: the script's name in the message.

    Returns:
        ``main``'s exit status, or 2 after such an error.
    """
    from rlkit.errors import RlkitError

    try:
        return main()
    except RlkitError as error:
        print(f"{name}: error: {error}", file=sys.stderr)
        return 2


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """``--backend``, ``--workers``, ``--address``, ``--num-cpus``, ``--resources`` and
    ``--storage``: how the experiments (and sweeps) choose where their units run."""
    group = parser.add_argument_group("where the units run (rlkit.scale)")
    group.add_argument("--backend", choices=("local", "ray"), default="local",
                       help="local: a process per unit on this machine; ray: Ray Tune trials")
    group.add_argument("--workers", type=int, help="local: units at once (default: cpus / cpu)")
    group.add_argument("--address", help="ray: a running cluster (auto, ray://head:10001); "
                                          "default: start a local Ray")
    group.add_argument("--num-cpus", type=int, help="ray without --address: CPUs the local Ray uses")
    group.add_argument("--resources", default="cpu=1,gpu=0", help="per unit: cpu=N,gpu=N")
    group.add_argument("--storage", help="ray: where Tune keeps its state (a shared dir or a URI)")


def add_task_arguments(parser: argparse.ArgumentParser) -> None:
    """``--backend``, ``--address``, ``--num-cpus`` and ``--resources`` of a command whose own
    small tasks may fan out (``rlkit apec``'s checkpoint and held-out rollouts)."""
    group = parser.add_argument_group("where the rollout tasks run (rlkit.scale.tasks)")
    group.add_argument("--backend", choices=("local", "ray"), default="local",
                       help="local: one after another in this process; ray: a Ray task each")
    group.add_argument("--address", help="ray: a running cluster (auto, ray://head:10001); "
                                          "default: start a local Ray")
    group.add_argument("--num-cpus", type=int, help="ray without --address: CPUs the local Ray uses")
    group.add_argument("--resources", default="cpu=1,gpu=0", help="ray: per task: cpu=N,gpu=N")


def task_map_from_args(args: argparse.Namespace) -> Any:
    """The ``rlkit.types.TaskMap`` the arguments of ``add_task_arguments`` describe (close it with
    ``rlkit.scale.tasks.close_map``)."""
    from rlkit.scale.sweep import parse_resources
    from rlkit.scale.tasks import task_map
    from rlkit.scale.units import Backend

    if args.backend == "local":
        return task_map(None)
    return task_map(Backend(name="ray", address=args.address, num_cpus=args.num_cpus,
                            resources=parse_resources(args.resources)))


def backend_from_args(args: argparse.Namespace, metric: str | None = None,
                      mode: Literal["max", "min"] | None = None) -> Any:
    """The ``rlkit.scale.units.Backend`` the arguments of ``add_backend_arguments`` describe."""
    from rlkit.scale.sweep import parse_resources
    from rlkit.scale.units import Backend

    return Backend(name=args.backend, workers=args.workers, address=args.address,
                   resources=parse_resources(args.resources), storage=args.storage,
                   num_cpus=args.num_cpus, metric=metric, mode=mode)


def run(args: argparse.Namespace, schema_of: Callable[[str], Any] | None = None) -> int:
    """Run the sweep ``args`` describe. ``schema_of(command)`` (the CLI's ``command_schema``)
    lets every trial's config be checked before any starts; an unknown command raises KeyError."""
    from rlkit.errors import ConfigError
    from rlkit.scale.sweep import SweepSpec, parse_grid, run_sweep

    if args.resume and args.run_dir is None:
        raise ConfigError("--resume needs --run-dir (the sweep directory to finish)")
    backends = [b.strip() for b in args.logger.split(",") if b.strip()]
    if "jsonl" not in backends:  # the trial's metrics reach the scheduler through metrics.jsonl
        backends.insert(0, "jsonl")
    spec = SweepSpec(command=args.sweep_command, grid=parse_grid(args.grid), seeds=args.seeds,
                     overrides=tuple(args.overrides),
                     config=str(args.config.absolute()) if args.config else None,
                     seed_key=args.seed_key, logger=",".join(backends),
                     metrics=tuple(m.strip() for m in (args.metrics or "").split(",") if m.strip()))
    if schema_of is not None:
        check_configs(spec, schema_of)
    backend = backend_from_args(args, args.metric, args.mode)
    sweep_dir = Path(args.run_dir) if args.run_dir else None
    table = run_sweep(spec, sweep_dir, backend, resume=args.resume,
                      echo=lambda line: print(f"rlkit sweep: {line}", file=sys.stderr, flush=True))
    done = sum(row["seeds_done"] for row in table["rows"])
    total = sum(row["seeds"] for row in table["rows"])
    where = Path(table["sweep_dir"])
    print(json.dumps({"trials": total, "done": done,
                      "failed": [p["id"] for p in table["problems"] if p["status"] == "failed"],
                      "stopped": [p["id"] for p in table["problems"] if p["status"] == "stopped"],
                      "results": str(where / "results.md")}))
    return 0 if done == total or args.metric else 1


def check_configs(spec: Any, schema_of: Callable[[str], Any]) -> None:
    """Fail before any trial starts: an unknown command, a config without the seed field, or a
    grid point whose overrides the command's config refuses (a typo in a key)."""
    from rlkit.config import load_config
    from rlkit.errors import ConfigError

    if spec.command in ("sweep", "serve"):
        raise ConfigError(f"rlkit sweep: {spec.command!r} cannot be swept")
    try:
        schema = schema_of(spec.command)
    except KeyError:
        raise ConfigError(f"rlkit sweep: unknown command {spec.command!r}") from None
    if spec.seed_key.split(".")[0] not in schema.model_fields:
        raise ConfigError(f"rlkit {spec.command}'s config has no field {spec.seed_key!r} for "
                          "--seeds; name the seed field with --seed-key")
    for point in spec.points():
        overrides = [*spec.overrides, *(f"{k}={v}" for k, v in point.items()), f"{spec.seed_key}=0"]
        load_config(schema, Path(spec.config) if spec.config else None, overrides)

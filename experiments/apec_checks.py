"""The command line the APEC check scripts share (``apec_policy_check``, ``apec_heldout_check``,
``apec_drex_bc_check``): the experiment's config with ``key=value`` overrides, and a check run over
every finished (task, seed) of it."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from experiments.apec import ApecExperimentConfig, seed_dir
from rlkit.apec.config import ApecConfig
from rlkit.config import load_config


def check_command_line(argv: list[str] | None, doc: str | None, default_config: Path,
                       add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
                       ) -> tuple[argparse.Namespace, ApecExperimentConfig]:
    """A check script's command line: ``key=value`` overrides of the experiment config and
    ``--config`` (default ``default_config``), plus what ``add_arguments`` adds; one torch thread.

    Args:
        argv: the command line (default ``sys.argv[1:]``).
        doc: the check's description for ``--help``.
        default_config: the experiment config checked without ``--config``.
        add_arguments: adds the check's own options to the parser.

    Returns:
        The parsed arguments and the experiment config.
    """
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("overrides", nargs="*", metavar="key=value")
    parser.add_argument("--config", default=default_config)
    if add_arguments is not None:
        add_arguments(parser)
    args = parser.parse_args(argv)
    config = load_config(ApecExperimentConfig, args.config, args.overrides)
    torch.set_num_threads(1)
    return args, config


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
    _, config = check_command_line(argv, doc, default_config)
    out = Path(config.out_dir)
    results = []
    for task in config.tasks:
        for seed in config.seeds:
            run_dir = seed_dir(task, seed, out)
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

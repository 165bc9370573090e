"""Build a run's logger from backend names, as configs and the CLI spell them."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from rlkit.errors import ConfigError
from rlkit.logging.base import Logger, MultiLogger, PathLike
from rlkit.logging.local import ConsoleLogger, JsonlLogger, TensorBoardLogger
from rlkit.logging.progress import ProgressDisplay, ProgressLogger
from rlkit.logging.wandb_logger import WandbLogger

BACKENDS = ("jsonl", "console", "tensorboard", "wandb")


def make_logger(
    run_dir: PathLike,
    backends: Sequence[str] = ("jsonl", "console", "wandb"),
    project: str = "rlkit",
    config: dict[str, Any] | None = None,
    wandb_mode: str | None = None,
    *,
    group: str | None = None,
    job_type: str | None = None,
    name: str | None = None,
    progress: bool = False,
    console: Console | None = None,
) -> MultiLogger:
    """One logger over ``backends`` writing under ``run_dir``; ``config`` goes to all of them.

    ``metrics.jsonl`` (and ``config.json``) is always written, whichever backends are named: it is
    the run's durable record, which a resume rewinds and a sweep reads. The W&B run is named and
    grouped as ``wandb_labels`` says: by default its name is the run directory's
    (``m3hf-20261203-101500``, a sweep's ``p000-s1``) and its group the one given, else
    ``$WANDB_RUN_GROUP``, else the command (``job_type``). ``progress`` adds a ``ProgressLogger``
    (found with ``progress_of``) drawing on ``console``, the console backend's too, so the lines
    and the bars share one screen.

    Args:
        run_dir: the run's folder (created); every backend writes under it.
        backends: names from ``"jsonl"``, ``"console"``, ``"tensorboard"``, ``"wandb"``; repeats
            are ignored, and ``"jsonl"`` is added first when it is not named.
        project: the W&B project.
        config: the resolved config, logged by every backend.
        wandb_mode: ``"online"``, ``"offline"`` or ``"disabled"``; ``None`` reads ``$WANDB_MODE``
            (see ``resolve_wandb_mode``).
        group: the W&B run group.
        job_type: the W&B job type: the command that runs.
        name: the W&B run name.
        progress: add progress bars.
        console: the rich console to draw on; a new one when ``None``.

    Returns:
        A ``MultiLogger`` over the backends, in the order given.

    Raises:
        ConfigError: when a backend name is unknown.
    """
    unknown = [name for name in backends if name not in BACKENDS]
    if unknown:
        raise ConfigError(f"unknown logging backends {unknown}; choose from {BACKENDS}")
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    console = console or Console()
    loggers: list[Logger] = []
    try:
        for kind in dict.fromkeys(("jsonl", *backends)):
            if kind == "jsonl":
                loggers.append(JsonlLogger(run_dir))
            elif kind == "console":
                loggers.append(ConsoleLogger(console, run_dir))
            elif kind == "tensorboard":
                loggers.append(TensorBoardLogger(run_dir))
            else:  # wandb is given the config at init so the run page shows it from the start
                run_name, run_group = wandb_labels(run_dir, group, job_type, name)
                loggers.append(WandbLogger(run_dir, project=project, config=config, mode=wandb_mode,
                                           name=run_name, group=run_group, job_type=job_type))
    except BaseException:
        with contextlib.suppress(Exception):  # the first error is the one to see
            MultiLogger(loggers, run_dir / "media").close()
        raise
    if progress:
        loggers.append(ProgressLogger(ProgressDisplay(console)))
    logger = MultiLogger(loggers, run_dir / "media")
    if config is not None:
        for backend in loggers:
            if not isinstance(backend, WandbLogger):
                backend.log_config(config)
    return logger


def wandb_labels(run_dir: PathLike, group: str | None, command: str | None, name: str | None = None,
                 environ: Mapping[str, str] = os.environ) -> tuple[str, str | None]:
    """The W&B run's name and group: ``name``, else the run directory's name; ``group``, else
    ``$WANDB_RUN_GROUP`` (a sweep sets it to its own name), else the command.

    Args:
        run_dir: the run's folder.
        group: the group asked for (``--group``).
        command: the command that runs (``m3hf``), the W&B job type.
        name: the name asked for.
        environ: the environment to read ``WANDB_RUN_GROUP`` from.

    Returns:
        ``(name, group)``; the group is ``None`` when none of the three is set.
    """
    return name or Path(run_dir).resolve().name, group or environ.get("WANDB_RUN_GROUP") or command

"""Build a run's logger from backend names, as configs and the CLI spell them."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
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
    progress: bool = False,
    console: Console | None = None,
) -> MultiLogger:
    """One logger over ``backends`` writing under ``run_dir``; ``config`` goes to all of them.

    ``group``/``job_type`` label the W&B run. ``progress`` adds a ``ProgressLogger`` (found with
    ``progress_of``) drawing on ``console``, the console backend's too, so the lines and the bars
    share one screen.

    Args:
        run_dir: the run's folder (created); every backend writes under it.
        backends: names from ``"jsonl"``, ``"console"``, ``"tensorboard"``, ``"wandb"``; repeats
            are ignored.
        project: the W&B project.
        config: the resolved config, logged by every backend.
        wandb_mode: ``"online"``, ``"offline"`` or ``"disabled"``; ``None`` reads ``$WANDB_MODE``
            (see ``resolve_wandb_mode``).
        group: the W&B run group.
        job_type: the W&B job type.
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
        for name in dict.fromkeys(backends):
            if name == "jsonl":
                loggers.append(JsonlLogger(run_dir))
            elif name == "console":
                loggers.append(ConsoleLogger(console, run_dir))
            elif name == "tensorboard":
                loggers.append(TensorBoardLogger(run_dir))
            else:  # wandb is given the config at init so the run page shows it from the start
                loggers.append(WandbLogger(run_dir, project=project, config=config, mode=wandb_mode,
                                           group=group, job_type=job_type))
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

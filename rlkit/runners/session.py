"""What every command's run opens and leaves: its run directory and logger (W&B group and job
type, a progress display) and its outputs kept as W&B artifacts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from rlkit.logging import MultiLogger, log_artifacts, make_logger
from rlkit.runners.rundir import Resumes, make_run_dir


def open_session(command: str, config: BaseModel, run_dir: str | None, *, overwrite: bool = False,
                 logger: str = "jsonl,console,wandb", group: str | None = None,
                 resumes: Resumes | None = None) -> tuple[Path, MultiLogger]:
    """The run directory (``config.yaml`` written first) and a logger over the comma-separated
    ``logger`` backends plus a progress display; the W&B run's job type is ``command``."""
    path = make_run_dir(command, run_dir, config, overwrite=overwrite, resumes=resumes)
    backends = tuple(b.strip() for b in logger.split(",") if b.strip())
    return path, make_logger(path, backends=backends, project="rlkit",
                             config=config.model_dump(mode="json") | {"command": command},
                             group=group, job_type=command, progress=True)


def log_outputs(logger: Any, run_dir: Path, **outputs: tuple[str, Sequence[str | Path]]) -> None:
    """The run's outputs (``name=(kind, paths)``) as W&B artifacts named after the run directory
    (``reward_model-pref-rl-20261130-101500``); a logger without W&B keeps none."""
    log_artifacts(logger, {f"{name}-{run_dir.name}": output for name, output in outputs.items()})


def dataset_files(prefix: str | Path) -> list[Path]:
    """A dataset saved at ``prefix``: its ``.npz`` and ``.json``."""
    return [Path(prefix).with_suffix(".npz"), Path(prefix).with_suffix(".json")]

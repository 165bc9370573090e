"""What every command's run opens and leaves: its run directory and logger (W&B group and job
type, a progress display) and its outputs kept as W&B artifacts."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from rlkit.errors import RlkitError
from rlkit.logging import MultiLogger, log_artifacts, make_logger
from rlkit.runners.rundir import Resumes, RunDirTrace, make_run_dir, stamped_dir

# the sessions opened inside ``refused_runs_leave_nothing`` (None outside it)
_OPENED: ContextVar[list[tuple[RunDirTrace, MultiLogger]] | None] = ContextVar("rlkit_sessions",
                                                                              default=None)


def open_session(command: str, config: BaseModel, run_dir: str | None, *, overwrite: bool = False,
                 logger: str = "jsonl,console,wandb", group: str | None = None,
                 resumes: Resumes | None = None) -> tuple[Path, MultiLogger]:
    """The run directory (``config.yaml`` written first) and a logger over the comma-separated
    ``logger`` backends plus a progress display; the W&B run's job type is ``command``."""
    trace = RunDirTrace(Path(run_dir) if run_dir is not None else stamped_dir(command), overwrite)
    path = make_run_dir(command, str(trace.path), config, overwrite=overwrite, resumes=resumes)
    backends = tuple(b.strip() for b in logger.split(",") if b.strip())
    try:
        opened = make_logger(path, backends=backends, project="rlkit",
                             config=config.model_dump(mode="json") | {"command": command},
                             group=group, job_type=command, progress=True)
    except RlkitError:  # a backend refused: nothing ran, so nothing of the run stays
        trace.remove()
        raise
    trace.opened()
    sessions = _OPENED.get()
    if sessions is not None:
        sessions.append((trace, opened))
    return path, opened


@contextmanager
def refused_runs_leave_nothing() -> Iterator[None]:
    """Run a command so that when it fails with an ``RlkitError`` (bad input found at any stage),
    each session it opened is closed and what it added to its run directory is removed, as long
    as the run wrote nothing after opening (``RunDirTrace``): the corrected command then runs
    into the same ``--run-dir``, and a run that stored anything keeps it."""
    sessions: list[tuple[RunDirTrace, MultiLogger]] = []
    token = _OPENED.set(sessions)
    try:
        yield
    except RlkitError:
        for trace, logger in sessions:
            unchanged = trace.unchanged()  # before closing: a backend may write on close
            logger.close()  # idempotent; W&B stops writing into the directory
            if unchanged:
                trace.remove()
        raise
    finally:
        _OPENED.reset(token)


def log_outputs(logger: Any, run_dir: Path, **outputs: tuple[str, Sequence[str | Path]]) -> None:
    """The run's outputs (``name=(kind, paths)``) as W&B artifacts named after the run directory
    (``reward_model-pref-rl-20261130-101500``); a logger without W&B keeps none."""
    log_artifacts(logger, {f"{name}-{run_dir.name}": output for name, output in outputs.items()})


def dataset_files(prefix: str | Path) -> list[Path]:
    """A dataset saved at ``prefix``: its ``.npz`` and ``.json``."""
    return [Path(prefix).with_suffix(".npz"), Path(prefix).with_suffix(".json")]

"""Weights & Biases backend: offline unless asked for online with a key; it never prompts."""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from rlkit.errors import ConfigError, InvalidDataError
from rlkit.logging.base import Frames, PathLike, scalar_metrics, video_file

WandbMode = Literal["online", "offline", "disabled"]
WANDB_MODES: tuple[WandbMode, ...] = ("online", "offline", "disabled")
STEP_KEY = "step"


def resolve_wandb_mode(mode: str | None, environ: Mapping[str, str] = os.environ) -> WandbMode:
    """``mode`` or ``$WANDB_MODE`` or "offline"; "online" without ``$WANDB_API_KEY`` falls back.

    Without a key wandb would stop and ask for one on the terminal; a training job must not hang.

    Args:
        mode: the mode asked for; ``None`` or empty reads the environment.
        environ: the environment to read ``WANDB_MODE`` and ``WANDB_API_KEY`` from.

    Returns:
        ``"online"``, ``"offline"`` or ``"disabled"``.

    Raises:
        ConfigError: when the mode is none of these.
    """
    text = mode or environ.get("WANDB_MODE") or "offline"
    requested = next((known for known in WANDB_MODES if known == text), None)
    if requested is None:
        raise ConfigError(f"wandb mode must be one of {WANDB_MODES}, got {text!r}")
    if requested == "online" and not environ.get("WANDB_API_KEY"):
        warnings.warn(
            "wandb mode 'online' was asked for but WANDB_API_KEY is not set; logging offline "
            "(upload later with `wandb sync`)",
            stacklevel=2,
        )
        return "offline"
    return requested


class WandbLogger:
    """A W&B run whose files live under ``run_dir/wandb`` beside the run's other outputs.

    Metrics are logged against a ``step`` metric rather than wandb's own ``_step``, which must
    only grow: a reward-model trainer and SB3 count steps differently, and wandb would drop the
    rows of whichever went backwards.
    """

    def __init__(
        self,
        run_dir: PathLike,
        project: str = "rlkit",
        config: dict[str, Any] | None = None,
        mode: str | None = None,
        name: str | None = None,
        tags: Sequence[str] = (),
        group: str | None = None,
        job_type: str | None = None,
    ) -> None:
        """Start the W&B run.

        Args:
            run_dir: the run's folder (created); wandb's files go to its ``wandb`` folder.
            project: the W&B project.
            config: the run's config, shown by W&B.
            mode: ``"online"``, ``"offline"`` or ``"disabled"`` (``resolve_wandb_mode``: None
                reads ``$WANDB_MODE``, else offline; online without ``$WANDB_API_KEY`` logs
                offline).
            name: the run's name (None: wandb picks one).
            tags: the run's tags.
            group: gathers related runs (a sweep, an experiment); None: wandb reads
                ``$WANDB_RUN_GROUP``.
            job_type: what the run did (the command); None: wandb reads ``$WANDB_JOB_TYPE``.
        """
        import wandb  # slow to import; only runs that use it pay

        self._wandb = wandb
        # absolute: a W&B service shared with another process resolves a relative dir in its own cwd
        self.run_dir = Path(run_dir).resolve()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.run = wandb.init(
            project=project,
            dir=str(self.run_dir),
            mode=resolve_wandb_mode(mode),
            config=config,
            name=name,
            tags=list(tags) or None,
            group=group,
            job_type=job_type,
            reinit="create_new",
        )
        self.run.define_metric(STEP_KEY)
        self.run.define_metric("*", step_metric=STEP_KEY)

    def log(self, metrics: dict[str, float], step: int) -> None:
        if STEP_KEY in metrics:
            raise InvalidDataError(f"metric name {STEP_KEY!r} is reserved by WandbLogger")
        self.run.log({**scalar_metrics(metrics), STEP_KEY: int(step)})

    def log_config(self, config: dict[str, Any]) -> None:
        self.run.config.update(config, allow_val_change=True)

    def log_image(self, name: str, path: PathLike, step: int) -> None:
        self.run.log({name: self._wandb.Image(str(path)), STEP_KEY: int(step)})

    def log_video(
        self, name: str, path_or_frames: PathLike | Frames, step: int, fps: int = 30
    ) -> None:
        path = video_file(path_or_frames, self.run_dir / "media", name, step, fps)
        self.run.log({name: self._wandb.Video(str(path)), STEP_KEY: int(step)})

    def log_table(self, name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
                  step: int) -> None:
        """A ``wandb.Table`` under ``name`` (its file: ``files/media/table/``)."""
        table = self._wandb.Table(columns=list(columns), data=[list(row) for row in rows])
        self.run.log({name: table, STEP_KEY: int(step)})

    def log_artifact(self, name: str, kind: str, paths: Sequence[PathLike],
                     aliases: Sequence[str] = ()) -> None:
        """``paths`` (files, or folders kept with their name) as one artifact of type ``kind``, a
        new version of it when the name was logged before, tagged with ``aliases``; a name is
        made of letters, digits, ``-``, ``_`` and ``.`` (others become ``_``)."""
        artifact = self._wandb.Artifact(re.sub(r"[^A-Za-z0-9_.-]", "_", name), type=kind)
        for path in map(Path, paths):
            if path.is_dir():
                artifact.add_dir(str(path), name=path.name)
            elif path.is_file():
                artifact.add_file(str(path))
            else:
                raise InvalidDataError(f"artifact {name!r}: {str(path)!r} does not exist")
        self.run.log_artifact(artifact, aliases=["latest", *aliases])

    def close(self) -> None:
        self.run.finish()

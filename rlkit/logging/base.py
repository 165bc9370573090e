"""The one ``Logger`` interface, the value checks every backend shares, and the fan-out logger."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Protocol, cast, runtime_checkable

import numpy as np

from rlkit.errors import InvalidDataError
from rlkit.persistence import atomic_open

PathLike = str | os.PathLike[str]
Frames = np.ndarray


@runtime_checkable
class Logger(Protocol):
    """Where a run's numbers and media go; trainers write here, never to a backend directly."""

    def log(self, metrics: dict[str, float], step: int) -> None: ...

    def log_config(self, config: dict[str, Any]) -> None: ...

    def log_image(self, name: str, path: PathLike, step: int) -> None: ...

    def log_video(
        self, name: str, path_or_frames: PathLike | Frames, step: int, fps: int = 30
    ) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class ArtifactLogger(Protocol):
    """A backend that keeps a run's outputs (a reward model, a dataset) as versioned artifacts."""

    def log_artifact(self, name: str, kind: str, paths: Sequence[PathLike],
                     aliases: Sequence[str] = ()) -> None: ...


@runtime_checkable
class TableLogger(Protocol):
    """A backend that shows rows of text and numbers as a table (W&B, TensorBoard's text panel) or
    as lines (the console)."""

    def log_table(self, name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
                  step: int) -> None: ...


def log_artifacts(logger: Logger | None, artifacts: Mapping[str, tuple[str, Sequence[PathLike]]],
                  aliases: Sequence[str] = ()) -> None:
    """Each ``{name: (kind, paths)}`` to the backends of ``logger`` that keep artifacts (W&B).

    Args:
        logger: the run's logger; ``None`` or one without artifact backends does nothing.
        artifacts: artifact name -> (artifact type, e.g. ``"model"``, and the files or folders it
            holds). Logging a name again makes a new version of that artifact.
        aliases: names for these versions besides W&B's own ``latest`` (``gen_003``, ``best``);
            an alias moves to the newest version that is given it.
    """
    if isinstance(logger, ArtifactLogger):
        for name, (kind, paths) in artifacts.items():
            logger.log_artifact(name, kind, paths, aliases)


def log_table(logger: Logger | None, name: str, columns: Sequence[str],
              rows: Sequence[Sequence[Any]], step: int) -> None:
    """``rows`` under ``columns`` to the backends of ``logger`` that show tables (W&B: a table;
    TensorBoard: a markdown table; the console: a line per row); JSONL keeps none.

    Args:
        logger: the run's logger; ``None`` or one without table backends does nothing.
        name: the table's name (``m3hf/feedback/phase_001``).
        columns: the column names.
        rows: one sequence of values (text or numbers) per row, in column order.
        step: the step it belongs to.

    Raises:
        InvalidDataError: when a row does not have one value per column.
    """
    for index, row in enumerate(rows):
        if len(row) != len(columns):
            raise InvalidDataError(f"table {name!r}: row {index} has {len(row)} values for "
                                   f"{len(columns)} columns {list(columns)}")
    if isinstance(logger, TableLogger):
        logger.log_table(name, columns, rows, step)


def scalar_metrics(metrics: Mapping[str, Any]) -> dict[str, float | int]:
    """Plain Python numbers from numpy/torch scalars; anything else is a caller bug, named early.

    Args:
        metrics: metric name -> a Python number, bool, or one-element numpy array or tensor.

    Returns:
        The same keys with plain ``int``/``float`` values (bools as 0/1).

    Raises:
        InvalidDataError: when a value has more than one element or is not a number.
    """
    return {key: _number(key, value) for key, value in metrics.items()}


def _number(key: str, value: Any) -> float | int:
    if isinstance(value, np.ndarray | np.generic) or hasattr(value, "numel"):
        size = value.size if isinstance(value, np.ndarray | np.generic) else value.numel()
        if size != 1:
            raise InvalidDataError(f"metric {key!r} must be a scalar, got {size} values")
        value = value.item()
    if isinstance(value, bool):
        return int(value)
    if not isinstance(value, int | float):
        raise InvalidDataError(
            f"metric {key!r} must be a number, got {type(value).__name__} {value!r}"
        )
    return value


def media_path(media_dir: PathLike, name: str, step: int, suffix: str) -> Path:
    """A file name for a logged artefact: ``eval/video`` at step 5 -> ``eval_video-5.gif``."""
    return Path(media_dir) / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}-{step}{suffix}"


def video_file(
    path_or_frames: PathLike | Frames, media_dir: PathLike, name: str, step: int, fps: int
) -> Path:
    """The video as a file: an existing path as it is, or ``(T, H, W[, C])`` uint8 frames as a GIF.

    GIF because it needs no ffmpeg (Pillow writes it) and W&B and browsers show it as a video.

    Args:
        path_or_frames: a video file that exists, or uint8 frames ``(T, H, W)`` or
            ``(T, H, W, C)`` with ``T > 0``.
        media_dir: where a GIF is written.
        name: the metric name (part of the file name).
        step: the step (part of the file name).
        fps: frames per second of the GIF.

    Returns:
        The path of the video file.

    Raises:
        InvalidDataError: when the file does not exist, the frames have another dtype or shape, or
            ``fps`` is not positive.
    """
    if not isinstance(path_or_frames, np.ndarray):
        path = Path(path_or_frames)
        if not path.is_file():
            raise InvalidDataError(f"video file {str(path)!r} for {name!r} does not exist")
        return path
    frames = path_or_frames
    if frames.dtype != np.uint8 or frames.ndim not in (3, 4) or len(frames) == 0:
        raise InvalidDataError(
            f"video frames for {name!r} must be uint8 (T, H, W) or (T, H, W, C) with T > 0, "
            f"got dtype {frames.dtype} shape {frames.shape}"
        )
    if fps <= 0:
        raise InvalidDataError(f"fps for video {name!r} must be positive, got {fps}")
    import imageio.v3 as iio  # imported here: only runs that log videos pay for it

    path = media_path(media_dir, name, step, ".gif")
    with atomic_open(path, "wb") as handle:
        # opened "wb": a binary file (atomic_open is typed IO[Any] for every mode)
        iio.imwrite(cast(BinaryIO, handle), frames, extension=".gif", duration=1000.0 / fps, loop=0)
    return path


class MultiLogger:
    """Sends everything to several backends; frames become one shared file, written once.

    Artifacts and tables go to the backends that take them (``ArtifactLogger``,
    ``TableLogger``).

    Args:
        loggers: the backends, called in this order.
        media_dir: where a video given as frames is written (a GIF) before every backend gets
            its path.
    """

    def __init__(self, loggers: Sequence[Logger], media_dir: PathLike) -> None:
        self.loggers = list(loggers)
        self.media_dir = Path(media_dir)

    def log(self, metrics: dict[str, float], step: int) -> None:
        for logger in self.loggers:
            logger.log(metrics, step)

    def log_config(self, config: dict[str, Any]) -> None:
        for logger in self.loggers:
            logger.log_config(config)

    def log_image(self, name: str, path: PathLike, step: int) -> None:
        for logger in self.loggers:
            logger.log_image(name, path, step)

    def log_video(
        self, name: str, path_or_frames: PathLike | Frames, step: int, fps: int = 30
    ) -> None:
        path = video_file(path_or_frames, self.media_dir, name, step, fps)
        for logger in self.loggers:
            logger.log_video(name, path, step, fps)

    def log_artifact(self, name: str, kind: str, paths: Sequence[PathLike],
                     aliases: Sequence[str] = ()) -> None:
        for logger in self.loggers:
            if isinstance(logger, ArtifactLogger):
                logger.log_artifact(name, kind, paths, aliases)

    def log_table(self, name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
                  step: int) -> None:
        for logger in self.loggers:
            if isinstance(logger, TableLogger):
                logger.log_table(name, columns, rows, step)

    def close(self) -> None:
        """Close every backend even if one fails, so no file is left unflushed; then re-raise."""
        errors: list[Exception] = []
        for logger in self.loggers:
            try:
                logger.close()
            except Exception as error:  # collected, re-raised below
                errors.append(error)
        if errors:
            raise errors[0]

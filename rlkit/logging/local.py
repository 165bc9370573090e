"""Backends that need no service: the JSONL metric record, the console, TensorBoard."""

from __future__ import annotations

import io
import json
import math
import os
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.text import Text

from rlkit.errors import InvalidDataError
from rlkit.logging.base import Frames, PathLike, scalar_metrics, video_file
from rlkit.persistence import atomic_write_json

RESERVED_KEYS = ("step", "wall_time")
METRICS_FILE = "metrics.jsonl"


def metrics_size(run_dir: PathLike) -> int | None:
    """How many bytes ``run_dir``'s ``metrics.jsonl`` holds now (None when there is none): a resume
    point keeps it, so a resumed run can drop what was logged after it (``rewind_metrics``).

    Args:
        run_dir: the run's folder.

    Returns:
        The file's size in bytes, or ``None``.
    """
    path = Path(run_dir) / METRICS_FILE
    return path.stat().st_size if path.is_file() else None


def rewind_metrics(run_dir: PathLike, *, size: int | None = None, after_step: int | None = None,
                   prefix: str | None = None) -> int:
    """Drop the rows of ``run_dir``'s ``metrics.jsonl`` logged after a resume point, so a resumed
    run logs them once: every byte past ``size`` (``metrics_size`` at the point), or every row from
    the first whose step is past ``after_step`` (or that is torn); with ``prefix``, from the first
    such row holding a metric named ``prefix...`` (a stage whose rows follow other stages' rows
    logged at larger steps).

    One ``truncate`` of the file in place: a crash leaves it whole or cut, never half-rewritten,
    and a ``JsonlLogger`` already open on it appends after the cut (its file is opened to append).

    Args:
        run_dir: the run's folder.
        size: keep at most this many bytes.
        after_step: keep only the rows up to this step.
        prefix: see above; None: every row counts.

    Returns:
        How many rows were dropped (0 when there is no file).
    """
    path = Path(run_dir) / METRICS_FILE
    if not path.is_file():
        return 0
    data = path.read_bytes()
    cut = len(data)
    if size is not None:
        cut = min(cut, size)
    if after_step is not None:
        offset = 0
        for line in data[:cut].splitlines(keepends=True):
            if not line.endswith(b"\n") or (_row_step(line) > after_step and _has_prefix(line, prefix)):
                cut = offset
                break
            offset += len(line)
    if cut >= len(data):
        return 0
    dropped = data[cut:].count(b"\n") + (not data.endswith(b"\n"))
    os.truncate(path, cut)
    return dropped


def _has_prefix(line: bytes, prefix: str | None) -> bool:
    if prefix is None:
        return True
    try:
        return any(key.startswith(prefix) for key in json.loads(line))
    except (ValueError, TypeError):
        return True  # not a row JsonlLogger wrote whole: dropped with what follows


def metrics_dirs(logger: object) -> list[Path]:
    """The folders whose ``metrics.jsonl`` ``logger`` appends to: its ``JsonlLogger`` backends
    (itself, or those of a ``MultiLogger``), for ``rewind_metrics`` on a resume.

    Args:
        logger: any logger.

    Returns:
        The run folders, none for a logger without a JSONL backend.
    """
    backends = getattr(logger, "loggers", [logger])
    return [backend.run_dir for backend in backends if isinstance(backend, JsonlLogger)]


def _row_step(line: bytes) -> float:
    try:
        step = json.loads(line)["step"]
    except (ValueError, KeyError, TypeError):
        return math.inf  # not a row JsonlLogger wrote whole: dropped with what follows
    return step if isinstance(step, int | float) else math.inf


class JsonlLogger:
    """The run's durable metric record: one JSON object per ``log`` call in ``metrics.jsonl``.

    Each line is flushed as it is written, so a crash loses at most the line being written.
    Non-finite values are written as ``null`` to keep every line strict JSON. The config goes to
    ``config.json`` (atomically) and media references to ``media.jsonl``.

    Args:
        run_dir: the run's folder (created); ``metrics.jsonl`` is appended to when it exists.
    """

    def __init__(self, run_dir: PathLike) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.run_dir / METRICS_FILE
        self.media_index = self.run_dir / "media.jsonl"
        self._file = open(self.path, "a", encoding="utf-8")  # closed in close()

    def log(self, metrics: dict[str, float], step: int) -> None:
        clash = [key for key in RESERVED_KEYS if key in metrics]
        if clash:
            raise InvalidDataError(f"metric names {clash} are reserved in metrics.jsonl")
        record: dict[str, Any] = {"step": int(step), "wall_time": round(time.time(), 3)}
        for key, value in scalar_metrics(metrics).items():
            record[key] = value if math.isfinite(value) else None
        self._file.write(json.dumps(record, allow_nan=False) + "\n")
        self._file.flush()

    def log_config(self, config: dict[str, Any]) -> None:
        atomic_write_json(self.run_dir / "config.json", config)

    def log_image(self, name: str, path: PathLike, step: int) -> None:
        self._log_media("image", name, Path(path), step)

    def log_video(
        self, name: str, path_or_frames: PathLike | Frames, step: int, fps: int = 30
    ) -> None:
        path = video_file(path_or_frames, self.run_dir / "media", name, step, fps)
        self._log_media("video", name, path, step)

    def close(self) -> None:
        self._file.close()

    def _log_media(self, kind: str, name: str, path: Path, step: int) -> None:
        record = {"step": int(step), "kind": kind, "name": name, "path": str(path)}
        with open(self.media_index, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")


# a multi-agent row's per-agent metrics, "agent_2/train/value_loss" or "rollout/shaped_return/agent_2"
_PER_AGENT = re.compile(r"agent_\d+/(?P<tail>.+)|(?P<head>.+)/agent_\d+")
# what the console shows of them: the mean over the agents, as "agents/train/value_loss"
AGENT_MEANS = ("train/entropy_loss", "train/value_loss", "train/approx_kl", "train/explained_variance")


def console_view(metrics: Mapping[str, float | int], means: Sequence[str] = AGENT_MEANS
                 ) -> dict[str, float | int]:
    """What the console shows of a logged row: per-agent metrics (``agent_<i>/<name>`` or
    ``<name>/agent_<i>``) give way to the mean over the agents of each ``name`` in ``means``,
    shown as ``agents/<name>`` where the first of them was; every other metric as it is. The
    other backends keep every per-agent metric.

    Args:
        metrics: the row's metrics, plain numbers.
        means: the per-agent names whose mean is shown.

    Returns:
        The metrics to print, in order.
    """
    shown: dict[str, float | int] = {}
    pooled: dict[str, list[float]] = {}
    for key, value in metrics.items():
        match = _PER_AGENT.fullmatch(key)
        if match is None:
            shown[key] = value
            continue
        name = match["tail"] or match["head"]
        if name in means:
            pooled.setdefault(name, [])
            shown.setdefault(f"agents/{name}", 0.0)  # its place; the mean is filled in below
            pooled[name].append(float(value))
    for name, values in pooled.items():
        shown[f"agents/{name}"] = float(np.mean(values))
    return shown


class ConsoleLogger:
    """One compact line per ``log`` call, for a person watching the run (a multi-agent row's
    per-agent metrics summarised by ``console_view``); the config as a one-line summary (the run
    directory's config files hold all of it); a table as a line per row.

    Args:
        console: the rich console printed to (None: a new one on standard output).
        run_dir: the run's folder, named in the config summary as where the full config is
            (None: not named).
    """

    # the fields a person checks first, named in the summary when the config has them
    KEY_FIELDS = ("env.id", "env.layout", "agent.algo", "agent.total_timesteps", "trajectories",
                  "dataset", "model", "n_pairs", "phases", "generation_steps", "seed")

    def __init__(self, console: Console | None = None, run_dir: PathLike | None = None) -> None:
        self.console = console or Console()
        self.run_dir = run_dir

    def log(self, metrics: dict[str, float], step: int) -> None:
        line = Text(f"step {step:>8}", style="bold")
        for key, value in console_view(scalar_metrics(metrics)).items():
            line.append(f"  {key}=", style="dim")
            line.append(f"{value:.4g}" if isinstance(value, float) else str(value))
        self.console.print(line, soft_wrap=True)  # one line per call, even in a log file

    def log_table(self, name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
                  step: int) -> None:
        """``step       64  m3hf/feedback/phase_001  parser=llm  specs=agent 0: holding(...)``; text
        that is not valid Unicode (a lone surrogate from a JSON escape) is shown with ``?``."""
        for row in rows:
            line = Text(f"step {step:>8}  ", style="bold")
            line.append(name)
            for column, value in zip(columns, row, strict=True):
                line.append(f"  {column}=", style="dim")
                shown = f"{value:.4g}" if isinstance(value, float) else str(value)
                line.append(shown.encode("utf-8", "replace").decode("utf-8"))
            self.console.print(line, soft_wrap=True, highlight=False)

    def log_config(self, config: dict[str, Any]) -> None:
        """``rlkit pref-rl  env.id=Hopper-v5  seed=0  (full config: runs/x/config.yaml)``."""
        command = config.get("command")
        line = Text(f"rlkit {command}" if command else "config", style="bold")
        for key in self.KEY_FIELDS:
            value: Any = config
            for part in key.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if value is not None and not isinstance(value, dict | list):
                line.append(f"  {key}=", style="dim")
                line.append(str(value))
        if self.run_dir is not None:
            line.append(f"  (full config: {Path(self.run_dir) / 'config.yaml'})", style="dim")
        self.console.print(line, soft_wrap=True)

    def log_image(self, name: str, path: PathLike, step: int) -> None:
        self.console.print(Text(f"step {step:>8}  image {name}: {path}"))

    def log_video(
        self, name: str, path_or_frames: PathLike | Frames, step: int, fps: int = 30
    ) -> None:
        what = (
            f"{len(path_or_frames)} frames (not saved by the console)"
            if isinstance(path_or_frames, np.ndarray)
            else str(path_or_frames)
        )
        self.console.print(Text(f"step {step:>8}  video {name}: {what}"))

    def close(self) -> None:
        """Nothing to release: the console belongs to the process."""


class TensorBoardLogger:
    """Scalars, images, videos, tables and the config (as text) in ``run_dir/tensorboard``.

    A video is an animated GIF in TensorBoard's image panel, which is what ``add_video`` writes;
    it is encoded here because ``add_video`` needs moviepy's 1.x editor, not a dependency.

    Args:
        run_dir: the run's folder; the event files go to its ``tensorboard`` folder.

    Raises:
        MissingExtraError: when the ``tensorboard`` extra is not installed.
    """

    def __init__(self, run_dir: PathLike) -> None:
        from rlkit.extras import extra

        with extra("tensorboard", "the tensorboard logger"):
            from torch.utils.tensorboard import SummaryWriter  # heavy import, only when used

        self.run_dir = Path(run_dir)
        self.writer = SummaryWriter(log_dir=str(self.run_dir / "tensorboard"))

    def log(self, metrics: dict[str, float], step: int) -> None:
        for key, value in scalar_metrics(metrics).items():
            self.writer.add_scalar(key, value, global_step=step)

    def log_config(self, config: dict[str, Any]) -> None:
        text = json.dumps(config, indent=2, sort_keys=True, default=str)
        self.writer.add_text("config", f"```\n{text}\n```")

    def log_table(self, name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
                  step: int) -> None:
        """A markdown table in TensorBoard's text panel."""
        def cells(values: Sequence[Any]) -> str:
            return "| " + " | ".join(str(v).replace("|", "\\|").replace("\n", " ") for v in values) + " |"

        lines = [cells(columns), "|" + " --- |" * len(columns), *map(cells, rows)]
        self.writer.add_text(name, "\n".join(lines), global_step=step)

    def log_image(self, name: str, path: PathLike, step: int) -> None:
        from PIL import Image

        with Image.open(path) as image:
            pixels = np.asarray(image.convert("RGB"))
        self.writer.add_image(name, pixels, global_step=step, dataformats="HWC")

    def log_video(
        self, name: str, path_or_frames: PathLike | Frames, step: int, fps: int = 30
    ) -> None:
        from PIL import Image
        from tensorboard.compat.proto.summary_pb2 import Summary  # type: ignore[import-untyped]

        path = video_file(path_or_frames, self.run_dir / "media", name, step, fps)
        gif = path.read_bytes() if path.suffix.lower() == ".gif" else _as_gif(path, fps)
        with Image.open(io.BytesIO(gif)) as image:
            width, height = image.size
        picture = Summary.Image(height=height, width=width, colorspace=3, encoded_image_string=gif)
        # the writer add_video itself writes to (SummaryWriter has no public getter for it)
        self.writer._get_file_writer().add_summary(
            Summary(value=[Summary.Value(tag=name, image=picture)]), global_step=step)

    def close(self) -> None:
        self.writer.close()


def _as_gif(path: Path, fps: int) -> bytes:
    """An MP4 (or any video imageio reads) re-encoded as GIF bytes."""
    import imageio.v3 as iio

    frames = iio.imread(path, index=None)
    return bytes(iio.imwrite("<bytes>", frames, extension=".gif", duration=1000.0 / fps, loop=0))

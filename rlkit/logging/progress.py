"""How far a run's long tasks are, with an ETA: one live rich display on a terminal, plain lines
when the output is a file or a CI log (a bar redrawn there is noise; a line every ``every_s``
seconds is a record).

``ProgressDisplay`` holds the tasks; ``ProgressLogger`` is a ``Logger`` that moves them: each
``Track`` follows the metrics a trainer already logs (its position is the step of each ``log``
call, or one metric's value), so no training loop needs a progress hook of its own.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from rlkit.errors import ConfigError
from rlkit.logging.base import Frames, Logger, MultiLogger, PathLike

Clock = Callable[[], float]


def _in_ci(environ: Mapping[str, str] = os.environ) -> bool:
    return environ.get("CI", "").lower() in ("true", "1")


def duration(seconds: float) -> str:
    """``3725`` -> ``1:02:05``."""
    whole = max(0, round(seconds))
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


class ProgressDisplay:
    """The display of a run's tasks on ``console``: live bars with an ETA when it is a terminal
    (outside CI), else one plain line per task at its first update, every ``every_s`` seconds
    and when it ends. Started by its first task (``live`` may be turned off until then: a person
    typing at the terminal needs plain lines); ``close`` ends it.

    Args:
        console: where it shows (None: a new console on standard error).
        live: live bars (True) or plain lines (False); None: live bars on a terminal outside CI.
        every_s: seconds between a task's plain lines.
        clock: the time in seconds, for elapsed time and ETAs (``time.monotonic``).
    """

    def __init__(self, console: Console | None = None, *, live: bool | None = None,
                 every_s: float = 30.0, clock: Clock = time.monotonic) -> None:
        self.console = console or Console(stderr=True)
        self.live = (self.console.is_terminal and not _in_ci()) if live is None else live
        self.every_s = every_s
        self.clock = clock
        self._bars: Progress | None = None

    def add(self, description: str, total: float, completed: float = 0.0) -> ProgressTask:
        """A task of ``total`` units, ``completed`` of them done already (a resumed run)."""
        if not total > 0:
            raise ConfigError(f"progress task {description!r}: total must be > 0, got {total}")
        task_id = None
        if self.live:
            if self._bars is None:
                self._bars = Progress(
                    TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TaskProgressColumn(), TimeElapsedColumn(), TextColumn("eta"),
                    TimeRemainingColumn(), console=self.console,
                )
                self._bars.start()
            task_id = self._bars.add_task(description, total=total, completed=int(completed))
        return ProgressTask(self, description, total, completed, task_id)

    def _draw(self, task: ProgressTask) -> None:
        if self._bars is not None and task.task_id is not None:
            self._bars.update(task.task_id, completed=int(task.completed))

    def close(self) -> None:
        """Stop the live display (its last frame stays on the terminal)."""
        if self._bars is not None:
            self._bars.stop()
            self._bars = None


class ProgressTask:
    """One task's position; its ETA is the rate since it was added (a resumed run's earlier
    progress does not count as speed). Made by ``ProgressDisplay.add``.

    Args:
        display: the display that shows it.
        description: the task's name, at the start of its bar or line.
        total: the units of the whole task, > 0.
        completed: the units done already when it is added.
        task_id: its bar in the display's live bars, None when it shows plain lines.
    """

    def __init__(self, display: ProgressDisplay, description: str, total: float, completed: float,
                 task_id: TaskID | None) -> None:
        self.display = display
        self.description = description
        self.total = float(total)
        self.completed = self.start = float(completed)
        self.task_id = task_id
        self.started_at = display.clock()
        self.finished = False
        self._printed_at: float | None = None

    def update(self, completed: float) -> None:
        """Move to ``completed`` (never back: a resumed run's replay does not rewind the bar)."""
        if self.finished or completed < self.completed:
            return
        self.completed = min(float(completed), self.total)
        self.display._draw(self)
        if self.completed >= self.total:
            self.finish()
            return
        now = self.display.clock()
        if self._printed_at is None or now - self._printed_at >= self.display.every_s:
            self._print(now)

    def advance(self, amount: float = 1.0) -> None:
        self.update(self.completed + amount)

    def finish(self) -> None:
        """The task is done (or ended early: it stays where it got to, e.g. a pref-rl run whose
        queries stopped)."""
        if self.finished:
            return
        self.finished = True
        self.display._draw(self)
        self._print(self.display.clock())

    def eta(self, now: float) -> float | None:
        """Seconds left at the rate so far (None before anything moved)."""
        rate = (self.completed - self.start) / max(now - self.started_at, 1e-9)
        return (self.total - self.completed) / rate if rate > 0 else None

    def line(self, now: float) -> str:
        """The plain line: ``pref-rl env steps  2048/10000  20%  elapsed 0:00:12  eta 0:00:48``."""
        done = f"{self.completed:g}/{self.total:g}  {100 * self.completed / self.total:.0f}%"
        elapsed = duration(now - self.started_at)
        if self.finished:
            ended = "done in" if self.completed >= self.total else "stopped after"
            return f"{self.description}  {done}  {ended} {elapsed}"
        eta = self.eta(now)
        return f"{self.description}  {done}  elapsed {elapsed}  eta {'?' if eta is None else duration(eta)}"

    def _print(self, now: float) -> None:
        self._printed_at = now
        if not self.display.live:
            self.display.console.print(self.line(now), highlight=False, soft_wrap=True)


@dataclass(frozen=True)
class Track:
    """A task that follows logged metrics: a ``log`` call with a metric named with one of
    ``prefixes`` moves it to the call's step, or to ``metric``'s value plus ``offset`` when set.

    Attributes:
        description: the task's name, shown with its progress.
        total: the position at which the task is done, > 0.
        prefixes: a metric named with one of these moves the task (``""``: any metric).
        metric: the metric whose value is the position (None: the ``log`` call's step).
        offset: added to ``metric``'s value.
    """

    description: str
    total: float
    prefixes: tuple[str, ...] = ("",)
    metric: str | None = None
    offset: float = 0.0

    def position(self, metrics: Mapping[str, float], step: int) -> float | None:
        if not any(key.startswith(prefix) for key in metrics for prefix in self.prefixes):
            return None
        if self.metric is None:
            return float(step)
        value = metrics.get(self.metric)
        return None if value is None else float(value) + self.offset


class ProgressLogger:
    """A ``Logger`` whose ``log`` calls move the tasks it follows; media and config pass it by.
    ``make_logger(..., progress=True)`` adds one beside the run's other backends (``progress_of``
    finds it), and a runner names what it follows.

    Args:
        display: the display of the tasks it follows (``follow``) or makes (``task``).
    """

    def __init__(self, display: ProgressDisplay) -> None:
        self.display = display
        self._following: list[tuple[Track, ProgressTask]] = []

    def follow(self, track: Track, completed: float = 0.0) -> ProgressTask:
        task = self.display.add(track.description, track.total, completed)
        self._following.append((track, task))
        return task

    @property
    def following(self) -> list[ProgressTask]:
        """The tasks that logged metrics still move (a finished one stops being followed)."""
        return [task for _, task in self._following]

    def task(self, description: str, total: float, completed: float = 0.0) -> ProgressTask:
        """A task the caller moves itself (stages, units)."""
        return self.display.add(description, total, completed)

    def log(self, metrics: dict[str, float], step: int) -> None:
        for track, task in self._following:
            position = track.position(metrics, step)
            if position is not None:
                task.update(position)
        self._following = [(track, task) for track, task in self._following if not task.finished]

    def log_config(self, config: dict[str, Any]) -> None:
        """Progress shows no config."""

    def log_image(self, name: str, path: PathLike, step: int) -> None:
        """Progress shows no images."""

    def log_video(self, name: str, path_or_frames: PathLike | Frames, step: int, fps: int = 30) -> None:
        """Progress shows no videos."""

    def close(self) -> None:
        for _, task in self._following:
            task.finish()
        self._following = []
        self.display.close()


def progress_of(logger: Logger | None) -> ProgressLogger | None:
    """The ``ProgressLogger`` among ``logger``'s backends (nested fan-outs too), if it has one.

    Args:
        logger: a logger, possibly a ``MultiLogger``; ``None`` has none.

    Returns:
        The ``ProgressLogger``, or ``None``.
    """
    if isinstance(logger, ProgressLogger):
        return logger
    if isinstance(logger, MultiLogger):
        for member in logger.loggers:
            found = progress_of(member)
            if found is not None:
                return found
    return None

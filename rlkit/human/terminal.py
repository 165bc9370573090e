"""The terminal session (``rlkit label --human``): the label queue over SSH, on the same store.

Each pair is drawn as ASCII: one sparkline per observation dimension for A and for B on a shared
range, plus the paths of their videos when the web app's media exist. The keys are the web
page's: 1..k from "A much better" to "B much better", s skip, u undo last, q quit.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np
from rich.console import Console
from rich.prompt import Prompt
from rich.table import Table

from rlkit.data.segments import gather, sample_pairs
from rlkit.data.store import TrajectoryStore
from rlkit.errors import ConfigError
from rlkit.feedback.scale import OrdinalScale
from rlkit.human.media import shown_media
from rlkit.human.store import LabelConflictError, LabelStore, Query

if TYPE_CHECKING:
    from rlkit.factories.configs import LabelConfig

SPARKS = "▁▂▃▄▅▆▇█"
MAX_DIMENSIONS = 8


def sparkline(values: np.ndarray, low: float, high: float) -> str:
    """Values as block characters on the range [low, high]."""
    scaled = (np.asarray(values, dtype=float) - low) / max(high - low, 1e-12)
    return "".join(SPARKS[i] for i in np.clip((scaled * len(SPARKS)).astype(int), 0, len(SPARKS) - 1))


class TerminalSession:
    """One annotator labelling in a terminal until the queue is empty or they quit."""

    def __init__(
        self,
        store: LabelStore,
        annotator: str,
        trajectories: TrajectoryStore | None = None,
        media_dir: str | Path | None = None,
        console: Console | None = None,
        stream: TextIO | None = None,
        lease_s: float = 600.0,
    ) -> None:
        self.store = store
        self.lease_s = lease_s
        self.annotator = annotator
        self.trajectories = trajectories
        self.media_dir = None if media_dir is None else Path(media_dir)
        self.console = console or Console()
        self.stream = stream
        scale = store.scale
        self.keys = {str(key): level for key, level in enumerate(reversed(scale.levels), start=1)}
        self.legend = "  ".join(f"[bold]{key}[/] {name}" for key, name in
                                zip(self.keys, reversed(scale.names), strict=True))

    def run(self) -> int:
        """Label until done or quit (``q`` or end of input); returns the answers submitted here."""
        given = 0
        shown = self.store.next_query(self.annotator, self.lease_s)
        while shown is not None:
            self.show(shown)
            try:
                answer = Prompt.ask("label", choices=[*self.keys, "s", "u", "q"], console=self.console,
                                    stream=self.stream, show_choices=False)
            except EOFError:
                break
            if answer == "q":
                break
            if answer == "u":
                undone = self.store.undo(self.annotator)
                self.console.print("nothing to undo" if undone is None else f"undid pair {undone.query_id}")
                shown = shown if undone is None else self.store.query(undone.query_id)
                continue
            try:
                self.store.submit(shown.id, self.annotator, None if answer == "s" else self.keys[answer],
                                  interface="terminal")
                given += 1
                self.console.print(f"{'skipped' if answer == 's' else 'saved'} pair {shown.id}")
            except LabelConflictError as error:  # the same annotator in another window
                self.console.print(f"[yellow]{error}[/]")
            shown = self.store.next_query(self.annotator, self.lease_s)
        progress = self.store.progress(self.annotator)
        self.console.print(f"{progress.done} labelled · {progress.remaining} to go")
        return given

    def show(self, query: Query) -> None:
        progress = self.store.progress(self.annotator)
        table = Table(title=f"pair {query.id} — {progress.done} labelled · {progress.remaining} to go")
        table.add_column("")
        table.add_column("A")
        table.add_column("B")
        if self.trajectories is not None:
            left, right = (gather(self.trajectories, np.array([s])).obs[0] for s in (query.left, query.right))
            left, right = left.reshape(len(left), -1), right.reshape(len(right), -1)
            both = np.concatenate([left, right])
            for dim in range(min(left.shape[1], MAX_DIMENSIONS)):
                low, high = both[:, dim].min(), both[:, dim].max()
                table.add_row(f"obs[{dim}]", sparkline(left[:, dim], low, high),
                              sparkline(right[:, dim], low, high))
        if self.media_dir is not None and query.left_media:
            table.add_row("video", *(_media_cell(self.media_dir, name)
                                     for name in (query.left_media, query.right_media)))
        self.console.print(table)
        self.console.print(self.legend + "  [bold]s[/] skip  [bold]u[/] undo last  [bold]q[/] quit")


def _media_cell(media_dir: Path, name: str) -> str:
    shown, rendering = shown_media(media_dir, name)
    path = str(media_dir / shown) if shown else ""
    return f"{path} (video rendering)".strip() if rendering else path


def label_in_terminal(
    config: LabelConfig, run_dir: Path, console: Console | None = None, stream: TextIO | None = None
) -> dict[str, Any]:
    """``rlkit label --human``: fill an empty store with random pairs, label them, export a dataset."""
    if not config.annotator:
        raise ConfigError("`rlkit label --human` needs annotator=<your id>")
    location = Path(config.database) if config.database and "://" not in config.database else None
    store = LabelStore(config.database or run_dir)
    trajectories = TrajectoryStore.load(config.trajectories) if config.trajectories else None
    if store.n_queries() == 0:
        if trajectories is None:
            raise ConfigError("the label store is empty: give trajectories=<.npz> to draw pairs from")
        store.set_scale(OrdinalScale.get(config.teacher.scale))
        store.add_queries(sample_pairs(trajectories, config.n_pairs, config.segment_length,
                                       np.random.default_rng(config.seed)))
    media = (location if location is not None and location.is_dir() else run_dir) / "media"
    session = TerminalSession(store, config.annotator, trajectories,
                              media_dir=media if media.is_dir() else None, console=console, stream=stream)
    summary: dict[str, Any] = {"annotator": config.annotator, "answered": session.run(),
                               "labels_in_store": len(store.live_labels()), "store": store.url}
    if trajectories is not None:
        npz, _ = store.export(trajectories).save(run_dir / "preferences")
        summary["path"] = str(npz.with_suffix(""))
    store.close()
    return summary

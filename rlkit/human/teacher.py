"""``HumanTeacher``: the core's ``Teacher`` answered by people through the label store.

``label(pairs)`` renders the segments' videos, writes the pairs to the store as queries, and
(by default) pauses training until enough of them are answered or a timeout passes; the web app
and the terminal session read the same store. Pairs asked again after a trainer crash keep their
ids, so labels given before the crash are found at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rlkit.data.segments import SegmentPairs
from rlkit.errors import InvalidLabelError
from rlkit.human.media import FrameFn, render_pairs
from rlkit.human.store import LabelStore


@dataclass(frozen=True)
class HumanTeacherConfig:
    wait: bool = True  # pause training for labels; False returns at once (NaN for unanswered)
    min_fraction: float = 1.0  # share of the batch that must be answered before training goes on
    timeout_s: float = 3600.0  # then go on with what there is (unanswered pairs are NaN)
    poll_s: float = 0.5
    redundancy: int = 1  # annotators asked per pair (> 1 gives the dashboard its agreement)
    render_media: bool = True
    fps: float = 10.0

    def __post_init__(self) -> None:
        if not 0.0 < self.min_fraction <= 1.0:
            raise InvalidLabelError(f"min_fraction must lie in (0, 1], got {self.min_fraction}")
        if self.timeout_s < 0 or self.poll_s <= 0:
            raise InvalidLabelError(f"timeout_s must be >= 0 and poll_s > 0, got "
                                    f"{self.timeout_s} and {self.poll_s}")


@dataclass(frozen=True)
class WaitReport:
    """How the last ``label`` call went: answered pairs out of asked, and the seconds it waited."""

    asked: int
    answered: int
    waited_s: float
    timed_out: bool


class HumanTeacher:
    """Labels pairs with people: z = the first live label of each pair, NaN if skipped/unanswered."""

    def __init__(
        self,
        store: LabelStore,
        config: HumanTeacherConfig | None = None,
        media_dir: str | Path | None = None,
        frames: FrameFn | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.config = config or HumanTeacherConfig()
        if self.config.render_media and media_dir is None:
            raise InvalidLabelError("render_media needs media_dir (the folder `rlkit serve` serves)")
        self.media_dir = None if media_dir is None else Path(media_dir)
        self.frames = frames
        self.clock = clock
        self.batches = 0
        self.last_wait: WaitReport | None = None

    def label(self, pairs: SegmentPairs) -> np.ndarray:
        media = None
        if self.config.render_media and self.media_dir is not None:
            media = render_pairs(pairs, self.media_dir, fps=self.config.fps, frames=self.frames)
        ids = self.store.add_queries(pairs, batch=f"batch-{self.batches}",
                                     redundancy=self.config.redundancy, media=media)
        self.batches += 1
        start = self.clock()
        needed = int(np.ceil(self.config.min_fraction * len(ids)))
        while True:
            labels, answered = self.answers(ids)
            waited = self.clock() - start
            timed_out = waited >= self.config.timeout_s
            if not self.config.wait or answered.sum() >= needed or timed_out:
                self.last_wait = WaitReport(len(ids), int(answered.sum()), waited,
                                            timed_out and answered.sum() < needed)
                return labels
            time.sleep(self.config.poll_s)

    def answers(self, query_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per query: the first live label (NaN if none or all skipped), and whether anyone answered."""
        position = {int(q): i for i, q in enumerate(query_ids)}
        labels = np.full(len(query_ids), np.nan, dtype=np.float32)
        answered = np.zeros(len(query_ids), dtype=bool)
        for record in self.store.live_labels(query_ids):
            i = position[record.query_id]
            answered[i] = True
            if np.isnan(labels[i]) and np.isfinite(record.value):
                labels[i] = record.value
        return labels, answered

"""``HumanTeacher``: the core's ``Teacher`` answered by people through the label store.

``label(pairs)`` writes the segments' media (plots at once; with a ``renderer``, the videos of
segments with simulator states in a background thread, see ``rlkit.human.render``), writes the
pairs to the store as queries, and (by default) pauses training until enough of them are answered
by ``redundancy`` people each, or a timeout passes; the web app and the terminal session read the
same store. Pairs asked again after a trainer crash keep their ids, so labels given before the
crash are found at once.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rlkit.data.segments import SegmentPairs
from rlkit.errors import InvalidLabelError
from rlkit.factories.configs import HumanTeacherConfig
from rlkit.feedback.answers import Answers
from rlkit.human.media import render_pairs
from rlkit.human.render import RenderQueue, StateRenderer
from rlkit.human.store import LabelStore


@dataclass(frozen=True)
class WaitReport:
    """How the last ``label`` call went: pairs answered by ``redundancy`` people out of pairs asked,
    and the seconds it waited.

    Attributes:
        asked: the pairs asked.
        answered: the pairs answered by ``redundancy`` people.
        waited_s: the seconds it waited.
        timed_out: it stopped waiting at ``timeout_s`` with pairs still unanswered.
    """

    asked: int
    answered: int
    waited_s: float
    timed_out: bool


class HumanTeacher:
    """Labels pairs with people; each pair waits for ``redundancy`` responses (labels or skips)."""

    def __init__(
        self,
        store: LabelStore,
        config: HumanTeacherConfig | None = None,
        media_dir: str | Path | None = None,
        renderer: StateRenderer | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Ask through ``store``.

        Args:
            store: the label store the pairs are written to as queries and the labels read from.
            config: how it asks and waits (None: ``HumanTeacherConfig()``'s defaults).
            media_dir: where the segments' media are written, the folder ``rlkit serve`` serves
                (needed with ``config.render_media``).
            renderer: turns a segment's simulator states (kept by the trajectory store,
                ``Trajectory.states``) into the frames of its video, e.g.
                ``MujocoRenderer(env_id)`` (None: no videos from states).
            clock: the time in seconds, for the wait's timeout (``time.monotonic``).

        Raises:
            InvalidLabelError: when ``config.render_media`` is set without ``media_dir``.
        """
        self.store = store
        self.config = config or HumanTeacherConfig()
        if self.config.render_media and media_dir is None:
            raise InvalidLabelError("render_media needs media_dir (the folder `rlkit serve` serves)")
        self.media_dir = None if media_dir is None else Path(media_dir)
        self.renders = None if renderer is None else RenderQueue(renderer, self.config.fps)
        self.clock = clock
        self.batches = 0
        self.last_wait: WaitReport | None = None

    def resume_state(self) -> dict[str, Any]:
        """What a resumed trainer restores: the number of batches asked (it names the next one)."""
        return {"batches": self.batches}

    def restore_state(self, state: dict[str, Any]) -> None:
        self.batches = int(state["batches"])

    def label(self, pairs: SegmentPairs) -> np.ndarray:
        """One z per pair (the ``Teacher`` protocol): the mean of its people's labels, NaN if all
        skipped or nobody answered. With ``redundancy`` > 1 the mean may fall between the scale's
        levels (it estimates P(A better)); ``answers`` keeps every person's label as it was given."""
        return self.answers(pairs).mean_per_pair(len(pairs))

    def answers(self, pairs: SegmentPairs) -> Answers:
        """Ask people about the pairs and wait (as configured); every response, a row each."""
        media = None
        if self.config.render_media and self.media_dir is not None:
            media = render_pairs(pairs, self.media_dir, fps=self.config.fps, renders=self.renders)
        ids = self.store.add_queries(pairs, batch=f"batch-{self.batches}",
                                     redundancy=self.config.redundancy, media=media)
        self.batches += 1
        start = self.clock()
        needed = int(np.ceil(self.config.min_fraction * len(ids)))
        while True:
            answers = self.responses(ids)
            complete = int((answers.responses_per_pair(len(ids)) >= self.config.redundancy).sum())
            waited = self.clock() - start
            timed_out = waited >= self.config.timeout_s
            if not self.config.wait or complete >= needed or timed_out:
                self.last_wait = WaitReport(len(ids), complete, waited, timed_out and complete < needed)
                return answers
            time.sleep(self.config.poll_s)

    def responses(self, query_ids: np.ndarray) -> Answers:
        """The store's live responses to these queries now (a query may stand twice in a batch)."""
        positions: dict[int, list[int]] = defaultdict(list)
        for i, query_id in enumerate(np.asarray(query_ids).tolist()):
            positions[query_id].append(i)
        pair: list[int] = []
        value: list[float] = []
        annotator: list[str] = []
        interface: list[str] = []
        for record in self.store.live_labels(query_ids):  # oldest first
            for i in positions[record.query_id]:
                pair.append(int(i))
                value.append(record.value)
                annotator.append(record.annotator)
                interface.append(record.interface)
        nobody = np.setdiff1d(np.arange(len(query_ids)), pair)
        unanswered = np.full(len(nobody), np.nan, dtype=np.float32)
        return Answers(
            pair=np.concatenate([np.asarray(pair, dtype=np.int64), nobody]),
            value=np.concatenate([np.asarray(value, dtype=np.float32), unanswered]),
            annotator=(*annotator, *[""] * len(nobody)),
            interface=(*interface, *["unanswered"] * len(nobody)),
        )

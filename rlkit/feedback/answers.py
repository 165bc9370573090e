"""Labels from several annotators: one row per answer (``Answers``), and the protocol of a
teacher that gives them (``AnnotatedTeacher``; people through ``rlkit.human.HumanTeacher``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rlkit.data.segments import SegmentPairs


@dataclass(frozen=True)
class Answers:
    """Every live response people gave to a batch, a row each, oldest first.

    A pair nobody answered has one NaN row, from annotator ``""`` through interface
    ``"unanswered"``.

    Attributes:
        pair: ``(rows,)`` int, each row's pair as its position in the batch.
        value: ``(rows,)`` float, the labels in [0, 1] (NaN = skipped).
        annotator: each row's annotator.
        interface: where each label was given (``web``, ``terminal``, ``unanswered``).
    """

    pair: np.ndarray
    value: np.ndarray
    annotator: tuple[str, ...]
    interface: tuple[str, ...]

    def responses_per_pair(self, n_pairs: int) -> np.ndarray:
        answered = np.array([i != "unanswered" for i in self.interface], dtype=bool)
        return np.bincount(self.pair[answered], minlength=n_pairs)

    def mean_per_pair(self, n_pairs: int) -> np.ndarray:
        """The mean of each pair's labels (skips left out), NaN where there is none."""
        given = np.isfinite(self.value)
        total = np.bincount(self.pair[given], weights=self.value[given], minlength=n_pairs)
        count = np.bincount(self.pair[given], minlength=n_pairs)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, total / np.maximum(count, 1), np.nan).astype(np.float32)


@runtime_checkable
class AnnotatedTeacher(Protocol):
    """A ``Teacher`` whose pairs may be answered by several people: ``answers`` gives every
    response as a row, ``label`` their mean per pair; its resume state is plain JSON."""

    def label(self, pairs: SegmentPairs) -> np.ndarray: ...

    def answers(self, pairs: SegmentPairs) -> Answers: ...

    def resume_state(self) -> dict[str, Any]: ...

    def restore_state(self, state: dict[str, Any]) -> None: ...

"""A run's records beside its labels: M3HF phases and the feedback people confirmed, and the
training numbers the dashboard draws."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from typing import Any

from rlkit.extras import extra

with extra("human"):
    from sqlalchemy import Select, insert, select, update

from rlkit.errors import InvalidLabelError, RlkitError
from rlkit.human import rows, schema
from rlkit.human.database import Database, inserted_id
from rlkit.human.rows import ANNOTATOR_PATTERN, MAX_ANNOTATOR_CHARS


class UnknownQueryError(RlkitError, LookupError):
    """A query id (or an M3HF phase) that is not in the store."""


class PhaseClosedError(RlkitError, ValueError):
    """Feedback for an M3HF phase whose feedback the training loop has already taken."""


def check_annotator(annotator: str) -> str:
    if re.fullmatch(ANNOTATOR_PATTERN, annotator) is None:
        raise InvalidLabelError(
            f"annotator id must be 1-{MAX_ANNOTATOR_CHARS} letters, digits or _.@- (starting with a "
            f"letter or digit), got {annotator!r}"
        )
    return annotator


class RunRecords(Database):
    """M3HF feedback and training metrics of a run."""

    def add_phase(self, phase: int, video: str = "", context: Mapping[str, Any] | None = None) -> None:
        """Open an M3HF phase for feedback (its rollout video and the parser's context); a phase
        asked again (a resumed run) opens again."""
        values = {"video": video, "context": json.dumps(dict(context or {})), "closed_at": None}
        with self._write() as c:
            if c.execute(select(schema.phases.c.id).where(schema.phases.c.phase == phase)).first():
                c.execute(update(schema.phases).where(schema.phases.c.phase == phase).values(**values))
            else:
                c.execute(insert(schema.phases).values(phase=phase, created_at=time.time(), **values))

    def latest_phase(self) -> dict[str, Any] | None:
        """The newest phase: its number, video, context, and whether its feedback was taken."""
        with self.engine.connect() as c:
            row = c.execute(select(schema.phases).order_by(schema.phases.c.phase.desc()).limit(1)).first()
        if row is None:
            return None
        return phase_record(row)

    def add_feedback(self, phase: int, annotator: str, text: str, specs: list[dict[str, Any]]) -> int:
        """Commit a person's confirmed feedback: the text and the reward specs they approved."""
        check_annotator(annotator)
        with self._write() as c:  # the same lock as take_phase_feedback: nothing slips in between
            row = c.execute(select(schema.phases.c.closed_at).where(schema.phases.c.phase == phase)).first()
            if row is None:
                raise UnknownQueryError(f"no M3HF phase {phase} is open for feedback")
            if row.closed_at is not None:
                raise PhaseClosedError(
                    f"M3HF phase {phase} is closed: training took its feedback and went on; "
                    "yours was not stored, so give it at the next phase"
                )
            return inserted_id(c.execute(insert(schema.feedback).values(
                phase=phase, annotator=annotator, text=text, specs=json.dumps(specs),
                created_at=time.time())))

    def phase_feedback(self, phase: int) -> list[dict[str, Any]]:
        """All feedback confirmed for a phase so far, oldest first (reading changes nothing)."""
        with self.engine.connect() as c:
            return [feedback_record(row) for row in c.execute(_feedback_of(phase))]

    def take_phase_feedback(self, phase: int) -> list[dict[str, Any]]:
        """Close the phase and return all its feedback, in one transaction: what a person confirms
        later is refused (``PhaseClosedError``), never stored unused.

        Taking consumes nothing: a run killed after taking but before the phase's generation
        completed opens the phase again on resume and must get the same feedback at once, not
        wait for people who already answered. The loop asks a phase only until its generation
        completes, so the phase number is what keeps feedback from being used twice.
        ``consumed_at`` notes when the loop first took each item.
        """
        now, phases, feedback = time.time(), schema.phases, schema.feedback
        with self._write() as c:
            c.execute(update(phases).where(phases.c.phase == phase, phases.c.closed_at.is_(None))
                      .values(closed_at=now))
            c.execute(update(feedback).where(feedback.c.phase == phase, feedback.c.consumed_at.is_(None))
                      .values(consumed_at=now))
            return [feedback_record(row) for row in c.execute(_feedback_of(phase))]

    # -- metrics ----------------------------------------------------------------------------
    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        """Training numbers for the dashboard (reward held-out accuracy, agent return), one commit."""
        now = time.time()
        points = [{"name": name, "step": int(step), "value": float(value), "created_at": now}
                  for name, value in metrics.items()]
        if points:
            with self._write() as c:
                c.execute(insert(schema.metrics), points)

    def metric_series(self) -> dict[str, list[tuple[int, float]]]:
        with self.engine.connect() as c:
            found = c.execute(select(schema.metrics).order_by(schema.metrics.c.name,
                                                              schema.metrics.c.step)).all()
        series: dict[str, list[tuple[int, float]]] = {}
        for row in found:
            name, step, value = metric_point(row)
            series.setdefault(name, []).append((step, value))
        return series


def _feedback_of(phase: int) -> Select[Any]:
    table = schema.feedback
    return select(table).where(table.c.phase == phase).order_by(table.c.id)


def phase_record(row: Any) -> dict[str, Any]:
    """A ``phases`` row as the M3HF page reads it, each value checked."""
    where = ("phases", row.id)
    rows.moment(row.closed_at, *where, "closed_at", optional=True)
    return {"phase": rows.whole(row.phase, *where, "phase"), "video": rows.text(row.video, *where, "video"),
            "context": rows.json_value(row.context, *where, "context", dict),
            "closed": row.closed_at is not None}


def feedback_record(row: Any) -> dict[str, Any]:
    """A ``feedback`` row, each value checked."""
    where = ("feedback", row.id)
    rows.whole(row.phase, *where, "phase")
    rows.moment(row.consumed_at, *where, "consumed_at", optional=True)
    return {"id": row.id, "annotator": rows.annotator(row.annotator, *where),
            "text": rows.text(row.text, *where, "text"),
            "specs": rows.json_value(row.specs, *where, "specs", list),
            "created_at": rows.moment(row.created_at, *where, "created_at")}


def metric_point(row: Any) -> tuple[str, int, float]:
    """A ``metrics`` row as (name, step, value), each checked (a value may be NaN)."""
    where = ("metrics", row.id)
    value = row.value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise rows.damaged(*where, f"value {value!r} is not a number")
    return rows.text(row.name, *where, "name"), rows.whole(row.step, *where, "step"), float(value)

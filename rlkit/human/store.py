"""The label store: every query, label, M3HF feedback and training metric of a run, in one database.

SQLite in WAL mode is the default (``labels.sqlite`` in the run directory); any SQLAlchemy URL
(``postgresql://...``) works too. Each submit is its own committed transaction, so a server or a
trainer killed at any moment loses nothing that was acknowledged, and both resume from the rows.
Layers: ``database`` (engine, schema check, settings) < ``rows`` (what a value read must be) <
``records`` (M3HF feedback, metrics) < ``store_check`` (the check on open) < here (pairs and labels).
Every label and query row carries a checksum (``checksum``), verified when the store opens.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlkit.extras import extra

with extra("human"):
    from sqlalchemy import Connection, and_, bindparam, delete, exists, func, insert, select, update
    from sqlalchemy.exc import IntegrityError

from rlkit.data.segments import SegmentPairs
from rlkit.data.store import TrajectoryStore
from rlkit.errors import InvalidLabelError, RlkitError
from rlkit.feedback.dataset import PreferenceDataset
from rlkit.feedback.scale import OrdinalScale
from rlkit.human.checksum import LABEL_COLUMNS, QUERY_COLUMNS, row_checksum
from rlkit.human.database import DB_NAME, DamagedStoreError, inserted_id
from rlkit.human.records import (
    ANNOTATOR_PATTERN,
    MAX_ANNOTATOR_CHARS,
    RunRecords,
    UnknownQueryError,
    check_annotator,
)
from rlkit.human.rows import (
    check_label_row,
    check_query_row,
    label_fields_ok,
    parse_scale,
    query_fields_ok,
)
from rlkit.human.schema import labels, leases, queries, settings
from rlkit.human.store_check import check_store

__all__ = [
    "ANNOTATOR_PATTERN", "DB_NAME", "MAX_ANNOTATOR_CHARS", "DamagedStoreError", "LabelConflictError",
    "LabelRecord", "LabelStore", "Progress", "Query", "UnknownQueryError", "check_annotator",
]

class LabelConflictError(RlkitError):
    """The annotator already has a live label on this pair (undo it first); nothing was overwritten."""


@dataclass(frozen=True)
class Query:
    """One pair to label: segments as (traj, start, length) and the media names of their videos.

    Attributes:
        id: the query's id in the store.
        left: the left segment, (trajectory id, start, length).
        right: the right segment, of the same length.
        left_media: the left segment's video under the run's ``media/`` (empty until written).
        right_media: the right segment's video.
        redundancy: how many annotators are to label the pair.
    """

    id: int
    left: tuple[int, int, int]
    right: tuple[int, int, int]
    left_media: str
    right_media: str
    redundancy: int


@dataclass(frozen=True)
class LabelRecord:
    """One live label.

    Attributes:
        id: the label's id in the store.
        query_id: the labelled pair's query id.
        annotator: who gave it.
        value: the label, on the store's scale; NaN when the pair was skipped.
        interface: where it was given (``web``, ``terminal``).
        created_at: when, in seconds since the epoch.
    """

    id: int
    query_id: int
    annotator: str
    value: float
    interface: str
    created_at: float


@dataclass(frozen=True)
class Progress:
    """How far one annotator is: labels given (skips included) and pairs still open to them.

    Attributes:
        done: the labels the annotator gave, skips included.
        remaining: the pairs still open to them.
    """

    done: int
    remaining: int

    @property
    def total(self) -> int:
        return self.done + self.remaining


class LabelStore(RunRecords):
    """Queries (segment pairs), per-annotator labels, M3HF feedback and metrics of one run.

    Opening checks every table, index, setting and row (``rlkit.human.store_check``): a damaged or
    edited store is refused by name (``DamagedStoreError``) and left as it is.

    Args:
        location: a run directory, a database file, or any SQLAlchemy URL (``postgresql://...``).
        synchronous: SQLite's ``synchronous`` setting, ``NORMAL`` or ``FULL`` (every commit synced,
            for power cuts too).
    """

    def __init__(self, location: str | os.PathLike[str], *, synchronous: str = "NORMAL") -> None:
        super().__init__(location, synchronous=synchronous)
        try:
            with self.engine.connect() as c:
                check_store(c)
        except DamagedStoreError as error:
            self.close()
            raise DamagedStoreError(
                f"{self.where}: damaged label store: {error}; it is left as it is: restore it from a "
                "copy, or use a new run directory"
            ) from None

    @property
    def scale(self) -> OrdinalScale:
        """The scale labels are checked against (``five`` until a teacher or server sets one).

        Read from the database each time, never cached: a trainer may set another scale while
        ``rlkit serve`` runs (allowed until the first label), and the server must follow it.
        """
        with self.engine.connect() as c:
            return _stored_scale(c)

    def set_scale(self, scale: OrdinalScale) -> None:
        """Choose the scale; refused once labels exist on another scale (they would mean other things)."""
        if scale.is_continuous:
            raise InvalidLabelError("people label on a discrete scale; 'oracle' has no levels")
        spec = json.dumps({"name": scale.name, "levels": scale.levels, "names": scale.names})
        with self._write() as c:  # one transaction: no label can slip in between check and switch
            current = _stored_scale(c)
            has_labels = c.execute(select(exists().where(labels.c.retracted_at.is_(None)))).scalar()
            if current.levels != scale.levels and has_labels:
                raise InvalidLabelError(
                    f"this store already holds labels on the {current.name!r} scale; it cannot "
                    f"switch to {scale.name!r}"
                )
            c.execute(delete(settings).where(settings.c.key == "scale"))
            c.execute(insert(settings).values(key="scale", value=spec))

    # -- queries ----------------------------------------------------------------------------
    def add_queries(
        self,
        pairs: SegmentPairs,
        *,
        batch: str = "",
        redundancy: int = 1,
        media: tuple[list[str], list[str]] | None = None,
    ) -> np.ndarray:
        """Store pairs to label; a pair already stored keeps its id (a restarted trainer re-asks)."""
        if redundancy < 1:
            raise InvalidLabelError(f"redundancy must be >= 1, got {redundancy}")
        n = len(pairs)
        left_media, right_media = media if media is not None else ([""] * n, [""] * n)
        if len(left_media) != n or len(right_media) != n:
            raise InvalidLabelError(f"{n} pairs but {len(left_media)}/{len(right_media)} media names")
        now = time.time()
        ids = np.empty(n, dtype=np.int64)
        with self._write() as c:
            for i, (left, right) in enumerate(zip(pairs.left.tolist(), pairs.right.tolist(), strict=True)):
                key = and_(queries.c.left_traj == left[0], queries.c.left_start == left[1],
                           queries.c.right_traj == right[0], queries.c.right_start == right[1],
                           queries.c.length == left[2])
                found = c.execute(select(queries.c.id).where(key)).scalar()
                if found is None:
                    values = {"batch": str(batch), "left_traj": left[0], "left_start": left[1],
                              "right_traj": right[0], "right_start": right[1], "length": left[2],
                              "redundancy": int(redundancy), "left_media": str(left_media[i]),
                              "right_media": str(right_media[i]), "created_at": now}
                    found = inserted_id(c.execute(insert(queries).values(
                        **values, checksum=row_checksum(values, QUERY_COLUMNS))))
                ids[i] = found
        return ids

    def query(self, query_id: int) -> Query:
        query_id = int(query_id)
        with self.engine.connect() as c:
            row = c.execute(select(queries).where(queries.c.id == query_id)).first()
        if row is None:
            raise UnknownQueryError(f"no query with id {query_id}")
        return _query(row)

    def n_queries(self) -> int:
        with self.engine.connect() as c:
            return int(c.execute(select(func.count()).select_from(queries)).scalar() or 0)

    def next_query(self, annotator: str, lease_s: float | None = None) -> Query | None:
        """The oldest pair this annotator has not answered that still needs labels, counting the
        pairs other annotators hold (leases) as taken. ``lease_s`` holds the returned pair for
        this annotator that long, so two people at once are not shown the same last pair."""
        now = time.time()
        if lease_s is None:
            with self.engine.connect() as c:
                row = c.execute(_NEXT_QUERY, {"annotator": annotator, "now": now}).first()
            return None if row is None else _query(row)
        with self._write() as c:
            row = c.execute(_NEXT_QUERY, {"annotator": annotator, "now": now}).first()
            if row is not None:
                key = {"qid": row.id, "annotator": annotator}
                c.execute(_DROP_LEASE, key)
                c.execute(_TAKE_LEASE, key | {"until": now + lease_s})
        return None if row is None else _query(row)

    def progress(self, annotator: str) -> Progress:
        """Answers given, and open pairs (needing labels) this annotator has not answered."""
        with self.engine.connect() as c:
            done, n_open, answered_open = c.execute(_PROGRESS, {"annotator": annotator}).one()
        return Progress(done=int(done), remaining=int(n_open - answered_open))

    # -- labels -----------------------------------------------------------------------------
    def submit(
        self, query_id: int, annotator: str, value: float | None, interface: str = "web"
    ) -> LabelRecord:
        """Commit one label (``None`` or NaN = skip) before returning; never replaces a live label."""
        check_annotator(annotator)
        query_id = int(query_id)
        label = None if value is None or not np.isfinite(value) else float(value)  # None: skipped
        skipped = label is None
        now = time.time()
        try:
            with self._write() as c:
                if not skipped:  # checked in the transaction, against the scale stored now
                    _stored_scale(c).validate(np.array([value]), what=f"label for query {query_id}")
                # One statement both finds the pair and counts the label (a skip adds 0).
                found = c.execute(_COUNT_LABEL, {"qid": query_id, "added": 0 if skipped else 1})
                if found.rowcount == 0:
                    raise UnknownQueryError(f"no query with id {query_id}")
                c.execute(_DROP_LEASE, {"qid": query_id, "annotator": annotator})
                values = {"query_id": query_id, "annotator": annotator, "value": label,
                          "interface": str(interface), "created_at": now, "retracted_at": None}
                label_id = inserted_id(c.execute(
                    _INSERT_LABEL, values | {"checksum": row_checksum(values, LABEL_COLUMNS)}))
        except IntegrityError:
            raise LabelConflictError(
                f"annotator {annotator!r} already labelled query {query_id}; undo it to change it"
            ) from None
        return LabelRecord(label_id, query_id, annotator, np.nan if label is None else label,
                           interface, now)

    def undo(self, annotator: str) -> LabelRecord | None:
        """Retract this annotator's latest live label (only theirs); returns it, or None."""
        with self._write() as c:
            row = c.execute(select(labels).where(labels.c.annotator == annotator,
                                                 labels.c.retracted_at.is_(None))
                            .order_by(labels.c.id.desc()).limit(1)).first()
            if row is None:
                return None
            _label(row, None)
            retracted = dict(row._mapping) | {"retracted_at": time.time()}
            c.execute(update(labels).where(labels.c.id == row.id).values(
                retracted_at=retracted["retracted_at"], checksum=row_checksum(retracted, LABEL_COLUMNS)))
            if row.value is not None:
                c.execute(update(queries).where(queries.c.id == row.query_id)
                          .values(n_given=queries.c.n_given - 1))
        return _label(row, None)

    def live_labels(self, query_ids: np.ndarray | None = None) -> list[LabelRecord]:
        """Every live (not undone) label, oldest first; optionally only of some queries."""
        statement = select(labels).where(labels.c.retracted_at.is_(None)).order_by(labels.c.id)
        if query_ids is not None:
            statement = statement.where(labels.c.query_id.in_([int(q) for q in query_ids]))
        with self.engine.connect() as c:
            scale = _stored_scale(c)
            return [_label(row, scale) for row in c.execute(statement)]

    def export(self, trajectories: TrajectoryStore, source_prefix: str = "human") -> PreferenceDataset:
        """Every live label as a ``PreferenceDataset`` (skips as NaN) with annotator, time, query id."""
        dataset = PreferenceDataset(trajectories, self.scale)
        records = self.live_labels()
        with self.engine.connect() as c:
            pairs = {row.id: _query(row) for row in c.execute(select(queries))}
        by_origin: dict[tuple[str, str], list[LabelRecord]] = {}
        for record in records:
            by_origin.setdefault((record.interface, record.annotator), []).append(record)
        for (interface, annotator), group in by_origin.items():
            left = np.array([pairs[r.query_id].left for r in group], dtype=np.int64)
            right = np.array([pairs[r.query_id].right for r in group], dtype=np.int64)
            values = np.array([r.value for r in group], dtype=np.float32)
            dataset.append(
                SegmentPairs(trajectories, left, right), values,
                source=f"{source_prefix}/{interface}", annotator=annotator,
                meta={"labelled_at": np.array([r.created_at for r in group]),
                      "query_id": np.array([r.query_id for r in group])},
            )
        return dataset

# The statements of the hot path (every page view and submit), built once: SQLAlchemy then only
# binds parameters instead of rebuilding and re-keying the expression on each call.
_MINE = and_(labels.c.annotator == bindparam("annotator"), labels.c.retracted_at.is_(None))
_OPEN = queries.c.n_given < queries.c.redundancy
_HELD_BY_OTHERS = (select(func.count()).select_from(leases)
                   .where(leases.c.query_id == queries.c.id, leases.c.annotator != bindparam("annotator"),
                          leases.c.until > bindparam("now"))
                   .scalar_subquery())
_NEXT_QUERY = (select(queries)
               .where(queries.c.n_given + _HELD_BY_OTHERS < queries.c.redundancy,
                      ~exists().where(labels.c.query_id == queries.c.id, _MINE))
               .order_by(queries.c.id).limit(1))
_DROP_LEASE = delete(leases).where(leases.c.query_id == bindparam("qid"),
                                   leases.c.annotator == bindparam("annotator"))
_TAKE_LEASE = insert(leases).values(query_id=bindparam("qid"), annotator=bindparam("annotator"),
                                    until=bindparam("until"))
_PROGRESS = select(
    select(func.count()).select_from(labels).where(_MINE).scalar_subquery(),
    select(func.count()).select_from(queries).where(_OPEN).scalar_subquery(),
    select(func.count()).select_from(labels.join(queries)).where(_MINE, _OPEN).scalar_subquery(),
)
_COUNT_LABEL = (update(queries).where(queries.c.id == bindparam("qid"))
                .values(n_given=queries.c.n_given + bindparam("added")))
_INSERT_LABEL = insert(labels)


def _stored_scale(connection: Connection) -> OrdinalScale:
    return parse_scale(connection.execute(select(settings.c.value).where(settings.c.key == "scale")).scalar())


def _query(row: Any) -> Query:
    if not (query_fields_ok(tuple(getattr(row, c) for c in QUERY_COLUMNS)) and type(row.n_given) is int):
        check_query_row(row)  # names what is wrong
    return Query(id=row.id, left=(row.left_traj, row.left_start, row.length),
                 right=(row.right_traj, row.right_start, row.length), left_media=row.left_media,
                 right_media=row.right_media, redundancy=row.redundancy)


def _label(row: Any, scale: OrdinalScale | None) -> LabelRecord:
    levels = None if scale is None else frozenset(scale.levels)
    if not label_fields_ok(tuple(getattr(row, c) for c in LABEL_COLUMNS), levels):
        check_label_row(row, scale)  # names what is wrong (or passes a value within 1e-6 of a level)
    return LabelRecord(id=row.id, query_id=row.query_id, annotator=row.annotator,
                       value=np.nan if row.value is None else float(row.value),
                       interface=row.interface, created_at=row.created_at)

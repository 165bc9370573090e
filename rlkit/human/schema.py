"""The label database's tables and their schema version (SQLAlchemy Core, any backend).

A new database gets every table at once and records ``CURRENT_VERSION`` in ``schema_version``.
A database of another version, older or newer, is refused naming it: no schema is upgraded in
place before rlkit 1.0.
"""

from __future__ import annotations

import time

from rlkit.extras import extra

with extra("human"):
    from sqlalchemy import (
        Column,
        Connection,
        Float,
        ForeignKey,
        Index,
        Integer,
        MetaData,
        String,
        Table,
        Text,
        UniqueConstraint,
        func,
        insert,
        inspect,
        select,
    )

from rlkit.errors import FileFormatError

metadata = MetaData()

schema_version = Table(
    "schema_version", metadata,
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("applied_at", Float, nullable=False),
)

queries = Table(
    "queries", metadata,
    Column("id", Integer, primary_key=True),
    Column("batch", String(64), nullable=False, default=""),
    Column("left_traj", Integer, nullable=False),
    Column("left_start", Integer, nullable=False),
    Column("right_traj", Integer, nullable=False),
    Column("right_start", Integer, nullable=False),
    Column("length", Integer, nullable=False),
    Column("redundancy", Integer, nullable=False, default=1),
    Column("n_given", Integer, nullable=False, default=0),  # live, not skipped labels (kept by submit/undo)
    Column("left_media", String(255), nullable=False, default=""),
    Column("right_media", String(255), nullable=False, default=""),
    Column("created_at", Float, nullable=False),
    Column("checksum", String(16), nullable=False),  # of QUERY_COLUMNS (rlkit.human.checksum)
    UniqueConstraint("left_traj", "left_start", "right_traj", "right_start", "length", name="uq_pair"),
)

labels = Table(
    "labels", metadata,
    Column("id", Integer, primary_key=True),
    Column("query_id", Integer, ForeignKey("queries.id"), nullable=False),
    Column("annotator", String(64), nullable=False),
    Column("value", Float, nullable=True),  # NULL = skipped
    Column("interface", String(16), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("retracted_at", Float, nullable=True),  # set by undo; the row is kept for the audit trail
    Column("checksum", String(16), nullable=False),  # of LABEL_COLUMNS, renewed by undo
    Index("ix_labels_annotator", "annotator", "created_at"),
)
# One live label per (pair, annotator): a second submit is refused, never an overwrite.
Index("uq_live_label", labels.c.query_id, labels.c.annotator, unique=True,
      sqlite_where=labels.c.retracted_at.is_(None), postgresql_where=labels.c.retracted_at.is_(None))

settings = Table(
    "settings", metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

phases = Table(
    "phases", metadata,
    Column("id", Integer, primary_key=True),
    Column("phase", Integer, nullable=False, unique=True),
    Column("video", String(255), nullable=False, default=""),
    Column("context", Text, nullable=False, default="{}"),  # JSON: agents, colours, env description
    Column("created_at", Float, nullable=False),
    # Set when the M3HF loop takes the phase's feedback, so feedback confirmed after
    # that is refused with a reason instead of being stored and never used.
    Column("closed_at", Float, nullable=True),
)

feedback = Table(
    "feedback", metadata,
    Column("id", Integer, primary_key=True),
    Column("phase", Integer, ForeignKey("phases.phase"), nullable=False),
    Column("annotator", String(64), nullable=False),
    Column("text", Text, nullable=False),
    Column("specs", Text, nullable=False),  # JSON list of confirmed RewardSpec dumps
    Column("created_at", Float, nullable=False),
    Column("consumed_at", Float, nullable=True),  # when the M3HF loop first read it (a resume reads again)
)

metrics = Table(
    "metrics", metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(64), nullable=False),
    Column("step", Integer, nullable=False),
    Column("value", Float, nullable=False),
    Column("created_at", Float, nullable=False),
    Index("ix_metrics_name", "name", "step"),
)


# A pair shown to an annotator is held for them for a while, so two people labelling
# at once are not both given the last pair that needs one more label.
leases = Table(
    "leases", metadata,
    Column("query_id", Integer, ForeignKey("queries.id"), primary_key=True),
    Column("annotator", String(64), primary_key=True),
    Column("until", Float, nullable=False),
)


CURRENT_VERSION = 4


def create_or_check(connection: Connection, where: str) -> None:
    """Create every table in a new database (one without ``schema_version``); refuse one whose
    schema is not ``CURRENT_VERSION``.

    Args:
        connection: a connection inside the transaction that opens the store.
        where: the store's file or URL (without a password), for the message.

    Raises:
        FileFormatError: when the database records an older or a newer schema version.
    """
    if not inspect(connection).has_table(schema_version.name):
        metadata.create_all(connection)
        connection.execute(insert(schema_version).values(version=CURRENT_VERSION, applied_at=time.time()))
        return
    found = connection.execute(select(func.max(schema_version.c.version))).scalar() or 0
    if found > CURRENT_VERSION:
        raise FileFormatError(
            f"{where}: label store schema version {found} is newer than this rlkit's "
            f"{CURRENT_VERSION}; upgrade rlkit to open it"
        )
    if found < CURRENT_VERSION:
        raise FileFormatError(
            f"{where}: label store schema version {found} is older than the version "
            f"{CURRENT_VERSION} this rlkit reads, and older stores are not upgraded; the store is "
            "left as it is: export its labels with the rlkit that wrote it (LabelStore.export), or "
            "start a new store (a new run directory, or an empty database)"
        )

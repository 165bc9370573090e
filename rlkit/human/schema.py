"""The label database's tables and their versioned migrations (SQLAlchemy Core, any backend).

Version 1 is the first schema; each later version appends one migration to ``MIGRATIONS``. Opening
a database runs the missing migrations in order inside one transaction and records each in
``schema_version``, so an older run directory upgrades in place and a newer one is refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable

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
        bindparam,
        func,
        insert,
        inspect,
        select,
        text,
        update,
    )

from rlkit.errors import FileFormatError
from rlkit.human.checksum import LABEL_COLUMNS, QUERY_COLUMNS, row_checksum

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
    Column("checksum", String(16), nullable=False),  # version 4: of QUERY_COLUMNS (rlkit.human.checksum)
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
    Column("checksum", String(16), nullable=False),  # version 4: of LABEL_COLUMNS, renewed by undo
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
    # Version 3: set when the M3HF loop takes the phase's feedback, so feedback confirmed after
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


# Version 2: a pair shown to an annotator is held for them for a while, so two people labelling
# at once are not both given the last pair that needs one more label.
leases = Table(
    "leases", metadata,
    Column("query_id", Integer, ForeignKey("queries.id"), primary_key=True),
    Column("annotator", String(64), primary_key=True),
    Column("until", Float, nullable=False),
)


def _create_v1(connection: Connection) -> None:
    metadata.create_all(connection, tables=[queries, labels, phases, feedback, metrics, settings])


def _add_leases_v2(connection: Connection) -> None:
    leases.create(connection)


def _add_phase_closing_v3(connection: Connection) -> None:
    # A new database already has the column: version 1 creates today's ``phases`` table.
    column = phases.c.closed_at
    if column.name in {found["name"] for found in inspect(connection).get_columns("phases")}:
        return
    kind = column.type.compile(dialect=connection.dialect)
    connection.execute(text(f"ALTER TABLE phases ADD COLUMN {column.name} {kind}"))


def _add_row_checksums_v4(connection: Connection) -> None:
    # Rows written before checksums get theirs from what they hold now.
    for table, columns in ((queries, QUERY_COLUMNS), (labels, LABEL_COLUMNS)):
        if "checksum" not in {found["name"] for found in inspect(connection).get_columns(table.name)}:
            connection.execute(text(f"ALTER TABLE {table.name} ADD COLUMN checksum VARCHAR(16) "
                                    "NOT NULL DEFAULT ''"))
        rows = connection.execute(select(table).where(table.c.checksum == "")).all()
        if rows:
            connection.execute(update(table).where(table.c.id == bindparam("row_id"))
                               .values(checksum=bindparam("sum")),
                               [{"row_id": row.id, "sum": row_checksum(row._mapping, columns)}
                                for row in rows])


MIGRATIONS: tuple[Callable[[Connection], None], ...] = (
    _create_v1, _add_leases_v2, _add_phase_closing_v3, _add_row_checksums_v4,
)
CURRENT_VERSION = len(MIGRATIONS)


def migrate(connection: Connection) -> int:
    """Bring the database to ``CURRENT_VERSION``; returns the version it had before (0 = new)."""
    if not inspect(connection).has_table("schema_version"):
        schema_version.create(connection)
    found = connection.execute(select(func.max(schema_version.c.version))).scalar() or 0
    if found > CURRENT_VERSION:
        raise FileFormatError(
            f"label database schema version {found} is newer than this rlkit's {CURRENT_VERSION}; "
            "upgrade rlkit to open it"
        )
    for version in range(found + 1, CURRENT_VERSION + 1):
        MIGRATIONS[version - 1](connection)
        connection.execute(insert(schema_version).values(version=version, applied_at=time.time()))
    return found

"""The database under the label store: engine (SQLite in WAL mode, or any SQLAlchemy URL; a bare
``postgresql://`` uses psycopg 3), the schema created or its version checked on open, transactions
that take the write lock up front on both SQLite and PostgreSQL, and key-value settings."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rlkit.extras import extra, require

with extra("human"):
    from sqlalchemy import (
        Connection,
        CursorResult,
        Engine,
        create_engine,
        event,
        insert,
        make_url,
        select,
        update,
    )
    from sqlalchemy import exc as sqlalchemy_exc

from rlkit.errors import FileFormatError, InvalidLabelError, StateError
from rlkit.human import schema, sqlite_file

DB_NAME = "labels.sqlite"
BUSY_TIMEOUT_S = 30.0  # how long a SQLite writer waits for another one before giving up
# Any constant key: every rlkit writer of a PostgreSQL database takes this one advisory lock.
_POSTGRES_WRITE_LOCK = "SELECT pg_advisory_xact_lock(7215091)"


class DamagedStoreError(FileFormatError):
    """A label store whose contents are not what rlkit writes (a row, a setting, a table or an
    index damaged or edited); nothing is written to it."""


def database_url(location: str | os.PathLike[str]) -> str:
    """A SQLAlchemy URL as is; a run directory (existing, or a new path without a suffix) or a
    database file path as a SQLite URL."""
    text = str(location)
    if "://" in text:
        return text
    path = Path(text)
    if path.name == DB_NAME and path.is_dir():  # never a store inside what should be one
        sqlite_file.check_location(path)
    # a run directory, or a new one (no suffix); asked so that another process creating that
    # directory at this moment cannot turn it into a database file path
    if not path.is_file() and (path.is_dir() or not path.suffix):
        path = path / DB_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path.resolve()}"


class Database:
    """One run's database; ``LabelStore`` builds on it."""

    def __init__(self, location: str | os.PathLike[str], *, synchronous: str = "NORMAL") -> None:
        self.url = database_url(location)
        parsed = make_url(self.url)
        # how errors name the store: its file, or its URL without a password
        self.where = (parsed.database or ":memory:") if self.url.startswith("sqlite") else \
            parsed.render_as_string(hide_password=True)
        if not self.url.startswith("sqlite"):
            self.engine = _make_engine(self.url, synchronous)
            with self._write() as connection:
                schema.create_or_check(connection, self.where)
            return
        path = make_url(self.url).database or ":memory:"
        try:  # a damaged file is named and left as it is; nothing is written to it
            if path != ":memory:":
                sqlite_file.check_location(Path(path))
                if not Path(path).exists():
                    sqlite_file.create_whole(Path(path))
                sqlite_file.check_file(Path(path))
            self.engine = _make_engine(self.url, synchronous)
            with self._write() as connection:
                schema.create_or_check(connection, self.where)
        except (sqlite3.DatabaseError, sqlalchemy_exc.DatabaseError) as error:
            if "locked" in str(error):
                raise
            raise FileFormatError(
                f"{path}: not a readable rlkit label store ({error}); the file is left as it is: "
                "restore it from a copy, or use a new run directory"
            ) from None

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        with self.engine.connect() as connection:
            connection.execution_options(rlkit_write=True)
            with connection.begin():
                yield connection

    # -- settings ---------------------------------------------------------------------------
    def set_setting(self, key: str, value: Any) -> None:
        text = json.dumps(value)
        with self._write() as c:
            if c.execute(select(schema.settings.c.key).where(schema.settings.c.key == key)).first():
                c.execute(update(schema.settings).where(schema.settings.c.key == key).values(value=text))
            else:
                c.execute(insert(schema.settings).values(key=key, value=text))

    def setting(self, key: str, default: Any = None) -> Any:
        with self.engine.connect() as c:
            row = c.execute(select(schema.settings.c.value).where(schema.settings.c.key == key)).first()
        if row is None:
            return default
        try:
            return json.loads(row[0])
        except (json.JSONDecodeError, TypeError):
            raise DamagedStoreError(f"settings row {key!r}: value {str(row[0])[:80]!r} is not JSON") from None


def inserted_id(result: CursorResult[Any]) -> int:
    """The id of the row an ``insert`` just added (SQLAlchemy types the key as optional)."""
    key = result.inserted_primary_key
    if key is None:
        raise StateError("the database returned no primary key for the inserted row")
    return int(key[0])


def _make_engine(url: str, synchronous: str) -> Engine:
    if url.startswith("postgresql"):
        return _make_postgres_engine(url)
    if not url.startswith("sqlite"):
        return create_engine(url, pool_pre_ping=True)
    if synchronous not in ("NORMAL", "FULL"):
        raise InvalidLabelError(f"synchronous must be NORMAL or FULL, got {synchronous!r}")
    path = make_url(url).database
    if path and path != ":memory:":
        _switch_to_wal(path)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_S})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # NORMAL loses nothing when a process dies in WAL mode (only a power cut may lose the last
        # commits); FULL syncs every commit for power cuts too.
        dbapi_connection.isolation_level = None  # let SQLAlchemy's BEGIN below take over
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        # Writers take the lock up front, so two of them queue on busy_timeout instead of failing
        # on a lock upgrade; readers read a WAL snapshot and block nobody.
        write = connection.get_execution_options().get("rlkit_write", False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def _switch_to_wal(path: str) -> None:
    """Put the database file in WAL mode (readers never block the writer), once per file.

    The mode is stored in the file, so this switches only a new database. SQLite takes the
    exclusive lock the switch needs without calling its busy handler: when two processes (a
    trainer and ``rlkit serve``) open a new database at once, one of them gets "database is
    locked" at once, whatever the busy timeout. So the switch waits for the other one here.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            mode = connection.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)
            continue
        finally:
            connection.close()
        if mode != "wal":
            raise InvalidLabelError(f"SQLite cannot keep {path} in WAL mode (it stays in {mode!r} mode); "
                                    f"put the run directory on a local file system")
        return


def _make_postgres_engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.drivername == "postgresql":  # SQLAlchemy's default would be psycopg2; rlkit ships psycopg 3
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.drivername == "postgresql+psycopg":  # MissingExtraError naming rlkit[postgresql]
        require("psycopg", "postgresql", "a label store on PostgreSQL (the psycopg 3 driver)")
    engine = create_engine(parsed, pool_pre_ping=True)

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        # As SQLite's BEGIN IMMEDIATE: writers queue one after another for the whole transaction,
        # so a check-then-write (a pair's lease, a setting, the tables' creation) never races
        # another writer. Readers take no lock and see committed rows.
        if connection.get_execution_options().get("rlkit_write", False):
            connection.exec_driver_sql(_POSTGRES_WRITE_LOCK)

    return engine

"""The SQLite file under a label store: made whole before it gets its name, checked when opened.

A new store is built under a temporary name and hard-linked into place with its tables, so a
``labels.sqlite`` that exists is always a store that was complete once. An empty file, a directory
or a pipe in its place, or a write-ahead log whose database is gone is therefore damage, never a
store to start afresh: it is refused by name and left as it is.

Opening checks the file's size against its header (a cut-off tail: SQLite reads missing bytes as
zeros and its own checks pass) and runs ``PRAGMA integrity_check`` (pages, b-trees, and every index
against its table; ``quick_check`` skips the last and misses a changed indexed value).
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import stat
from contextlib import suppress
from pathlib import Path

from rlkit.extras import extra

with extra("human"):
    from sqlalchemy import create_engine

from rlkit.errors import FileFormatError
from rlkit.human import schema

HEADER_BYTES = 100
MAGIC = b"SQLite format 3\x00"


def check_location(path: Path) -> None:
    """Refuse what cannot be a label store at ``path`` and must not be replaced by a new one."""
    wal = path.with_name(path.name + "-wal")
    try:
        found = path.stat()
    except FileNotFoundError:
        if wal.is_file() and wal.stat().st_size > 0:
            raise FileFormatError(
                f"{path} is missing but its write-ahead log {wal.name} is there: the store was "
                "deleted or moved; restore it from a copy (with its -wal file), or use a new run directory"
            ) from None
        return
    if stat.S_ISDIR(found.st_mode):
        raise FileFormatError(f"{path} is a directory, not a label store; a store is never started "
                              "inside it: move it away, or use a new run directory")
    if not stat.S_ISREG(found.st_mode):
        raise FileFormatError(f"{path} is not a regular file (a pipe, socket or device): not a label "
                              "store; it is left as it is")
    if found.st_size == 0:
        raise FileFormatError(
            f"{path} is empty (0 bytes): this run's label store was emptied (a store is created "
            "whole, never empty); restore it from a copy, or use a new run directory"
        )


def create_whole(path: Path) -> None:
    """Make a new store at ``path`` with its tables, all at once; one made meanwhile by another
    process (a trainer and ``rlkit serve`` starting together) is kept."""
    temporary = path.with_name(f".{path.name}.new-{secrets.token_hex(6)}")
    engine = create_engine(f"sqlite:///{temporary}")  # rollback journal: the file alone is complete
    try:
        with engine.begin() as connection:
            schema.create_or_check(connection, str(path))
        engine.dispose()
        with suppress(FileExistsError):
            os.link(temporary, path)
    finally:
        engine.dispose()
        temporary.unlink(missing_ok=True)


def check_file(path: Path) -> None:
    """Raise ``sqlite3.DatabaseError`` naming the damage if the file's size disagrees with its
    header or ``PRAGMA integrity_check`` finds a problem."""
    with open(path, "rb") as handle:
        header = handle.read(HEADER_BYTES)
    if len(header) == HEADER_BYTES and header.startswith(MAGIC):
        _check_size(path, header)
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
    try:
        problems = [row[0] for row in connection.execute("PRAGMA integrity_check").fetchall()]
    finally:
        connection.close()
    if problems != ["ok"]:
        raise sqlite3.DatabaseError("; ".join(str(p) for p in problems[:3]))


def _check_size(path: Path, header: bytes) -> None:
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    size = path.stat().st_size
    if page_size < 512 or size % page_size:
        raise sqlite3.DatabaseError(f"its size, {size} bytes, is not a whole number of "
                                    f"{page_size}-byte pages: the file was cut off")
    pages = int.from_bytes(header[28:32], "big")
    header_size_valid = header[24:28] == header[92:96]  # SQLite's rule for the size field
    wal = path.with_name(path.name + "-wal")
    settled = not wal.exists() or wal.stat().st_size == 0  # else the log may hold the newer pages
    if header_size_valid and settled and size != pages * page_size:
        raise sqlite3.DatabaseError(f"it holds {size // page_size} pages but its header says {pages}: "
                                    "the file was cut off or extended")

"""The checksum every label and query row of a store carries, written with the row.

A bit flipped on disk in a value no index holds (a label's value: 1.0 and 0.0 differ by one bit
in SQLite's record format) is invisible to SQLite's own checks and may still be on the scale, so
only a checksum of the row finds it. BLAKE2b, 8 bytes, as hex: this guards against damage, not
against someone who can write the file. A query's ``n_given`` is left out: it changes with every
label, and is recounted from the labels instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

LABEL_COLUMNS = ("query_id", "annotator", "value", "interface", "created_at", "retracted_at")
QUERY_COLUMNS = ("batch", "left_traj", "left_start", "right_traj", "right_start", "length",
                 "redundancy", "left_media", "right_media", "created_at")


def checksum(values: tuple[Any, ...]) -> str:
    """The checksum of a row's values, as stored beside them: Python ints, floats, strings and
    None, as the database gives them back (a float column's value as a float)."""
    return hashlib.blake2b(repr(values).encode(), digest_size=8).hexdigest()


def row_checksum(row: Mapping[Any, Any], columns: tuple[str, ...]) -> str:
    """The checksum of ``columns`` of a row (a mapping of column name to value)."""
    return checksum(tuple(row[column] for column in columns))

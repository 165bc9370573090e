"""What a value read from the label store must be before it is used.

The checks here raise ``DamagedStoreError`` naming the table, the row and the value, so a route or
a trainer gets a sentence, never a ``ValueError`` from deep inside a page.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

from rlkit.errors import InvalidLabelError
from rlkit.feedback.scale import OrdinalScale
from rlkit.human.checksum import LABEL_COLUMNS, QUERY_COLUMNS, row_checksum
from rlkit.human.database import DamagedStoreError

MAX_ANNOTATOR_CHARS = 64
# Ids travel in cookies, file names and logs: letters, digits and a few separators only.
ANNOTATOR_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$"
_ANNOTATOR = re.compile(ANNOTATOR_PATTERN)

def damaged(table: str, row_id: Any, what: str) -> DamagedStoreError:
    return DamagedStoreError(f"{table} row {row_id!r}: {what}")


def whole(value: Any, table: str, row_id: Any, column: str, least: int = 0) -> int:
    """``value`` as an integer of at least ``least``, or the damage named."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise damaged(table, row_id, f"{column} {value!r} is not an integer >= {least}")
    return value


def moment(value: Any, table: str, row_id: Any, column: str, optional: bool = False) -> float | None:
    """``value`` as a finite float (a time or a number), None where ``optional`` allows it."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise damaged(table, row_id, f"{column} {value!r} is not a finite number")
    return float(value)


def text(value: Any, table: str, row_id: Any, column: str) -> str:
    if not isinstance(value, str):
        raise damaged(table, row_id, f"{column} {value!r} is not text")
    return value


def json_value(value: Any, table: str, row_id: Any, column: str, kind: type) -> Any:
    """The JSON document in a text column, of ``kind`` (dict or list)."""
    try:
        parsed = json.loads(text(value, table, row_id, column))
    except json.JSONDecodeError as error:
        raise damaged(table, row_id, f"{column} {value[:80]!r} is not JSON ({error})") from None
    if not isinstance(parsed, kind):
        raise damaged(table, row_id, f"{column} {value[:80]!r} is not a JSON {kind.__name__}")
    return parsed


def label_value(value: Any, row_id: Any, scale: OrdinalScale | None) -> float | None:
    """A label's value: None (skipped), or a level of ``scale`` (when given)."""
    if value is None:
        return None
    number = moment(value, "labels", row_id, "value")
    if scale is not None and number not in scale.levels:  # exactly a level: the usual case, fast
        try:
            scale.validate(np.array([number]), what="value")
        except InvalidLabelError as error:
            raise damaged("labels", row_id, str(error)) from None
    return number


def parse_scale(stored: str | None) -> OrdinalScale:
    """The scale a store holds in its ``scale`` setting (``five`` when it has none)."""
    if stored is None:
        return OrdinalScale.get("five")
    spec = json_value(stored, "settings", "scale", "value", dict)
    name, levels, names = spec.get("name"), spec.get("levels"), spec.get("names")
    if not (isinstance(name, str) and isinstance(levels, list) and isinstance(names, list)
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in levels)
            and all(isinstance(n, str) for n in names)):
        raise damaged("settings", "scale", f"{stored[:120]!r} is not a scale (name, levels, names)")
    try:
        scale = OrdinalScale(name, tuple(float(v) for v in levels), tuple(names))
    except InvalidLabelError as error:
        raise damaged("settings", "scale", str(error)) from None
    if scale.is_continuous:
        raise damaged("settings", "scale", f"{name!r} has no levels; people label on a discrete scale")
    return scale


def check_query_row(row: Any, verify: bool = False) -> None:
    """Raise if a ``queries`` row is not one rlkit wrote (``verify``: its checksum too)."""
    row_id = row.id
    for column in ("left_traj", "left_start", "right_traj", "right_start", "n_given"):
        whole(getattr(row, column), "queries", row_id, column)
    for column in ("length", "redundancy"):
        whole(getattr(row, column), "queries", row_id, column, least=1)
    for column in ("batch", "left_media", "right_media"):
        text(getattr(row, column), "queries", row_id, column)
    moment(row.created_at, "queries", row_id, "created_at")
    if verify:
        _verify(row, "queries", QUERY_COLUMNS)


def check_label_row(row: Any, scale: OrdinalScale | None, verify: bool = False) -> None:
    """Raise if a ``labels`` row is not one rlkit wrote: its value on ``scale`` (when given),
    ``verify``: its checksum too."""
    row_id = row.id
    whole(row.query_id, "labels", row_id, "query_id", least=1)
    annotator(row.annotator, "labels", row_id)
    label_value(row.value, row_id, scale)
    text(row.interface, "labels", row_id, "interface")
    moment(row.created_at, "labels", row_id, "created_at")
    moment(row.retracted_at, "labels", row_id, "retracted_at", optional=True)
    if verify:
        _verify(row, "labels", LABEL_COLUMNS)


def annotator(value: Any, table: str, row_id: Any) -> str:
    if not isinstance(value, str) or _ANNOTATOR.fullmatch(value) is None:
        raise damaged(table, row_id, f"annotator {value!r} is not an annotator id")
    return value


def _verify(row: Any, table: str, columns: tuple[str, ...]) -> None:
    if row.checksum != row_checksum(row._mapping, columns):
        raise damaged(table, row.id, f"its contents do not match its checksum {row.checksum!r} "
                                     "(changed on disk or by hand)")


def query_fields_ok(fields: tuple[Any, ...]) -> bool:
    """Whether a query's ``QUERY_COLUMNS`` values are all as rlkit writes them (fast, unnamed:
    ``check_query_row`` names what is wrong)."""
    batch, left_traj, left_start, right_traj, right_start, length, redundancy, left_media, \
        right_media, created_at = fields
    return (type(left_traj) is int and left_traj >= 0 and type(left_start) is int and left_start >= 0
            and type(right_traj) is int and right_traj >= 0 and type(right_start) is int
            and right_start >= 0 and type(length) is int and length >= 1 and type(redundancy) is int
            and redundancy >= 1 and type(batch) is str and type(left_media) is str
            and type(right_media) is str and type(created_at) is float and math.isfinite(created_at))


def label_fields_ok(fields: tuple[Any, ...], levels: frozenset[float] | None) -> bool:
    """Whether a label's ``LABEL_COLUMNS`` values are all as rlkit writes them, its value exactly
    one of ``levels`` (when given) (fast, unnamed: ``check_label_row`` names what is wrong)."""
    query_id, annotator, value, interface, created_at, retracted_at = fields
    return (type(query_id) is int and query_id >= 1 and type(annotator) is str
            and _ANNOTATOR.fullmatch(annotator) is not None
            and (value is None or (type(value) is float and (value in levels if levels is not None
                                                             else 0.0 <= value <= 1.0)))
            and type(interface) is str and type(created_at) is float and math.isfinite(created_at)
            and (retracted_at is None or (type(retracted_at) is float and math.isfinite(retracted_at))))


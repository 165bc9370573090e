"""The check a label store passes when it opens, on SQLite and PostgreSQL alike.

Every table and index rlkit made must be there (a dropped unique index would let a second live
label in silently), every setting and row must hold what rlkit writes (types, ranges, the scale,
JSON, each label and query row's checksum), and each query's count of given labels must match
its labels. One pass over the rows; the first few problems are named, with the number of the rest.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rlkit.extras import extra

with extra("human"):
    from sqlalchemy import Connection, UniqueConstraint, inspect, select

from rlkit.human import records, rows, schema
from rlkit.human.database import DamagedStoreError

NAMED_PROBLEMS = 3


def check_store(connection: Connection) -> None:
    """Raise ``DamagedStoreError`` naming what in the store is not as rlkit wrote it."""
    problems = _missing_parts(connection)
    if not problems:
        problems = _bad_rows(connection)
    if problems:
        more = f"; and {len(problems) - NAMED_PROBLEMS} more" if len(problems) > NAMED_PROBLEMS else ""
        raise DamagedStoreError("; ".join(problems[:NAMED_PROBLEMS]) + more)


def _missing_parts(connection: Connection) -> list[str]:
    found = inspect(connection)
    tables = set(found.get_table_names())
    problems = [f"table {name} is missing" for name in schema.metadata.tables if name not in tables]
    for table in schema.metadata.sorted_tables:
        if table.name not in tables:
            continue
        indexes = {index["name"]: index for index in found.get_indexes(table.name)}
        unique = {constraint["name"] for constraint in found.get_unique_constraints(table.name)}
        for index in table.indexes:
            if index.name not in indexes:
                problems.append(f"index {index.name} of table {table.name} is missing")
            elif index.unique and not indexes[index.name]["unique"]:
                problems.append(f"index {index.name} of table {table.name} is no longer unique")
        for constraint in table.constraints:
            if isinstance(constraint, UniqueConstraint) and isinstance(constraint.name, str) \
                    and constraint.name not in unique and constraint.name not in indexes:
                problems.append(f"unique constraint {constraint.name} of table {table.name} is missing")
    return problems


def _bad_rows(connection: Connection) -> list[str]:
    problems: list[str] = []

    def check(what: Any, *args: Any) -> bool:
        try:
            what(*args)
        except DamagedStoreError as error:
            problems.append(str(error))
            return False
        return True

    scale = None
    for row in connection.execute(select(schema.settings)):
        if row.key == "scale":
            if check(rows.parse_scale, row.value):
                scale = rows.parse_scale(row.value)
        elif row.key == "secret":
            check(_secret, row.value)
        else:
            check(rows.json_value, row.value, "settings", row.key, "value", object)
    counts: Counter[int] = Counter()
    for row in connection.execute(select(schema.labels)):
        if check(rows.check_label_row, row, scale, True) and row.retracted_at is None \
                and row.value is not None:
            counts[row.query_id] += 1
    query_ids = set()
    for row in connection.execute(select(schema.queries)):
        query_ids.add(row.id)
        if check(rows.check_query_row, row, True) and row.n_given != counts[row.id]:
            problems.append(f"queries row {row.id}: n_given {row.n_given} but {counts[row.id]} live labels")
    problems += [f"labels of query {query_id}: no such query" for query_id in counts.keys() - query_ids]
    for row in connection.execute(select(schema.phases)):
        check(records.phase_record, row)
    for row in connection.execute(select(schema.feedback)):
        check(records.feedback_record, row)
    for row in connection.execute(select(schema.metrics)):
        check(records.metric_point, row)
    return problems


def _secret(value: str) -> None:
    secret = rows.json_value(value, "settings", "secret", "value", str)
    if len(secret) < 16:
        raise rows.damaged("settings", "secret", f"{secret!r} is shorter than 16 characters")

"""The check a label store passes when it opens, on SQLite and PostgreSQL alike.

Every table and index rlkit made must be there (a dropped unique index would let a second live
label in silently), every setting and row must hold what rlkit writes (types, ranges, the scale,
JSON, each label and query row's checksum), and each query's count of given labels must match
its labels. One pass over the rows; the first few problems are named, with the number of the rest.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

from rlkit.extras import extra

with extra("human"):
    from sqlalchemy import Connection, Table, UniqueConstraint, inspect, select

from rlkit.human import records, rows, schema
from rlkit.human.checksum import LABEL_COLUMNS, QUERY_COLUMNS, checksum
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
    # Each row's values are read in checksum order as plain tuples (the driver's, not SQLAlchemy's
    # rows: a third of the time at 100k rows), checked at once and hashed; only a row that fails
    # is read again and checked value by value, to name what is wrong.
    levels = None if scale is None else frozenset(scale.levels)
    counts: Counter[int] = Counter()
    labels, queries = schema.labels, schema.queries
    n = len(LABEL_COLUMNS)
    for found in _tuples(connection, labels, LABEL_COLUMNS):
        fields = found[1:n + 1]
        if rows.label_fields_ok(fields, levels) and found[0] == checksum(fields):
            live = fields[2] is not None and fields[5] is None
        else:
            row = connection.execute(select(labels).where(labels.c.id == found[-1])).one()
            live = check(rows.check_label_row, row, scale, True) and row.value is not None \
                and row.retracted_at is None
        if live:
            counts[fields[0]] += 1
    query_ids = set()
    n = len(QUERY_COLUMNS)
    for found in _tuples(connection, queries, (*QUERY_COLUMNS, "n_given")):
        fields, row_id, n_given = found[1:n + 1], found[-1], found[-2]
        query_ids.add(row_id)
        fine = rows.query_fields_ok(fields) and type(n_given) is int and found[0] == checksum(fields)
        if not fine:
            fine = check(rows.check_query_row,
                         connection.execute(select(queries).where(queries.c.id == row_id)).one(), True)
        if fine and n_given != counts[row_id]:
            problems.append(f"queries row {row_id}: n_given {n_given} but {counts[row_id]} live labels")
    problems += [f"labels of query {query_id}: no such query" for query_id in counts.keys() - query_ids]
    for row in connection.execute(select(schema.phases)):
        check(records.phase_record, row)
    for row in connection.execute(select(schema.feedback)):
        check(records.feedback_record, row)
    for row in connection.execute(select(schema.metrics)):
        check(records.metric_point, row)
    return problems


def _tuples(connection: Connection, table: Table, columns: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """(checksum, *columns, id) of every row of ``table``, as the driver's tuples."""
    statement = select(table.c.checksum, *(table.c[c] for c in columns), table.c.id)
    cursor = connection.connection.cursor()
    try:
        cursor.execute(str(statement.compile(connection)))
        return cast(list[tuple[Any, ...]], cursor.fetchall())  # sqlite3 and psycopg give tuples
    finally:
        cursor.close()


def _secret(value: str) -> None:
    secret = rows.json_value(value, "settings", "secret", "value", str)
    if len(secret) < 16:
        raise rows.damaged("settings", "secret", f"{secret!r} is shorter than 16 characters")

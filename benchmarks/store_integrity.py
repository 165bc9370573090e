"""What opening a label store costs at 100k labels, part by part, and what each check catches.

A store of 50,000 pairs, each labelled by two of 18 annotators (100,000 labels, written with their
checksums in bulk), is opened as ``rlkit serve`` and a trainer open it. Reported: the open time
(CPU seconds, median of 3; and once in wall seconds) and its parts (``PRAGMA quick_check``,
``PRAGMA integrity_check``, the row check with checksums), the checksum's cost per written row
and a submit's latency, and for three kinds of damage (the last byte cut off, a bit flipped in a
label's time, a bit flipped in a label's value that keeps it on the scale) whether
``quick_check``, ``integrity_check`` and the whole open catch it. ``ok``: the open takes under
2 CPU seconds and catches all three. Prints one JSON line.

    .venv/bin/python benchmarks/store_integrity.py [--labels 100000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import struct
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import insert

from rlkit.errors import FileFormatError
from rlkit.feedback import FIVE
from rlkit.human import LabelStore
from rlkit.human.checksum import LABEL_COLUMNS, QUERY_COLUMNS, row_checksum
from rlkit.human.schema import labels, queries
from rlkit.human.store_check import check_store

GOAL_OPEN_S = 2.0
VALUES = (0.0, 0.2, 0.5, 0.8, 1.0)


def build(run_dir: Path, n_labels: int) -> None:
    store = LabelStore(run_dir)
    store.set_scale(FIVE)
    n_queries, now = n_labels // 2, time.time()
    query_rows, label_rows = [], []
    for i in range(n_queries):
        query = {"batch": f"batch-{i // 1000}", "left_traj": i % 400, "left_start": i // 400,
                 "right_traj": (i + 7) % 400, "right_start": i // 400, "length": 10, "redundancy": 2,
                 "left_media": f"seg-{i}-l.webm", "right_media": f"seg-{i}-r.webm", "created_at": now + i}
        query_rows.append(query | {"n_given": 2, "checksum": row_checksum(query, QUERY_COLUMNS)})
        for k in range(2):
            label = {"query_id": i + 1, "annotator": f"annotator{(2 * i + k) % 18}",
                     "value": VALUES[(i + k) % 5], "interface": "web", "created_at": now + i + 0.25 + k / 10,
                     "retracted_at": None}
            label_rows.append(label | {"checksum": row_checksum(label, LABEL_COLUMNS)})
    with store._write() as c:
        c.execute(insert(queries), query_rows)
        c.execute(insert(labels), label_rows)
    store.close()


def seconds(run: Callable[[], Any], repeats: int = 3) -> float:
    """The median CPU time of ``run`` in this process: on a shared machine wall time measures the
    neighbours (the open's wall time is reported beside it)."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return statistics.median(times)


def wall(run: Callable[[], Any]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def pragma(path: Path, name: str) -> bool:
    """Whether ``PRAGMA name`` passes the file (True: it saw nothing)."""
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [row[0] for row in connection.execute(f"PRAGMA {name}")] == ["ok"]
    except sqlite3.DatabaseError:
        return False
    finally:
        connection.close()


def opens(run_dir: Path) -> bool:
    try:
        LabelStore(run_dir).close()
    except FileFormatError:
        return False
    return True


def cut_last_byte(data: bytearray) -> bytearray:
    return data[:-1]


def flip_a_labels_time(data: bytearray, created_at: float) -> bytearray:
    """One bit of a label's stored time (its first copy in the file: the row, or the index)."""
    at = data.find(struct.pack(">d", created_at))
    data[at + 7] ^= 0x01
    return data


def flip_a_tie_to_left_better(data: bytearray) -> bytearray:
    """The first 0.5 stored after 90% of the file becomes 1.0 (one bit): still on the scale."""
    at = data.find(struct.pack(">d", 0.5), int(len(data) * 0.9))
    data[at + 1] ^= 0x10
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        build(run_dir, args.labels)
        path = run_dir / "labels.sqlite"
        store = LabelStore(run_dir)
        time_at_90 = store.live_labels()[int(args.labels * 0.9)].created_at  # the label 90% in
        with store.engine.connect() as c:
            row_check_s = seconds(lambda: check_store(c))
        submits = []
        for query_id in range(1, 201):
            submits.append(wall(lambda q=query_id: store.submit(q, "benchmark", 0.5)))
        submit_ms = statistics.median(submits) * 1e3
        store.close()
        checksum_us = seconds(lambda: [row_checksum({c: 1.5 for c in LABEL_COLUMNS}, LABEL_COLUMNS)
                                       for _ in range(10_000)]) / 10_000 * 1e6
        result: dict[str, Any] = {
            "labels": args.labels + 200, "file_bytes": path.stat().st_size,
            "open_cpu_s": round(seconds(lambda: LabelStore(run_dir).close()), 3),
            "open_wall_s": round(wall(lambda: LabelStore(run_dir).close()), 3),
            "quick_check_s": round(seconds(lambda: pragma(path, "quick_check")), 3),
            "integrity_check_s": round(seconds(lambda: pragma(path, "integrity_check")), 3),
            "row_check_s": round(row_check_s, 3),
            "checksum_us_per_row": round(checksum_us, 2), "submit_ms_median": round(submit_ms, 2),
            "damage": {},
        }
        original = path.read_bytes()
        damages: dict[str, Callable[[bytearray], bytearray]] = {
            "cut_last_byte": cut_last_byte,
            "flip_a_labels_time_at_90pct": lambda data: flip_a_labels_time(data, time_at_90),
            "flip_a_tie_to_left_better": flip_a_tie_to_left_better,
        }
        for name, damage in damages.items():
            damaged_dir = Path(tmp) / name
            damaged_dir.mkdir()
            damaged = damaged_dir / "labels.sqlite"
            damaged.write_bytes(bytes(damage(bytearray(original))))
            result["damage"][name] = {
                "quick_check_catches": not pragma(damaged, "quick_check"),
                "integrity_check_catches": not pragma(damaged, "integrity_check"),
                "open_refuses": not opens(damaged_dir),
            }
            shutil.rmtree(damaged_dir)
    result["ok"] = result["open_cpu_s"] < GOAL_OPEN_S and all(
        found["open_refuses"] for found in result["damage"].values())
    print(json.dumps(result))


if __name__ == "__main__":
    main()

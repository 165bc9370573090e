"""An experiment's result rows: one JSON object per finished unit, in ``out_dir/rows.jsonl``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlkit.persistence import atomic_open

ROWS_FILE = "rows.jsonl"


def write_rows(out: Path, rows: list[dict[str, Any]]) -> None:
    """Write the rows to ``out/rows.jsonl`` (atomically), one JSON object a line.

    Args:
        out: the experiment's output folder.
        rows: the finished units' rows.
    """
    with atomic_open(out / ROWS_FILE, "w") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in rows)


def read_rows(out: Path) -> list[dict[str, Any]]:
    """The rows ``write_rows`` wrote (what ``--report-only`` rebuilds a report from).

    Args:
        out: the experiment's output folder.

    Returns:
        The rows, in the file's order.
    """
    return [json.loads(line) for line in (out / ROWS_FILE).read_text().splitlines()]

"""An experiment's result rows: one JSON object per finished unit, in ``out_dir/rows.jsonl``."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlkit.config import StrictModel, save_config
from rlkit.errors import FileFormatError
from rlkit.persistence import atomic_open, read_json_lines

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

    Raises:
        FileFormatError: when the file is missing (no run has finished there) or damaged.
    """
    return read_json_lines(out / ROWS_FILE)


def run_or_read(out: Path, config: StrictModel, report_only: bool,
                run: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]] | None:
    """An experiment's rows: read back (``--report-only``), or the config saved, the units run and
    their rows written.

    Args:
        out: the experiment's output folder (it exists).
        config: the experiment's config, saved as ``out/config.yaml`` before a run.
        report_only: read the rows of an earlier run instead of running.
        run: runs the units and returns the finished ones' rows.

    Returns:
        The rows, or None (said on stderr) when no unit finished.
    """
    if report_only:
        return read_rows(out)
    save_config(config, out / "config.yaml")
    rows = run()
    if not rows:
        print(f"no unit finished under {out}", file=sys.stderr)
        return None
    write_rows(out, rows)
    return rows


def write_page_section(page: Path, start: str, end: str, text: str) -> None:
    """Replace what stands between a results page's ``start`` and ``end`` markers with ``text``
    (the tables a script regenerates from its rows; the page's prose around them stays).

    Args:
        page: the markdown page.
        start: the marker line before the section.
        end: the marker line after it.
        text: what goes between the markers.

    Raises:
        FileFormatError: when the page lacks the markers (nothing is written then).
    """
    content = page.read_text()
    if start not in content or end not in content.split(start, 1)[1]:
        raise FileFormatError(f"{page}: no {start} ... {end} markers to put the tables between")
    head, rest = content.split(start, 1)
    tail = rest.split(end, 1)[1]
    with atomic_open(page, "w") as handle:
        handle.write(f"{head}{start}\n{text}\n{end}{tail}")

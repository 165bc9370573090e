"""A damaged label database is refused by name when it is opened, and left exactly as it was:
truncated, overwritten, or with a page of its b-tree zeroed. Through the command: one line, exit 2."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from rlkit.errors import FileFormatError
from rlkit.human import LabelStore
from tests.test_human_store import make_pairs, make_trajectories

PAGE = 4096  # SQLite's default page size


def truncate(data: bytes) -> bytes:
    return data[: len(data) // 2]


def garbage(data: bytes) -> bytes:
    return b"not a database at all " * (len(data) // 22)


def zero_a_page(data: bytes) -> bytes:
    page = len(data) // PAGE // 2  # a page in the middle: an index or table b-tree page
    return data[: page * PAGE] + bytes(PAGE) + data[(page + 1) * PAGE:]


@pytest.fixture
def labelled(tmp_path: Path) -> Path:
    """A run directory whose label store holds 200 queries and labels, checkpointed to the file."""
    store = LabelStore(tmp_path)
    trajectories = make_trajectories(n=20, length=60)
    ids = store.add_queries(make_pairs(trajectories, 200))
    for query_id in ids:
        store.submit(query_id, "alice", 1.0)
    store.close()
    return tmp_path


@pytest.mark.parametrize("damage", [truncate, garbage, zero_a_page])
def test_a_damaged_label_store_is_refused_naming_it_and_left_untouched(
    labelled: Path, damage: Callable[[bytes], bytes]
) -> None:
    path = labelled / "labels.sqlite"
    for extra in labelled.glob("labels.sqlite-*"):  # the WAL was checkpointed on close
        extra.unlink()
    damaged = damage(path.read_bytes())
    path.write_bytes(damaged)
    with pytest.raises(FileFormatError, match=f"^{path}: not a readable rlkit label store"):
        LabelStore(labelled)
    assert path.read_bytes() == damaged  # nothing written to it


def test_rlkit_serve_on_a_damaged_store_says_so_in_one_line(labelled: Path) -> None:
    path = labelled / "labels.sqlite"
    path.write_bytes(garbage(path.read_bytes()))
    done = subprocess.run([sys.executable, "-m", "rlkit.cli", "serve", "--run-dir", str(labelled)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"rlkit serve: error: {path}: not a readable rlkit label store (file is not a database); the "
        "file is left as it is: restore it from a copy, or use a new run directory"
    ]

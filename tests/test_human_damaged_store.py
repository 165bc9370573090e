"""A damaged label database is refused by name when it is opened, and left exactly as it was:
truncated (by half or by its last byte), overwritten, emptied, replaced by a directory, with a page
of its b-tree zeroed, or deleted beside its write-ahead log. Through the command: one line, exit 2."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from rlkit.errors import FileFormatError
from rlkit.human import LabelStore
from tests.fake_data import make_pairs, make_trajectories

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


def cut_last_byte(data: bytes) -> bytes:
    return data[:-1]


def test_a_store_cut_off_by_its_last_byte_is_refused(labelled: Path) -> None:
    """SQLite reads the missing byte as zero and its quick_check passes; the size does not."""
    path = labelled / "labels.sqlite"
    path.write_bytes(cut_last_byte(path.read_bytes()))
    with pytest.raises(FileFormatError, match="not a whole number of 4096-byte pages: the file was cut off"):
        LabelStore(labelled)


def test_an_emptied_store_is_refused_not_started_afresh(labelled: Path) -> None:
    path = labelled / "labels.sqlite"
    path.write_bytes(b"")
    for location in (labelled, path, f"sqlite:///{path}"):
        with pytest.raises(FileFormatError, match=rf"^{path} is empty \(0 bytes\): this run's label store"):
            LabelStore(location)
    assert path.read_bytes() == b""


def test_a_directory_in_place_of_the_store_is_refused_and_nothing_made_inside(tmp_path: Path) -> None:
    path = tmp_path / "labels.sqlite"
    path.mkdir()
    for location in (tmp_path, path):
        with pytest.raises(FileFormatError, match=f"^{path} is a directory, not a label store"):
            LabelStore(location)
    assert list(path.iterdir()) == []


def test_a_store_deleted_beside_its_write_ahead_log_is_refused(tmp_path: Path) -> None:
    (tmp_path / "labels.sqlite-wal").write_bytes(b"\x37\x7f\x06\x82" + bytes(28))
    with pytest.raises(FileFormatError, match="labels.sqlite is missing but its write-ahead log"):
        LabelStore(tmp_path)
    assert not (tmp_path / "labels.sqlite").exists()



def test_rlkit_serve_on_an_emptied_store_refuses_in_one_line(labelled: Path) -> None:
    path = labelled / "labels.sqlite"
    path.write_bytes(b"")
    done = subprocess.run([sys.executable, "-m", "rlkit.cli", "serve", "--run-dir", str(labelled)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"rlkit serve: error: {path} is empty (0 bytes): this run's label store was emptied (a store "
        "is created whole, never empty); restore it from a copy, or use a new run directory"
    ]
    assert path.read_bytes() == b""

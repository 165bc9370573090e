"""A label store that is valid SQL but holds what rlkit never writes (edited by hand, or a bit
flipped on disk) is refused by name when it opens, on SQLite and PostgreSQL alike; a store edited
under a running server gives a named 503 on the pages that read it, never an HTTP 500.

Before the checks: a dropped table, ``secret='not json'`` and a scale without levels ended in
tracebacks, a label value ``'abc'`` or ``phases.context='{'`` gave HTTP 500 on the dashboard and
M3HF pages, and an off-scale value, ``left_traj=-5``, a dropped unique index and a flipped bit in a
label's time were served without a word.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from sqlalchemy import text

from rlkit.errors import FileFormatError
from rlkit.feedback import FIVE
from rlkit.human import LabelStore
from rlkit.human.app import create_app
from rlkit.human.database import DamagedStoreError
from rlkit.human.security import new_secret
from rlkit.human.settings import ServeConfig
from tests.fake_data import make_pairs, make_trajectories
from tests.web_client import client_for, login

EDITS = [  # (SQL, what the refusal names); the store holds one label (1.0) on query 1
    ("DROP TABLE metrics", "table metrics is missing"),
    ("DROP INDEX uq_live_label", "index uq_live_label of table labels is missing"),
    ("UPDATE settings SET value = 'not json' WHERE key = 'secret'",
     "settings row 'secret': value 'not json' is not JSON"),
    ("""UPDATE settings SET value = '{"name": "five", "names": []}' WHERE key = 'scale'""",
     "settings row 'scale': .* is not a scale"),
    ("UPDATE settings SET value = '[]' WHERE key = 'scale'",
     "settings row 'scale': value '\\[\\]' is not a JSON dict"),
    ("UPDATE phases SET context = '{'", "phases row 1: context '{' is not JSON"),
    ("UPDATE labels SET value = 7.5", "labels row 1: value: 7.5 is outside \\[0, 1\\]"),
    ("UPDATE labels SET value = 0.3", "labels row 1: value: 0.3 is not on the 'five' scale"),
    ("UPDATE queries SET left_traj = -5 WHERE id = 1", "queries row 1: left_traj -5 is not an integer >= 0"),
    # on the scale and in range: only the row's checksum sees these
    ("UPDATE labels SET value = 0.0", "labels row 1: its contents do not match its checksum"),
    ("UPDATE labels SET created_at = created_at + 1", "labels row 1: its contents do not match its checksum"),
    ("UPDATE queries SET right_media = 'other.mp4' WHERE id = 2", "queries row 2: its contents do not match"),
    ("UPDATE queries SET n_given = 0", "queries row 1: n_given 0 but 1 live labels"),
    ("UPDATE feedback SET specs = '{}'", "feedback row 1: specs '{}' is not a JSON list"),
    ("UPDATE labels SET annotator = 'a b'", "labels row 1: annotator 'a b' is not an annotator id"),
]


def fill(store: LabelStore) -> None:
    store.set_scale(FIVE)
    store.set_setting("secret", new_secret())
    store.add_queries(make_pairs(make_trajectories(), 3))
    store.submit(1, "ann", 1.0)
    store.add_phase(1, context={"agents": ["chef_0"]})
    store.add_feedback(1, "ann", "faster", [])
    store.log_metrics({"eval/return": 1.0}, step=0)


@pytest.mark.parametrize(("edit", "named"), EDITS, ids=[sql[:40] for sql, _ in EDITS])
def test_an_edited_store_is_refused_naming_the_row_and_value(location, edit: str, named: str) -> None:  # noqa: F811
    store = LabelStore(location)
    fill(store)
    with store.engine.begin() as c:
        c.execute(text(edit))
    store.close()
    with pytest.raises(DamagedStoreError, match=f"damaged label store: {named}"):
        LabelStore(location)


def test_an_untouched_store_passes_and_reopens(location) -> None:  # noqa: F811
    store = LabelStore(location)
    fill(store)
    store.undo("ann")  # undo renews the label's checksum
    store.submit(1, "ann", 0.8)
    store.take_phase_feedback(1)
    store.close()
    assert [r.value for r in LabelStore(location).live_labels()] == [0.8]


def test_a_text_value_in_a_number_column_is_named(tmp_path: Path) -> None:
    """SQLite keeps 'abc' in a REAL column as text (PostgreSQL refuses it at the UPDATE)."""
    store = LabelStore(tmp_path)
    fill(store)
    with store.engine.begin() as c:
        c.execute(text("UPDATE labels SET value = 'abc'"))
    store.close()
    with pytest.raises(DamagedStoreError, match="labels row 1: value 'abc' is not a finite number"):
        LabelStore(tmp_path)


@pytest.mark.parametrize("copy", [0, 1], ids=["in the row", "in the index"])
def test_a_bit_flipped_in_a_labels_time_on_disk_is_refused(tmp_path: Path, copy: int) -> None:
    """The time is stored twice, in the row and in an index: integrity_check finds either copy
    disagreeing with the other (quick_check sees neither)."""
    store = LabelStore(tmp_path)
    fill(store)
    (created_at,) = [r.created_at for r in store.live_labels()]
    store.close()
    path = tmp_path / "labels.sqlite"
    data = bytearray(path.read_bytes())
    needle = struct.pack(">d", created_at)  # SQLite stores a REAL as a big-endian double
    at = [i for i in range(len(data)) if data.startswith(needle, i)]
    assert len(at) == 2
    data[at[copy] + 7] ^= 0x01  # the lowest bit of the mantissa: 0.2 microseconds later or earlier
    path.write_bytes(bytes(data))
    with pytest.raises(FileFormatError, match="not a readable rlkit label store .*missing from index"):
        LabelStore(tmp_path)


def test_a_bit_flipped_in_a_labels_value_on_disk_is_refused(tmp_path: Path) -> None:
    """0.5 (a tie) and 1.0 (left better) differ by one bit; both are on the scale and no index
    holds the value, so SQLite's checks pass: the row's checksum finds it."""
    store = LabelStore(tmp_path)
    fill(store)
    store.undo("ann")
    store.submit(1, "ann", 0.5)
    store.close()
    path = tmp_path / "labels.sqlite"
    data = bytearray(path.read_bytes())
    at = [i for i in range(len(data)) if data.startswith(struct.pack(">d", 0.5), i)]
    assert len(at) == 1
    data[at[0] + 1] ^= 0x10  # 0x3FE0... -> 0x3FF0...: 1.0
    path.write_bytes(bytes(data))
    with pytest.raises(DamagedStoreError, match="labels row 2: its contents do not match its checksum"):
        LabelStore(tmp_path)


@pytest.mark.parametrize(("edit", "pages", "named"), [
    ("UPDATE labels SET value = 'abc'", ("/dashboard", "/api/dashboard"), "labels row 1: value 'abc'"),
    ("UPDATE labels SET value = 7.5", ("/dashboard", "/api/dashboard"), "labels row 1: value: 7.5"),
    ("UPDATE phases SET context = '{'", ("/m3hf",), "phases row 1: context '{' is not JSON"),
    ("UPDATE metrics SET value = 'x'", ("/dashboard", "/api/dashboard"), "metrics row 1: value 'x'"),
])
def test_a_store_edited_under_a_running_server_gives_a_named_503(
    tmp_path: Path, edit: str, pages: tuple[str, ...], named: str
) -> None:
    store = LabelStore(tmp_path)
    fill(store)
    client = client_for(create_app(store, ServeConfig(run_dir=str(tmp_path))), raise_server_exceptions=False)
    login(client, "ann")
    for page in pages:
        assert client.get(page).status_code == 200, page
    with store.engine.begin() as c:
        c.execute(text(edit))
    for page in pages:
        response = client.get(page)
        assert response.status_code == 503, (page, response.text)
        detail = response.json()["detail"]
        assert named in detail and detail.startswith("the label store is damaged: "), detail

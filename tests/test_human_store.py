"""The label store: queries, per-annotator labels, undo, resumption, export with provenance.

Each behaviour runs on both backends: SQLite (a run directory) and PostgreSQL (a database in a
throwaway local cluster, ``tests/postgres_server.py``; skipped where no server is installed).
"""

import sqlite3
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from sqlalchemy import select, text, update

from rlkit.data import TrajectoryStore
from rlkit.errors import FileFormatError, InvalidLabelError
from rlkit.extras import MissingExtraError
from rlkit.feedback import FIVE, TERNARY, PreferenceDataset
from rlkit.human import LabelConflictError, LabelStore, UnknownQueryError
from rlkit.human.records import PhaseClosedError
from rlkit.human.schema import CURRENT_VERSION, schema_version
from tests.fake_data import make_pairs, make_trajectories


@pytest.fixture
def trajectories() -> TrajectoryStore:
    return make_trajectories()


def test_annotators_walk_the_queue_and_progress_counts_skips(location, trajectories):
    store = LabelStore(location)
    ids = store.add_queries(make_pairs(trajectories, 3))
    assert store.progress("ann").remaining == 3
    first = store.next_query("ann")
    assert first.id == ids[0] and first.left[2] == 10
    store.submit(first.id, "ann", 0.8)
    store.submit(store.next_query("ann").id, "ann", None)  # skip
    progress = store.progress("ann")
    assert (progress.done, progress.remaining, progress.total) == (2, 1, 3)
    assert store.next_query("ann").id == ids[2]
    # With redundancy 1 a labelled pair is done for everyone; the skipped one still needs a label.
    assert store.next_query("bob").id == ids[1]


def test_a_second_label_is_refused_and_undo_retracts_only_ones_own(location, trajectories):
    store = LabelStore(location)
    (query_id,) = store.add_queries(make_pairs(trajectories, 1), redundancy=2)
    store.submit(query_id, "ann", 1.0)
    store.submit(query_id, "bob", 0.0)
    with pytest.raises(LabelConflictError, match="'ann' already labelled"):
        store.submit(query_id, "ann", 0.5)
    assert store.undo("carol") is None
    undone = store.undo("ann")
    assert (undone.annotator, undone.value) == ("ann", 1.0)
    assert [(r.annotator, r.value) for r in store.live_labels()] == [("bob", 0.0)]
    assert store.next_query("ann").id == query_id  # open to ann again, so she can relabel
    store.submit(query_id, "ann", 0.2)
    assert sorted(r.value for r in store.live_labels()) == [0.0, 0.2]


def test_a_shown_pair_is_held_for_its_annotator_until_answered_or_expired(location, trajectories):
    store = LabelStore(location)
    ids = store.add_queries(make_pairs(trajectories, 3))
    assert store.next_query("ann", lease_s=60).id == ids[0]
    assert store.next_query("bob", lease_s=60).id == ids[1]  # ann holds the first pair
    assert store.next_query("ann", lease_s=60).id == ids[0]  # a reload shows ann her pair again
    store.submit(ids[0], "ann", 1.0)
    assert store.next_query("ann", lease_s=0.05).id == ids[2]  # bob holds the second
    time.sleep(0.1)
    assert store.next_query("bob").id == ids[1] and store.next_query("carol").id == ids[2]  # expired


def test_an_older_or_newer_database_is_refused_naming_it_and_left_as_it_is(location):
    old = LabelStore(location)
    old.add_queries(make_pairs(make_trajectories(), 3))
    where = old.where
    with old.engine.begin() as c:  # make it a version-3 database
        c.execute(update(schema_version).values(version=3))
    old.close()
    with pytest.raises(FileFormatError) as refused:
        LabelStore(location)
    message = str(refused.value)
    assert message.startswith(f"{where}: label store schema version 3 is older than the version "
                              f"{CURRENT_VERSION} this rlkit reads")
    assert "export its labels with the rlkit that wrote it" in message and "start a new store" in message
    with old.engine.begin() as c:  # nothing was written to it
        assert c.execute(select(schema_version.c.version)).scalars().all() == [3]
        assert c.execute(text("SELECT count(*) FROM queries")).scalar() == 3
        c.execute(update(schema_version).values(version=CURRENT_VERSION + 1))
    old.close()
    newer = f"schema version {CURRENT_VERSION + 1} is newer than this rlkit"
    with pytest.raises(FileFormatError, match=newer):
        LabelStore(location)


def test_bad_submits_fail_naming_the_problem_and_store_nothing(location, trajectories):
    store = LabelStore(location)
    (query_id,) = store.add_queries(make_pairs(trajectories, 1))
    with pytest.raises(InvalidLabelError, match="0.3 is not on the 'five' scale"):
        store.submit(query_id, "ann", 0.3)
    with pytest.raises(UnknownQueryError, match="no query with id 99"):
        store.submit(99, "ann", 1.0)
    with pytest.raises(InvalidLabelError, match="annotator id"):
        store.submit(query_id, "", 1.0)
    store.set_scale(TERNARY)
    with pytest.raises(InvalidLabelError, match="0.8 is not on the 'ternary' scale"):
        store.submit(query_id, "ann", 0.8)
    assert store.live_labels() == []


def test_re_adding_the_same_pairs_keeps_their_ids_and_labels(location, trajectories):
    """A trainer that crashed and re-asks the same pairs finds the labels already given."""
    pairs = make_pairs(trajectories, 4)
    store = LabelStore(location)
    ids = store.add_queries(pairs, batch="round-0")
    store.submit(int(ids[1]), "ann", 0.0)
    store.close()
    reopened = LabelStore(location)
    assert np.array_equal(reopened.add_queries(pairs, batch="round-0"), ids)
    assert reopened.n_queries() == 4
    assert [(r.query_id, r.value) for r in reopened.live_labels()] == [(ids[1], 0.0)]


def test_export_is_a_preference_dataset_with_annotator_time_and_interface(location, tmp_path, trajectories):
    pairs = make_pairs(trajectories, 3)
    store = LabelStore(location)
    ids = store.add_queries(pairs, redundancy=2)
    store.submit(int(ids[0]), "ann", 1.0)
    store.submit(int(ids[1]), "ann", None)
    store.submit(int(ids[0]), "bob", 0.8, interface="terminal")
    store.submit(int(ids[2]), "bob", 0.0, interface="terminal")
    store.undo("bob")
    dataset = store.export(trajectories)
    assert len(dataset) == 3 and dataset.scale == FIVE
    assert list(dataset.annotators) == ["ann", "ann", "bob"]
    assert list(dataset.sources) == ["human/web", "human/web", "human/terminal"]
    assert np.allclose(dataset.labels, [1.0, np.nan, 0.8], equal_nan=True)
    assert list(dataset.meta["query_id"]) == [ids[0], ids[1], ids[0]]
    assert np.all(np.diff(dataset.meta["labelled_at"]) >= 0)
    assert np.array_equal(dataset.pairs.left[[0, 1]], pairs.left[[0, 1]])
    dataset.save(tmp_path / "prefs")
    loaded = PreferenceDataset.load(tmp_path / "prefs")
    assert list(loaded.annotators) == ["ann", "ann", "bob"] and len(loaded.labelled()) == 2


def test_the_default_database_is_sqlite_in_wal_mode_in_the_run_directory(tmp_path):
    LabelStore(tmp_path / "new-run").close()  # a run directory that does not exist yet
    assert (tmp_path / "new-run" / "labels.sqlite").is_file()
    LabelStore(tmp_path / "labels.sqlite").close()
    with sqlite3.connect(tmp_path / "labels.sqlite") as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert raw.execute("SELECT max(version) FROM schema_version").fetchone()[0] == CURRENT_VERSION
    LabelStore(f"sqlite:///{tmp_path / 'other.db'}").close()  # a URL is used as given
    assert (tmp_path / "other.db").is_file()


def test_a_trainer_and_a_server_opening_a_new_run_database_at_once_both_get_in(tmp_path):
    """`rlkit serve` and a trainer started together on a new run (threads here, as in the M3HF
    page tests): neither mistakes the run directory the other is creating for a database file,
    and the first to open the file switches it to WAL while the others wait for that instead of
    failing with "database is locked" (SQLite's switch skips the busy timeout)."""

    def open_and_use(run_dir: str, start: threading.Barrier) -> None:
        start.wait()
        store = LabelStore(run_dir)
        store.add_phase(1)
        assert store.latest_phase()["phase"] == 1
        store.close()

    for trial in range(25):  # a lost race showed up in about 1 of 8 trials of 3 openers
        run_dir, start = str(tmp_path / f"run{trial}"), threading.Barrier(4)
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(open_and_use, [run_dir] * 4, [start] * 4))


def test_a_postgresql_url_without_its_driver_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if psycopg were not installed
    with pytest.raises(MissingExtraError, match=r"psycopg.*PostgreSQL.*pip install 'rlkit\[postgresql\]'"):
        LabelStore("postgresql://labeller@127.0.0.1:1/study")


def test_m3hf_feedback_and_metrics_round_trip(location):
    store = LabelStore(location)
    with pytest.raises(UnknownQueryError, match="no M3HF phase 2"):
        store.add_feedback(2, "ann", "text", [])
    store.add_phase(2, video="phase2.gif", context={"agents": ["chef_0", "chef_1"]})
    assert store.latest_phase() == {"phase": 2, "video": "phase2.gif",
                                    "context": {"agents": ["chef_0", "chef_1"]}, "closed": False}
    store.add_feedback(2, "ann", "chef_0 should pick onions", [{"template": "x"}])
    assert store.phase_feedback(2) == store.phase_feedback(2)  # reading changes nothing
    taken = store.take_phase_feedback(2)  # the loop takes it: the phase closes
    assert [(f["annotator"], f["specs"]) for f in taken] == [("ann", [{"template": "x"}])]
    assert store.latest_phase()["closed"] and store.phase_feedback(2) == taken
    with pytest.raises(PhaseClosedError, match="phase 2 is closed: training took its feedback"):
        store.add_feedback(2, "bob", "too late", [])
    store.add_phase(2, video="phase2.gif")  # a resumed run asks the phase again: it opens again
    assert not store.latest_phase()["closed"] and store.take_phase_feedback(2) == taken
    store.log_metrics({"reward/held_out_accuracy": 0.7, "eval/return": -3.0}, step=1)
    store.log_metrics({"reward/held_out_accuracy": 0.6}, step=0)
    assert store.metric_series() == {"eval/return": [(1, -3.0)],
                                     "reward/held_out_accuracy": [(0, 0.6), (1, 0.7)]}


def test_feedback_sent_while_the_loop_takes_its_phase_is_either_taken_or_refused(location):
    store = LabelStore(location)
    store.add_phase(1)
    accepted: list[int] = []
    refused: list[str] = []

    def person() -> None:  # confirms feedback again and again, from the server's own store
        server = LabelStore(location)
        for i in range(100_000):
            try:
                accepted.append(server.add_feedback(1, "ann", f"text {i}", []))
            except PhaseClosedError:
                refused.append(f"text {i}")
                break
        server.close()

    thread = threading.Thread(target=person)
    thread.start()
    while len(accepted) < 5:
        time.sleep(0.001)
    taken = store.take_phase_feedback(1)
    thread.join()
    assert [item["id"] for item in taken] == accepted and len(refused) == 1  # none stored unused
    assert store.phase_feedback(1) == taken


def test_two_annotators_at_once_get_each_pair_once_and_lose_nothing(location, trajectories):
    store = LabelStore(location)
    rounds = 12
    ids = store.add_queries(make_pairs(trajectories, 2 * rounds))
    given: dict[str, list[int]] = {"ann": [], "bob": []}
    together = threading.Barrier(2)

    def label(annotator: str, value: float) -> None:
        for _ in range(rounds):
            together.wait()  # both ask for their next pair at the same moment
            query = store.next_query(annotator, lease_s=60)
            store.submit(query.id, annotator, value)
            given[annotator].append(query.id)

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(label, ["ann", "bob"], [1.0, 0.0]))
    live = store.live_labels()
    assert sorted(r.query_id for r in live) == sorted(ids)  # every pair labelled, none twice
    assert {(r.annotator, r.query_id, r.value) for r in live} == {
        (name, q, 1.0 if name == "ann" else 0.0) for name, qs in given.items() for q in qs}


def test_the_same_label_sent_twice_at_once_is_stored_once(location, trajectories):
    """Two tabs of one annotator submit the same pair together: one wins, the other is refused."""
    store = LabelStore(location)
    ids = [int(q) for q in store.add_queries(make_pairs(trajectories, 12))]

    def submit(query_id: int) -> bool:
        try:
            store.submit(query_id, "ann", 1.0)
            return True
        except LabelConflictError:
            return False

    with ThreadPoolExecutor(2) as pool:
        won = list(pool.map(submit, [q for q in ids for _ in range(2)]))
    assert [sum(won[2 * i:2 * i + 2]) for i in range(len(ids))] == [1] * len(ids)
    assert sorted(r.query_id for r in store.live_labels()) == ids
    assert store.next_query("bob") is None  # each pair counted once (n_given 1 = redundancy 1)

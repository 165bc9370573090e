"""The label store: queries, per-annotator labels, undo, resumption, export with provenance."""

import sqlite3
import time

import numpy as np
import pytest

from rlkit.data import SegmentPairs, TrajectoryStore, sample_pairs
from rlkit.errors import FileFormatError, InvalidLabelError
from rlkit.feedback import FIVE, TERNARY, PreferenceDataset
from rlkit.human import LabelConflictError, LabelStore, UnknownQueryError
from rlkit.human.schema import CURRENT_VERSION
from tests.test_data import make_trajectory


def make_trajectories(n: int = 6, length: int = 30, seed: int = 0) -> TrajectoryStore:
    rng = np.random.default_rng(seed)
    store = TrajectoryStore()
    store.extend([make_trajectory(length, rng) for _ in range(n)])
    return store


def make_pairs(trajectories: TrajectoryStore, n: int, seed: int = 0) -> SegmentPairs:
    return sample_pairs(trajectories, n, 10, np.random.default_rng(seed))


@pytest.fixture
def trajectories() -> TrajectoryStore:
    return make_trajectories()


def test_annotators_walk_the_queue_and_progress_counts_skips(tmp_path, trajectories):
    store = LabelStore(tmp_path)
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


def test_a_second_label_is_refused_and_undo_retracts_only_ones_own(tmp_path, trajectories):
    store = LabelStore(tmp_path)
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


def test_a_shown_pair_is_held_for_its_annotator_until_answered_or_expired(tmp_path, trajectories):
    store = LabelStore(tmp_path)
    ids = store.add_queries(make_pairs(trajectories, 3))
    assert store.next_query("ann", lease_s=60).id == ids[0]
    assert store.next_query("bob", lease_s=60).id == ids[1]  # ann holds the first pair
    assert store.next_query("ann", lease_s=60).id == ids[0]  # a reload shows ann her pair again
    store.submit(ids[0], "ann", 1.0)
    assert store.next_query("ann", lease_s=0.05).id == ids[2]  # bob holds the second
    time.sleep(0.1)
    assert store.next_query("bob").id == ids[1] and store.next_query("carol").id == ids[2]  # expired


def test_an_older_database_is_migrated_when_opened(tmp_path):
    LabelStore(tmp_path).close()
    with sqlite3.connect(tmp_path / "labels.sqlite") as raw:  # make it a version-1 database
        raw.execute("DROP TABLE leases")
        raw.execute("DELETE FROM schema_version WHERE version > 1")
    store = LabelStore(tmp_path)
    store.add_queries(make_pairs(make_trajectories(), 2))
    assert store.next_query("ann", lease_s=60).id == 1 and store.next_query("bob").id == 2
    with sqlite3.connect(tmp_path / "labels.sqlite") as raw:
        assert [v for (v,) in raw.execute("SELECT version FROM schema_version")] == [1, 2]


def test_bad_submits_fail_naming_the_problem_and_store_nothing(tmp_path, trajectories):
    store = LabelStore(tmp_path)
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


def test_re_adding_the_same_pairs_keeps_their_ids_and_labels(tmp_path, trajectories):
    """A trainer that crashed and re-asks the same pairs finds the labels already given."""
    pairs = make_pairs(trajectories, 4)
    store = LabelStore(tmp_path)
    ids = store.add_queries(pairs, batch="round-0")
    store.submit(int(ids[1]), "ann", 0.0)
    store.close()
    reopened = LabelStore(tmp_path)
    assert np.array_equal(reopened.add_queries(pairs, batch="round-0"), ids)
    assert reopened.n_queries() == 4
    assert [(r.query_id, r.value) for r in reopened.live_labels()] == [(ids[1], 0.0)]


def test_export_is_a_preference_dataset_with_annotator_time_and_interface(tmp_path, trajectories):
    pairs = make_pairs(trajectories, 3)
    store = LabelStore(tmp_path)
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


def test_the_database_is_sqlite_in_wal_mode_with_a_schema_version(tmp_path, trajectories):
    LabelStore(tmp_path / "new-run").close()  # a run directory that does not exist yet
    assert (tmp_path / "new-run" / "labels.sqlite").is_file()
    LabelStore(tmp_path / "labels.sqlite").close()
    with sqlite3.connect(tmp_path / "labels.sqlite") as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert raw.execute("SELECT max(version) FROM schema_version").fetchone()[0] == CURRENT_VERSION
        raw.execute("INSERT INTO schema_version VALUES (?, 0)", (CURRENT_VERSION + 1,))
    with pytest.raises(FileFormatError, match="newer than this rlkit"):
        LabelStore(tmp_path)


def test_m3hf_feedback_and_metrics_round_trip(tmp_path):
    store = LabelStore(f"sqlite:///{tmp_path / 'other.db'}")
    with pytest.raises(UnknownQueryError, match="no M3HF phase 2"):
        store.add_feedback(2, "ann", "text", [])
    store.add_phase(2, video="phase2.gif", context={"agents": ["chef_0", "chef_1"]})
    assert store.latest_phase() == {"phase": 2, "video": "phase2.gif",
                                    "context": {"agents": ["chef_0", "chef_1"]}}
    store.add_feedback(2, "ann", "chef_0 should pick onions", [{"template": "x"}])
    taken = store.take_feedback(2)
    assert [(f["annotator"], f["specs"]) for f in taken] == [("ann", [{"template": "x"}])]
    assert store.take_feedback(2) == []  # read once
    store.log_metrics({"reward/held_out_accuracy": 0.7, "eval/return": -3.0}, step=1)
    store.log_metrics({"reward/held_out_accuracy": 0.6}, step=0)
    assert store.metric_series() == {"eval/return": [(1, -3.0)],
                                     "reward/held_out_accuracy": [(0, 0.6), (1, 0.7)]}
    assert (tmp_path / "other.db").exists()

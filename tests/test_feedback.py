"""Ordinal scales, the preference dataset, simulated teachers and query selection."""

import json

import numpy as np
import pytest

from rlkit.data import TrajectoryStore, sample_pairs
from rlkit.errors import FileFormatError, InvalidDataError, InvalidLabelError
from rlkit.feedback import (
    FIVE,
    TERNARY,
    OrdinalScale,
    PreferenceDataset,
    SimulatedTeacher,
    TeacherConfig,
    beta_for_spread,
)
from rlkit.prefrl.query import make_selector
from tests.fake_data import make_trajectory


@pytest.fixture
def store() -> TrajectoryStore:
    rng = np.random.default_rng(0)
    store = TrajectoryStore()
    store.extend([make_trajectory(30, rng) for _ in range(8)])
    return store


@pytest.mark.parametrize("name", ["binary", "ternary", "five", "oracle"])
def test_quantize_is_unbiased_and_lands_on_the_levels(name):
    scale = OrdinalScale.get(name)
    rng = np.random.default_rng(1)
    p = np.linspace(0, 1, 21)
    z = scale.quantize(np.repeat(p, 20000), rng).reshape(21, 20000)
    np.testing.assert_allclose(z.mean(axis=1), p, atol=0.01)
    scale.validate(z.ravel())
    if not scale.is_continuous:
        assert set(np.unique(z)) <= set(np.float32(scale.levels))


def test_ternary_rounding_follows_the_paper():
    rng = np.random.default_rng(2)
    z = TERNARY.quantize(np.full(100000, 0.7), rng)
    # p > 0.5: z = 1 with probability 2p - 1, else a tie
    assert set(np.unique(z)) == {0.5, 1.0}
    assert np.mean(z == 1.0) == pytest.approx(0.4, abs=0.01)
    assert np.isnan(TERNARY.quantize(np.array([np.nan]), rng)[0])


def test_five_level_scale_uses_the_reference_grid_and_names():
    assert FIVE.levels == (0.0, 0.2, 0.5, 0.8, 1.0)
    assert FIVE.level_name(0.8) == "A slightly better"
    z = FIVE.quantize(np.full(50000, 0.3), np.random.default_rng(3))
    assert set(np.unique(z)) == {np.float32(0.2), np.float32(0.5)}
    assert np.mean(z == np.float32(0.5)) == pytest.approx(1 / 3, abs=0.01)


def test_custom_scales_are_checked():
    scale = OrdinalScale.custom((0.0, 0.3, 1.0))
    assert scale.names == ("0", "0.3", "1")
    with pytest.raises(InvalidLabelError, match="must increase"):
        OrdinalScale.custom((0.0, 0.6, 0.4, 1.0))
    with pytest.raises(InvalidLabelError, match="start at 0 and end at 1"):
        OrdinalScale.custom((0.1, 1.0))
    with pytest.raises(InvalidLabelError, match="unknown scale 'seven'"):
        OrdinalScale.get("seven")


def test_dataset_rejects_bad_labels_and_stores_nothing(store):
    rng = np.random.default_rng(4)
    dataset = PreferenceDataset(store, scale=FIVE)
    pairs = sample_pairs(store, 3, 10, rng)
    with pytest.raises(InvalidLabelError, match="1.5 is outside"):
        dataset.append(pairs, [0.0, 1.5, 1.0], source="t")
    with pytest.raises(InvalidLabelError, match="0.3 is not on the 'five' scale"):
        dataset.append(pairs, [0.0, 0.3, 1.0], source="t")
    with pytest.raises(InvalidLabelError, match="3 pairs but 2 labels"):
        dataset.append(pairs, [0.0, 1.0], source="t")
    assert len(dataset) == 0
    dataset.append(pairs, [0.0, np.nan, 0.8], source="t")
    assert len(dataset) == 3 and len(dataset.labelled()) == 2


def test_dataset_provenance_filter_split_and_merge(store):
    rng = np.random.default_rng(5)
    dataset = PreferenceDataset(store)
    dataset.append(sample_pairs(store, 4, 10, rng), np.full(4, 1.0), source="teacher",
                   annotator="sim-0", meta={"oracle_p": np.full(4, 0.9)})
    dataset.append(sample_pairs(store, 2, 10, rng), np.full(2, 0.0), source="apec",
                   meta={"ckpt_i": [3, 4], "note": np.array(["a", "b"])})
    assert dataset.sources.tolist() == ["teacher"] * 4 + ["apec"] * 2
    assert dataset.annotators.tolist() == ["sim-0"] * 4 + [""] * 2
    assert np.isnan(dataset.meta["oracle_p"][4:]).all() and np.isnan(dataset.meta["ckpt_i"][:4]).all()
    assert dataset.meta["note"].tolist() == ["", "", "", "", "a", "b"]
    apec = dataset.filter(dataset.sources == "apec")
    assert apec.meta["ckpt_i"].tolist() == [3.0, 4.0] and apec.store is store
    train, held = dataset.split(0.5, rng)
    assert len(train) == 3 and len(held) == 3
    assert sorted(np.concatenate([train.labels, held.labels])) == sorted(dataset.labels)

    other_store = TrajectoryStore()
    other_store.extend([make_trajectory(12, rng) for _ in range(2)])
    other = PreferenceDataset(other_store)
    other.append(sample_pairs(other_store, 3, 10, rng), np.full(3, 0.5), source="web",
                 annotator="alice")
    merged = dataset.merge(other)
    assert len(merged) == 9 and len(merged.store) == len(store) + 2
    assert merged.sources.tolist()[-3:] == ["web"] * 3
    # the merged pairs still point at the same steps
    left_before, _ = other.pairs.gather()
    left_after, _ = merged.filter(np.arange(6, 9)).pairs.gather()
    np.testing.assert_array_equal(left_before.obs, left_after.obs)


def test_merge_refuses_different_spaces(store):
    rng = np.random.default_rng(6)
    other_store = TrajectoryStore()
    from rlkit.data import Trajectory
    other_store.append(Trajectory(obs=np.zeros((11, 4), np.float32),
                                  acts=np.zeros((10, 2), np.float32), rews=np.zeros(10, np.float32)))
    with pytest.raises(InvalidDataError, match="different spaces"):
        PreferenceDataset(store).merge(PreferenceDataset(other_store))
    with pytest.raises(InvalidDataError, match="another TrajectoryStore"):
        PreferenceDataset(store).append(sample_pairs(other_store, 1, 5, rng), [1.0], source="x")


def test_dataset_save_load_round_trip(store, tmp_path):
    rng = np.random.default_rng(7)
    dataset = PreferenceDataset(store, scale=TERNARY)
    dataset.append(sample_pairs(store, 5, 8, rng), [0, 0.5, 1, np.nan, 1], source="teacher",
                   annotator="sim", meta={"oracle_p": rng.random(5)})
    dataset.save(tmp_path / "prefs")
    loaded = PreferenceDataset.load(tmp_path / "prefs")
    np.testing.assert_array_equal(loaded.labels, dataset.labels)
    np.testing.assert_array_equal(loaded.pairs.left, dataset.pairs.left)
    np.testing.assert_array_equal(loaded.meta["oracle_p"], dataset.meta["oracle_p"])
    assert loaded.scale == TERNARY and loaded.sources.tolist() == ["teacher"] * 5
    a, _ = loaded.pairs.gather()
    b, _ = dataset.pairs.gather()
    np.testing.assert_array_equal(a.obs, b.obs)


def test_damaged_dataset_files_raise_errors_that_name_the_problem(store, tmp_path):
    rng = np.random.default_rng(8)
    dataset = PreferenceDataset(store)
    dataset.append(sample_pairs(store, 5, 8, rng), np.ones(5), source="t")
    npz, meta = dataset.save(tmp_path / "prefs")

    meta.write_text("{not json")
    with pytest.raises(FileFormatError, match="not valid JSON"):
        PreferenceDataset.load(tmp_path / "prefs")

    dataset.save(tmp_path / "prefs")
    header = json.loads(meta.read_text())
    npz.write_bytes(npz.read_bytes()[:-50])
    with pytest.raises(FileFormatError, match="checksum differs"):
        PreferenceDataset.load(tmp_path / "prefs")

    dataset.save(tmp_path / "prefs")
    header = json.loads(meta.read_text())
    header["n_pairs"] = 6
    meta.write_text(json.dumps(header))
    with pytest.raises(FileFormatError, match="has 5 rows, not 6"):
        PreferenceDataset.load(tmp_path / "prefs")
    with pytest.raises(FileFormatError, match="no such file"):
        PreferenceDataset.load(tmp_path / "missing")


def test_simulated_teacher_labels_by_true_return(store):
    rng = np.random.default_rng(9)
    pairs = sample_pairs(store, 4000, 10, rng)
    left, right = pairs.gather()
    gap = left.returns() - right.returns()
    rational = SimulatedTeacher(TeacherConfig(scale="binary", beta=np.inf), rng)
    decided = gap != 0  # identical windows are a true tie: p = 0.5, a coin flip
    np.testing.assert_array_equal(rational.label(pairs)[decided], (gap[decided] > 0))

    teacher = SimulatedTeacher(TeacherConfig(scale="five", beta=0.5), rng)
    z, p = teacher.label_with_oracle(pairs)
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-0.5 * gap)), rtol=1e-6)
    # unbiased: within bins of p, the mean label matches p
    bins = np.digitize(p, [0.25, 0.5, 0.75])
    for b in range(4):
        assert z[bins == b].mean() == pytest.approx(p[bins == b].mean(), abs=0.03)


def test_bpref_teacher_parameters(store):
    rng = np.random.default_rng(10)
    pairs = sample_pairs(store, 3000, 10, rng)
    left, right = pairs.gather()
    gap = left.returns() - right.returns()
    flipped = SimulatedTeacher(TeacherConfig(scale="binary", beta=np.inf, mistake_rate=1.0), rng)
    decided = gap != 0
    np.testing.assert_array_equal(flipped.label(pairs)[decided], (gap[decided] < 0))
    equal = SimulatedTeacher(TeacherConfig(scale="binary", beta=np.inf, equal_threshold=1.0), rng)
    z = equal.label(pairs)
    assert (z[np.abs(gap) < 1.0] == 0.5).all() and (z[np.abs(gap) >= 1.0] != 0.5).all()
    threshold = float(np.median(np.maximum(left.returns(), right.returns())))
    skipping = SimulatedTeacher(TeacherConfig(scale="binary", skip_threshold=threshold), rng)
    z = skipping.label(pairs)
    skipped = np.maximum(left.returns(), right.returns()) < threshold
    assert np.isnan(z[skipped]).all() and np.isfinite(z[~skipped]).all()
    with pytest.raises(ValueError, match="mistake_rate"):
        TeacherConfig(mistake_rate=1.5)


def test_beta_for_spread_scales_the_logits():
    gaps = np.random.default_rng(11).normal(scale=40.0, size=1000)
    beta = beta_for_spread(gaps, target_std=2.0)
    assert np.std(beta * gaps) == pytest.approx(2.0)


def test_query_selectors_pick_informative_pairs(store):
    rng = np.random.default_rng(12)
    pairs = sample_pairs(store, 200, 10, rng)

    def true_reward(obs, acts, next_obs, dones):
        return obs[:, 0]

    def opposite_reward(obs, acts, next_obs, dones):
        return -obs[:, 0]

    uniform = make_selector("uniform").select(pairs, 20, rng)
    assert len(set(uniform)) == 20
    left, right = pairs.gather()
    gap = np.abs(left.returns() - right.returns())
    entropy = make_selector("entropy", [true_reward]).select(pairs, 20, rng)
    # the most uncertain pairs under the true reward are those with the smallest return gap
    assert set(entropy) == set(np.argsort(gap)[:20])
    disagreement = make_selector("disagreement", [true_reward, opposite_reward]).select(pairs, 20, rng)
    # two opposite members disagree most where the gap is large
    assert gap[disagreement].mean() > np.sort(gap)[-40:].mean() * 0.9
    with pytest.raises(ValueError, match="at least two members"):
        make_selector("disagreement", [true_reward])

"""RewardTrainer on trajectories with a known linear reward: it learns, stops, refuses garbage."""

import numpy as np
import pytest
import torch
from gymnasium import spaces

from rlkit.data import SegmentPairs, Trajectory, TrajectoryStore, sample_pairs
from rlkit.errors import InvalidDataError, InvalidLabelError
from rlkit.feedback import PreferenceDataset
from rlkit.reward import (
    RewardEnsemble,
    RewardTrainer,
    TrainerConfig,
    build_reward_net,
    evaluate_reward,
    ordinal_cross_entropy,
)
from rlkit.reward.metrics import predict_step_rewards
from tests.fake_data import truthful_labels
from tests.reward_builders import mixed_length_pairs, small_net

SEGMENT = 10


def predicted_delta(model: torch.nn.Module, pairs: SegmentPairs) -> np.ndarray:
    left, right = pairs.gather()
    return predict_step_rewards(model, left).sum(1) - predict_step_rewards(model, right).sum(1)


def test_learns_a_linear_reward_to_high_held_out_accuracy(store: TrajectoryStore) -> None:
    rng = np.random.default_rng(1)
    pairs = sample_pairs(store, 400, SEGMENT, rng)
    trainer = RewardTrainer(small_net(), TrainerConfig(lr=3e-3, max_epochs=15))
    report = trainer.fit(pairs, truthful_labels(pairs), rng=rng)
    assert report.n_train == 360 and report.n_val == 40 and report.pairs_per_s > 0
    test_pairs = sample_pairs(store, 300, SEGMENT, np.random.default_rng(2))
    metrics = trainer.evaluate(test_pairs, truthful_labels(test_pairs))
    assert metrics["accuracy"] > 0.9
    assert metrics["return_pearson"] > 0.9 and metrics["step_pearson"] > 0.8


def test_early_stopping_restores_the_best_validation_weights(store: TrajectoryStore) -> None:
    rng = np.random.default_rng(3)
    pairs = sample_pairs(store, 200, SEGMENT, rng)
    noise = (rng.random(200) < 0.5).astype(np.float32)  # nothing to learn: val loss must rise
    trainer = RewardTrainer(small_net(hidden=(64, 64)),
                            TrainerConfig(lr=1e-2, max_epochs=100, patience=2, val_fraction=0.25))
    report = trainer.fit(pairs, noise, rng=rng)
    assert report.stopped_early and report.epochs == report.best_epoch + 3
    assert report.best_epoch == int(np.argmin(report.val_loss))
    val = pairs.subset(report.val_rows)
    restored = ordinal_cross_entropy(torch.as_tensor(predicted_delta(trainer.model, val)),
                                     torch.as_tensor(noise[report.val_rows], dtype=torch.float64))
    assert restored.item() == pytest.approx(report.val_loss[report.best_epoch], rel=1e-4)
    assert restored.item() < report.val_loss[-1]


def test_skipped_labels_are_dropped(store: TrajectoryStore) -> None:
    pairs = sample_pairs(store, 90, SEGMENT, np.random.default_rng(4))
    labels = truthful_labels(pairs)
    labels[::3] = np.nan
    report = RewardTrainer(small_net(), TrainerConfig(max_epochs=2)).fit(pairs, labels)
    assert report.n_train + report.n_val == 60
    assert not np.isnan(labels[report.val_rows]).any()


def test_same_seed_same_training_resident_or_gathered_per_batch(store: TrajectoryStore) -> None:
    pairs = mixed_length_pairs(store, 150, seed=5)
    labels = truthful_labels(pairs)
    reports = [
        RewardTrainer(small_net(), TrainerConfig(max_epochs=3, discount=0.9,
                                                 memory_budget_bytes=budget)).fit(pairs, labels)
        for budget in (2**30, 2**30, 0)  # the last gathers every batch from the store
    ]
    assert reports[0].train_loss == reports[1].train_loss == reports[2].train_loss
    assert reports[0].val_loss == reports[2].val_loss


def test_segment_returns_are_masked_and_discounted(store: TrajectoryStore) -> None:
    pairs = mixed_length_pairs(store, 100, seed=11)
    labels = truthful_labels(pairs)
    net = small_net()
    frozen = TrainerConfig(lr=1e-12, weight_decay=0.0, max_epochs=1, discount=0.8, val_fraction=0.5)
    report = RewardTrainer(net, frozen).fit(pairs, labels)  # a step too small to matter
    left, right = pairs.subset(report.val_rows).gather()
    weights = 0.8 ** np.arange(left.mask.shape[1])  # step t weighs 0.8**t; pads weigh nothing
    delta = (predict_step_rewards(net, left) * weights).sum(1) - (
        predict_step_rewards(net, right) * weights).sum(1)
    expected = ordinal_cross_entropy(torch.as_tensor(delta),
                                     torch.as_tensor(labels[report.val_rows], dtype=torch.float64))
    assert report.val_loss[0] == pytest.approx(expected.item(), rel=1e-5)


def brightness_store(n_trajectories: int, rng: np.random.Generator) -> TrajectoryStore:
    """Random 6x6 frames and 3 discrete actions; the reward is the frame's brightness."""
    store = TrajectoryStore()
    for _ in range(n_trajectories):
        frames = rng.integers(0, 256, size=(21, 6, 6, 1), dtype=np.uint8)
        store.append(Trajectory(frames, rng.integers(0, 3, 20), frames[:-1].mean((1, 2, 3)) / 255))
    return store


def test_image_observations_and_discrete_actions_train() -> None:
    rng = np.random.default_rng(12)
    pairs = sample_pairs(brightness_store(16, rng), 400, 5, rng)
    held_out = sample_pairs(brightness_store(8, np.random.default_rng(13)), 200, 5,
                            np.random.default_rng(14))
    net = build_reward_net(spaces.Box(0, 255, (6, 6, 1), np.uint8), spaces.Discrete(3),
                           hidden=(16,), seed=0)
    trainer = RewardTrainer(net, TrainerConfig(lr=3e-3, max_epochs=10))
    before = trainer.evaluate(held_out, truthful_labels(held_out))["accuracy"]
    report = trainer.fit(pairs, truthful_labels(pairs))
    assert net.spec.kind == "cnn" and report.epochs == 10
    # the CNN learned brightness from the frames: on frames it never saw it ranks segments well
    # (~0.5 before training)
    after = trainer.evaluate(held_out, truthful_labels(held_out))["accuracy"]
    assert after > 0.8 and after > before + 0.2
    assert report.train_loss[-1] < 0.7 * report.train_loss[0]
    assert report.val_loss[-1] < 0.7 * report.val_loss[0]


def test_ensemble_members_see_their_own_shuffles(store: TrajectoryStore) -> None:
    pairs = sample_pairs(store, 300, SEGMENT, np.random.default_rng(6))
    ensemble = RewardEnsemble([small_net(seed=0) for _ in range(3)])  # identical starts
    config = TrainerConfig(lr=3e-3, max_epochs=8, bootstrap=True)
    RewardTrainer(ensemble, config).fit(pairs, truthful_labels(pairs))
    first, second = (list(member.parameters())[0] for member in ensemble.members[:2])
    assert not torch.equal(first, second)
    test_pairs = sample_pairs(store, 200, SEGMENT, np.random.default_rng(7))
    assert evaluate_reward(ensemble, test_pairs, truthful_labels(test_pairs))["accuracy"] > 0.85


def test_fit_and_evaluate_read_a_preference_dataset(store: TrajectoryStore, tmp_path) -> None:
    pairs = sample_pairs(store, 120, SEGMENT, np.random.default_rng(8))
    left, right = pairs.gather()
    oracle_p = 1 / (1 + np.exp(-(left.returns() - right.returns())))
    dataset = PreferenceDataset(store)
    # 10 pairs a person skipped (no oracle column: the dataset fills NaN), 110 simulated labels
    dataset.append(pairs.subset(np.arange(10)), np.full(10, np.nan), source="person")
    known = np.arange(10, 120)
    dataset.append(pairs.subset(known), oracle_p[known], source="simulated",
                   meta={"oracle_p": oracle_p[known]})
    dataset.save(tmp_path / "prefs")
    dataset = PreferenceDataset.load(tmp_path / "prefs")
    trainer = RewardTrainer(small_net(), TrainerConfig(lr=3e-3, max_epochs=15))
    untrained = trainer.evaluate(dataset)
    report = trainer.fit(dataset)
    assert report.n_train + report.n_val == 110  # the skipped pairs are left out
    metrics = trainer.evaluate(dataset)
    assert metrics["n_pairs"] == 120
    # the metrics are those of the labels and oracle column, row for row with the pairs
    delta = predicted_delta(trainer.model, pairs)[known]
    p = oracle_p[known]
    cross_entropy = np.mean(p * np.logaddexp(0, -delta) + (1 - p) * np.logaddexp(0, delta))
    assert metrics["oracle_cross_entropy"] == pytest.approx(cross_entropy, rel=1e-5)
    assert metrics["accuracy"] == pytest.approx(np.mean((delta > 0) == (p > 0.5)))
    # and it learned from them
    assert metrics["accuracy"] > 0.85
    assert metrics["oracle_cross_entropy"] < untrained["oracle_cross_entropy"] - 0.1


def test_bad_inputs_fail_before_training_with_named_fields(store: TrajectoryStore) -> None:
    pairs = sample_pairs(store, 20, SEGMENT, np.random.default_rng(9))
    trainer = RewardTrainer(small_net(), TrainerConfig(max_epochs=1))
    empty = SegmentPairs(store, np.zeros((0, 3), np.int64), np.zeros((0, 3), np.int64))
    with pytest.raises(InvalidDataError, match=r"empty \(0 pairs\)"):
        trainer.fit(empty, np.zeros(0))
    with pytest.raises(InvalidLabelError, match="all 20 labels are NaN"):
        trainer.fit(pairs, np.full(20, np.nan))
    out_of_range = np.ones(20)
    out_of_range[3] = 1.5
    with pytest.raises(InvalidLabelError, match=r"labels\[3\] = 1.5 is outside \[0, 1\]"):
        trainer.fit(pairs, out_of_range)
    with pytest.raises(InvalidLabelError, match=r"labels must have shape \(20,\)"):
        trainer.fit(pairs, np.ones(19))
    with pytest.raises(InvalidLabelError, match="bradley_terry takes labels z in"):
        RewardTrainer(small_net(), TrainerConfig(loss="bt")).fit(pairs, np.full(20, 0.5))


def test_nan_observations_are_refused(store: TrajectoryStore) -> None:
    damaged = TrajectoryStore.from_arrays({k: v.copy() for k, v in store.arrays().items()})
    damaged.arrays()["obs"][:61] = np.nan  # all of trajectory 0, after the store's own checks
    pairs = sample_pairs(damaged, 10, SEGMENT, np.random.default_rng(10), traj_ids=np.array([0]))
    with pytest.raises(InvalidDataError, match="obs holds NaN or inf"):
        RewardTrainer(small_net()).fit(pairs, np.ones(10))


def test_config_rejects_out_of_range_fields() -> None:
    with pytest.raises(ValueError, match="TrainerConfig.batch_size is out of range: 0"):
        TrainerConfig(batch_size=0)
    with pytest.raises(ValueError, match="theta > 1"):
        TrainerConfig(loss="rao_kupper", rao_kupper_theta=0.5)

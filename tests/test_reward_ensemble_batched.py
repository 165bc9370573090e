"""Ensembles trained and scored as one batched model; refits that reuse gathered pairs and spend a
step budget tied to the labels added."""

import copy
import math

import numpy as np
import pytest
import torch
from gymnasium import spaces

from rlkit.data import SegmentPairs, TrajectoryStore, sample_pairs, sample_segments
from rlkit.errors import ConfigError, InvalidDataError
from rlkit.feedback import PreferenceDataset
from rlkit.prefrl.query import make_selector, preference_probabilities
from rlkit.reward import RewardEnsemble, RewardNet, RewardTrainer, TrainerConfig
from rlkit.reward.metrics import evaluate_reward
from rlkit.reward.nets import build_reward_net
from rlkit.reward.numpy_rewards import TorchRewardFn
from rlkit.reward.pair_tensors import PairTensors
from tests.fake_data import truthful_labels
from tests.reward_builders import ensemble, mixed_length_pairs


def as_dataset(pairs: SegmentPairs, labels: np.ndarray, upto: int,
               dataset: PreferenceDataset | None = None, start: int = 0) -> PreferenceDataset:
    dataset = dataset if dataset is not None else PreferenceDataset(pairs.store)
    rows = np.arange(start, upto)
    dataset.append(pairs.subset(rows), labels[rows], source="simulated")
    return dataset


# -- one batched model --------------------------------------------------------------------------

def test_batched_member_rewards_equal_each_member_alone() -> None:
    model = ensemble()
    rng = np.random.default_rng(1)
    obs, acts = torch.randn(5, 7, 4), torch.randn(5, 7, 2)
    alone = torch.stack([member(obs, acts, None, None) for member in model.members])
    assert model.batched
    torch.testing.assert_close(model.member_rewards(obs, acts, None, None), alone)
    # per member: member k reads its own batch, row k of a leading K axis
    own = torch.as_tensor(rng.normal(size=(3, 6, 4)), dtype=torch.float32), torch.randn(3, 6, 2)
    expected = torch.stack([member(own[0][k], own[1][k], None, None)
                            for k, member in enumerate(model.members)])
    torch.testing.assert_close(model.member_rewards(*own, None, None, per_member=True), expected)
    with pytest.raises(InvalidDataError, match="lead with the 3 members"):
        model.member_rewards(obs, acts, None, None, per_member=True)


def test_members_of_other_widths_or_with_image_encoders_run_one_after_another() -> None:
    mixed = ensemble(((16, 16), (16, 16), (8,)))
    assert not mixed.batched
    obs, acts = torch.randn(4, 4), torch.randn(4, 2)
    torch.testing.assert_close(mixed.member_rewards(obs, acts, None, None),
                               torch.stack([m(obs, acts, None, None) for m in mixed.members]))
    images = spaces.Box(0, 255, (6, 6, 1), np.uint8)
    cnn = RewardEnsemble([build_reward_net(images, spaces.Discrete(3), hidden=(8,), seed=s)
                          for s in range(2)])
    assert not cnn.batched


@pytest.mark.parametrize("bootstrap", [False, True])
def test_batched_training_equals_members_trained_one_after_another(
        store: TrajectoryStore, bootstrap: bool) -> None:
    """Same init, same batches: the batched model's losses and weights are the loop's."""
    pairs = mixed_length_pairs(store, 120, seed=2)
    labels = truthful_labels(pairs)
    models, reports = [], []
    for batched in (True, False):
        model = ensemble()
        config = TrainerConfig(max_epochs=4, discount=0.9, bootstrap=bootstrap, batch_size=16,
                               batch_members=batched, patience=None)
        trainer = RewardTrainer(model, config)
        assert trainer.batched == batched
        # plain SGD: Adam's normalised steps would turn rounding in a near-zero gradient into a
        # whole step (both update elementwise, so either shows whether the gradients agree)
        trainer.optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        reports.append(trainer.fit(pairs, labels, rng=np.random.default_rng(3)))
        models.append(model)
    # float rounding differs (batched matmuls): close, not equal
    np.testing.assert_allclose(reports[0].train_loss, reports[1].train_loss, rtol=1e-5)
    np.testing.assert_allclose(reports[0].val_loss, reports[1].val_loss, rtol=1e-5)
    assert reports[0].val_accuracy == reports[1].val_accuracy
    for batched, looped in zip(models[0].parameters(), models[1].parameters(), strict=True):
        torch.testing.assert_close(batched, looped, rtol=1e-4, atol=1e-5)
    moved = [(a - b).abs().max() for a, b in zip(models[1].parameters(), ensemble().parameters(),
                                                 strict=True)]
    assert max(moved) > 0.05  # training moved the weights far past that tolerance
    assert not torch.equal(*(next(m.parameters()) for m in models[0].members[:2]))


def test_batched_steps_equal_members_trained_apart(store: TrajectoryStore) -> None:
    """Each member trained by a trainer of its own (its own optimizer) on the same batches ends
    where the batched ensemble's member ends (SGD, as in the test above)."""
    pairs = sample_pairs(store, 64, 10, np.random.default_rng(4))
    labels = torch.as_tensor(truthful_labels(pairs))
    rows = np.arange(64)
    orders = [np.random.default_rng(k).permutation(64) for k in range(3)]
    model = ensemble()
    apart = [copy.deepcopy(member) for member in model.members]
    config = TrainerConfig(batch_size=16)
    together = RewardTrainer(model, config)
    together.optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loss = together._train_epoch(PairTensors(pairs, rows, labels, ("obs", "act"), model, 1.0,
                                              2**30), orders)
    losses = []
    for member, order in zip(apart, orders, strict=True):
        alone = RewardTrainer(member, config)
        alone.optimizer = torch.optim.SGD(member.parameters(), lr=0.05)
        data = PairTensors(pairs, rows, labels, ("obs", "act"), member, 1.0, 2**30)
        losses.append(alone._train_epoch(data, [order]))
    assert loss == pytest.approx(np.mean(losses), rel=1e-5)
    for trained, alone in zip(model.members, apart, strict=True):
        for a, b in zip(trained.parameters(), alone.parameters(), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


# -- cached pair tensors ------------------------------------------------------------------------

def all_tensors(data: PairTensors) -> dict[str, torch.Tensor]:
    return data.batch(np.arange(len(data.rows)))


def assert_same_tensors(data: PairTensors, pairs: SegmentPairs, rows: np.ndarray) -> None:
    fresh = PairTensors(pairs, rows, data.z, data.inputs, data.model, data.discount, 2**30)
    got, expected = all_tensors(data), all_tensors(fresh)
    assert got.keys() == expected.keys()
    for name in expected:
        torch.testing.assert_close(got[name], expected[name], rtol=0, atol=0)


def test_a_refit_on_a_grown_dataset_gathers_only_the_new_pairs(store, monkeypatch) -> None:
    pairs = sample_pairs(store, 90, 10, np.random.default_rng(5))
    labels = truthful_labels(pairs)
    labels[[3, 50]] = np.nan  # skipped: never gathered while skipped
    gathered: list[np.ndarray] = []
    real = PairTensors._gather_numpy
    monkeypatch.setattr(PairTensors, "_gather_numpy",
                        lambda self, rows: gathered.append(rows) or real(self, rows))
    trainer = RewardTrainer(ensemble(), TrainerConfig(max_epochs=1))
    dataset = as_dataset(pairs, labels, 60)
    trainer.fit(dataset)
    first = np.concatenate(gathered[1:])  # [0] is the one-pair probe of the memory budget
    assert sorted(first) == [row for row in range(60) if row != 3 and row != 50]
    gathered.clear()
    as_dataset(pairs, labels, 90, dataset, start=60)
    report = trainer.fit(dataset)
    assert sorted(np.concatenate(gathered[1:])) == list(range(60, 90))
    assert report.new_labels == 30
    kept = np.flatnonzero(~np.isnan(dataset.labels))
    assert_same_tensors(trainer._data, dataset.pairs, kept)


def test_pairs_that_do_not_extend_the_last_fit_are_gathered_again(store, monkeypatch) -> None:
    pairs = sample_pairs(store, 80, 10, np.random.default_rng(6))
    labels = truthful_labels(pairs)
    trainer = RewardTrainer(ensemble(), TrainerConfig(max_epochs=1))
    trainer.fit(pairs.subset(np.arange(40)), labels[:40])
    gathered: list[np.ndarray] = []
    real = PairTensors._gather_numpy
    monkeypatch.setattr(PairTensors, "_gather_numpy",
                        lambda self, rows: gathered.append(rows) or real(self, rows))
    # the same store, but row 0 now compares other segments: nothing cached can be trusted
    moved = pairs.subset(np.arange(40, 80))
    report = trainer.fit(moved, labels[40:])
    assert sorted(np.concatenate(gathered[1:])) == list(range(40)) and report.new_labels == 40
    assert_same_tensors(trainer._data, moved, np.arange(40))
    # a store of its own (same arrays): gathered again too
    copied = TrajectoryStore.from_arrays(store.arrays())
    other = SegmentPairs(copied, moved.left, moved.right)
    gathered.clear()
    assert trainer.fit(other, labels[40:]).new_labels == 40
    assert sorted(np.concatenate(gathered[1:])) == list(range(40))
    # longer segments change the padding: the cached rows stay fitted but are gathered anew
    longer = SegmentPairs(copied, np.concatenate([other.left, sample_segments(copied, 5, 15,
                                                  np.random.default_rng(7))]),
                          np.concatenate([other.right, sample_segments(copied, 5, 15,
                                                   np.random.default_rng(8))]))
    gathered.clear()
    assert trainer.fit(longer, np.concatenate([labels[40:], np.ones(5)])).new_labels == 5
    assert sorted(np.concatenate(gathered[1:])) == list(range(45))
    assert_same_tensors(trainer._data, longer, np.arange(45))


# -- the refit budget ---------------------------------------------------------------------------

def test_steps_refits_spend_a_budget_tied_to_the_labels_added(store: TrajectoryStore) -> None:
    pairs = sample_pairs(store, 300, 10, np.random.default_rng(9))
    labels = truthful_labels(pairs)
    config = TrainerConfig(lr=3e-3, max_epochs=6, refit="steps", refit_epochs=4, batch_size=32,
                           patience=None)
    trainer = RewardTrainer(ensemble(), config)
    dataset = as_dataset(pairs, labels, 100)
    first = trainer.fit(dataset)  # a first fit: max_epochs passes over its 90 training pairs
    assert first.epochs == 6 and first.steps == 6 * math.ceil(90 / 32) and first.new_labels == 100
    as_dataset(pairs, labels, 150, dataset, start=100)
    refit = trainer.fit(dataset)  # 50 new labels, 4 passes' worth: ceil(200 / 32) = 7 steps
    assert refit.new_labels == 50 and refit.steps == 7
    assert refit.epochs == 2 and len(refit.val_loss) == 2  # a pass is 5 steps; validated after each
    as_dataset(pairs, labels, 300, dataset, start=150)
    refit = trainer.fit(dataset)
    assert refit.steps == math.ceil(150 * 4 / 32) == 19
    test_pairs = sample_pairs(store, 200, 10, np.random.default_rng(10))
    assert evaluate_reward(trainer.model, test_pairs, truthful_labels(test_pairs))["accuracy"] > 0.85
    # the same data again: one step; other data: a first fit's passes
    assert trainer.fit(dataset).steps == 1
    other = pairs.subset(np.arange(299, -1, -1))
    assert trainer.fit(other, labels[::-1]).steps == 6 * math.ceil(270 / 32)


def test_a_rebuilt_trainer_told_what_was_fitted_refits_as_the_one_that_fitted(store) -> None:
    """A resumed run rebuilds its trainer around saved weights and optimizer state; told which
    labels those weights were fitted on, its refit is the unbroken run's, step for step."""
    pairs = sample_pairs(store, 200, 10, np.random.default_rng(13))
    labels = truthful_labels(pairs)
    config = TrainerConfig(lr=3e-3, max_epochs=4, refit="steps", batch_size=32)
    unbroken = RewardTrainer(ensemble(), config)
    dataset = as_dataset(pairs, labels, 120)
    unbroken.fit(dataset, rng=np.random.default_rng(1))
    saved = copy.deepcopy((unbroken.model.state_dict(), unbroken.optimizer.state_dict()))
    as_dataset(pairs, labels, 200, dataset, start=120)
    expected = unbroken.fit(dataset, rng=np.random.default_rng(2))
    reports = []
    for told in (True, False):
        model = ensemble()
        model.load_state_dict(saved[0])
        rebuilt = RewardTrainer(model, config)
        rebuilt.optimizer.load_state_dict(copy.deepcopy(saved[1]))
        if told:
            rebuilt.mark_fitted(pairs.subset(np.arange(120)), labels[:120])
        reports.append(rebuilt.fit(dataset, rng=np.random.default_rng(2)))
    assert expected.steps == reports[0].steps == math.ceil(80 * 4 / 32)
    assert reports[0].train_loss == expected.train_loss
    assert reports[0].val_loss == expected.val_loss
    assert reports[1].steps == 4 * math.ceil(180 / 32)  # not told: a first fit's passes
    rebuilt.mark_fitted(PreferenceDataset(store))  # nothing labelled yet: nothing fitted
    assert rebuilt.fit(dataset, rng=np.random.default_rng(2)).steps == reports[1].steps


def test_epochs_refits_pass_over_every_label_again(store: TrajectoryStore) -> None:
    pairs = sample_pairs(store, 150, 10, np.random.default_rng(11))
    labels = truthful_labels(pairs)
    trainer = RewardTrainer(ensemble(), TrainerConfig(max_epochs=3, patience=None, batch_size=32))
    dataset = as_dataset(pairs, labels, 100)
    trainer.fit(dataset)
    as_dataset(pairs, labels, 150, dataset, start=100)
    report = trainer.fit(dataset)
    assert report.new_labels == 50 and report.steps == 3 * math.ceil(135 / 32)


def test_trainer_device_is_checked_and_resolved() -> None:
    with pytest.raises(ConfigError, match="device 'tpu'"):
        TrainerConfig(device="tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="no CUDA device"):
            RewardTrainer(ensemble(), TrainerConfig(device="cuda"))
    trainer = RewardTrainer(ensemble(), TrainerConfig(device="auto"))
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert next(trainer.model.parameters()).device.type == expected


# -- query scoring ------------------------------------------------------------------------------

class NumpyReward:
    """A member's numpy reward, not recognisable as a torch net (scored one call at a time)."""

    def __init__(self, net: RewardNet) -> None:
        self.reward = TorchRewardFn(net)

    def __call__(self, obs, acts, next_obs, dones):
        return self.reward(obs, acts, next_obs, dones)


def test_query_candidates_are_scored_in_one_batched_pass(store: TrajectoryStore) -> None:
    model = ensemble()
    candidates = mixed_length_pairs(store, 50, seed=12)
    per_member = preference_probabilities([NumpyReward(m) for m in model.members], candidates)
    for members in (model, [TorchRewardFn(m) for m in model.members]):
        for chunk in (7, 256):
            np.testing.assert_allclose(preference_probabilities(members, candidates, chunk),
                                       per_member, rtol=1e-5, atol=1e-6)
    single = preference_probabilities(model.members[0], candidates)
    np.testing.assert_allclose(single, per_member[:1], rtol=1e-5, atol=1e-6)
    # the loop hands the selector its members' numpy rewards: they are scored as one model
    selector = make_selector("disagreement", [TorchRewardFn(m) for m in model.members])
    assert isinstance(selector.members, RewardEnsemble)
    picked = selector.select(candidates, 10, np.random.default_rng(0))
    np.testing.assert_array_equal(picked, np.sort(np.argsort(-per_member.std(0))[:10]))
    with pytest.raises(ConfigError, match="at least two members"):
        make_selector("disagreement", model.members[0])

"""Batches whose pairs share segments run the reward nets once per distinct segment: the same
loss, gradients and trained weights as running them over both segments of every pair."""

import numpy as np
import pytest
import torch

from rlkit.data import SegmentPairs, TrajectoryStore, sample_pairs, sample_segments
from rlkit.reward import RewardEnsemble, RewardNet, RewardTrainer, TrainerConfig
from rlkit.reward.pair_tensors import PairTensors
from tests.fake_data import truthful_labels
from tests.reward_builders import conv_net, ensemble, region_store, small_net

ON, OFF = 1.0, 0.0  # dedup_below: every batch deduplicated, none


def shared_pairs(store: TrajectoryStore, n: int, seed: int, lengths=(10,)) -> SegmentPairs:
    """``n`` pairs drawn from a pool of 6 segments per length (as APEC pairs few rollouts)."""
    rng = np.random.default_rng(seed)
    left, right = [], []
    for length in lengths:
        pool = sample_segments(store, 6, length, rng)
        i, j = rng.integers(0, len(pool), size=(2, n // len(lengths)))
        left.append(pool[i])
        right.append(pool[j])
    return SegmentPairs(store, np.concatenate(left), np.concatenate(right))


def make_model(kind: str) -> RewardNet | RewardEnsemble:
    return small_net(seed=3) if kind == "net" else ensemble()


def count_segment_batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one for every deduplicated batch gathered."""
    calls: list[int] = []
    real = PairTensors.segment_batch
    monkeypatch.setattr(PairTensors, "segment_batch",
                        lambda self, slots: calls.append(len(slots)) or real(self, slots))
    return calls


def one_step(kind: str, config: TrainerConfig, pairs: SegmentPairs, dedup_below: float,
             budget: int = 2**30) -> tuple[float, list[torch.Tensor]]:
    """The loss and gradients of one training batch (three members: each its own order)."""
    model = make_model(kind)
    trainer = RewardTrainer(model, config)
    trainer.dedup_below = dedup_below
    trainer.optimizer.step = lambda *args, **kwargs: None  # keep the gradients, skip the update
    rows = np.arange(len(pairs))
    z = torch.as_tensor(truthful_labels(pairs))
    data = PairTensors(pairs, rows, z, model.spec.inputs, model, config.discount, budget)
    orders = [np.random.default_rng(k).permutation(rows) for k in range(len(trainer.members))]
    loss = trainer._train_epoch(data, orders)
    return loss, [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("loss", ["bt", "ordinal", "rao_kupper", "hinge"])
@pytest.mark.parametrize("kind,batch_members", [("net", True), ("ensemble", True),
                                                ("ensemble", False)])
def test_loss_and_gradients_equal_with_and_without_dedup(
        store, monkeypatch, loss: str, kind: str, batch_members: bool) -> None:
    pairs = shared_pairs(store, 40, seed=1)
    config = TrainerConfig(loss=loss, batch_size=40, batch_members=batch_members)
    calls = count_segment_batches(monkeypatch)
    off_loss, off_grads = one_step(kind, config, pairs, OFF)
    assert calls == []
    on_loss, on_grads = one_step(kind, config, pairs, ON)
    # one gather per step (batched) or per member, of at most 6 segments per member
    assert len(calls) == (1 if batch_members or kind == "net" else 3)
    assert max(calls) <= 6 * (3 if batch_members and kind == "ensemble" else 1)
    assert on_loss == pytest.approx(off_loss, rel=1e-6)
    for on, off in zip(on_grads, off_grads, strict=True):
        torch.testing.assert_close(on, off)
    assert any(grad.abs().max() > 0 for grad in on_grads)


@pytest.mark.parametrize("budget", [2**30, 0])  # resident, gathered per batch
def test_padded_discounted_segments_equal_with_and_without_dedup(store, monkeypatch,
                                                                 budget: int) -> None:
    pairs = shared_pairs(store, 40, seed=2, lengths=(5, 10))
    config = TrainerConfig(loss="bt", batch_size=40, discount=0.9)
    calls = count_segment_batches(monkeypatch)
    off_loss, off_grads = one_step("ensemble", config, pairs, OFF, budget)
    on_loss, on_grads = one_step("ensemble", config, pairs, ON, budget)
    assert len(calls) == 1
    assert on_loss == pytest.approx(off_loss, rel=1e-6)
    for on, off in zip(on_grads, off_grads, strict=True):
        torch.testing.assert_close(on, off)


def fit(model: RewardNet | RewardEnsemble, config: TrainerConfig, pairs: SegmentPairs,
        labels: np.ndarray, dedup_below: float | None = None) -> RewardTrainer:
    trainer = RewardTrainer(model, config)
    # SGD: Adam would blow float noise in gradients that cancel (the last bias) up to full steps
    trainer.optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    if dedup_below is not None:
        trainer.dedup_below = dedup_below
    trainer.fit(pairs, labels, rng=np.random.default_rng(5))
    return trainer


@pytest.mark.parametrize("kind", ["net", "ensemble"])
def test_trained_weights_and_validation_equal_with_and_without_dedup(store, monkeypatch,
                                                                     kind: str) -> None:
    pairs = shared_pairs(store, 60, seed=3, lengths=(5, 10))
    config = TrainerConfig(batch_size=20, max_epochs=4, patience=None, val_fraction=0.25,
                           discount=0.95)
    labels = truthful_labels(pairs)
    calls = count_segment_batches(monkeypatch)
    on = fit(make_model(kind), config, pairs, labels)  # the default dedup_below dedups these
    steps = len(calls)
    assert steps >= 4 * 3  # every training batch (3 an epoch) and the validation chunks
    off = fit(make_model(kind), config, pairs, labels, OFF)
    assert len(calls) == steps
    for a, b in zip(on.model.parameters(), off.model.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_pairs_without_shared_segments_run_as_before(store, monkeypatch) -> None:
    pairs = sample_pairs(store, 64, 10, np.random.default_rng(6))
    config = TrainerConfig(max_epochs=2, batch_size=16)
    labels = truthful_labels(pairs)
    calls = count_segment_batches(monkeypatch)
    usual = fit(ensemble(), config, pairs, labels)
    assert calls == []  # distinct segments in every batch: not deduplicated
    off = fit(ensemble(), config, pairs, labels, OFF)
    assert all(torch.equal(a, b) for a, b in
               zip(usual.model.parameters(), off.model.parameters(), strict=True))


def test_augmented_pixel_batches_are_never_deduplicated(monkeypatch) -> None:
    rng = np.random.default_rng(7)
    store = region_store(3, rng)
    pool = sample_segments(store, 4, 4, rng)
    i, j = rng.integers(0, 4, size=(2, 30))
    pairs = SegmentPairs(store, pool[i], pool[j])
    labels = truthful_labels(pairs)
    config = TrainerConfig(max_epochs=2, batch_size=10, val_fraction=0.0, patience=None,
                           shift_pad=2)
    calls = count_segment_batches(monkeypatch)
    shifted = [fit(conv_net(), config.replace(augment="shift"), pairs, labels, below)
               for below in (ON, OFF)]
    assert calls == []  # each pair's segment keeps its own random shift
    assert all(torch.equal(a, b) for a, b in
               zip(shifted[0].model.parameters(), shifted[1].model.parameters(), strict=True))
    # unshifted, a pixel net is deduplicated like any other
    plain = [fit(conv_net(), config.replace(augment="none"), pairs, labels, below)
             for below in (ON, OFF)]
    assert len(calls) == 6
    for a, b in zip(plain[0].model.parameters(), plain[1].model.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_the_resident_table_holds_each_segment_once_across_refits(store) -> None:
    pairs = shared_pairs(store, 60, seed=8, lengths=(5, 10))
    pairs = SegmentPairs(store, np.concatenate([pairs.left, sample_segments(
        store, 10, 10, np.random.default_rng(9))]), np.concatenate([pairs.right, pairs.left[50:]]))
    labels = truthful_labels(pairs)
    trainer = RewardTrainer(ensemble(), TrainerConfig(max_epochs=1, discount=0.9))
    trainer.fit(pairs.subset(np.arange(40)), labels[:40])
    first = trainer._data
    trainer.fit(pairs, labels)
    data = trainer._data
    assert first is not None and data is not None and data.tensors["obs"] is not first.tensors["obs"]
    distinct = np.unique(np.concatenate([pairs.left, pairs.right]), axis=0)
    assert len(data.segments) == len(distinct) == len(data.tensors["obs"]) < 2 * len(pairs)
    np.testing.assert_array_equal(data.segments[:len(first.segments)], first.segments)
    rows = np.arange(len(pairs))
    per_pair = PairTensors(pairs, rows, data.z, data.inputs, data.model, data.discount, 0)
    expected, got = per_pair.batch(rows), data.batch(rows)
    assert got.keys() == expected.keys()
    for name in expected:
        torch.testing.assert_close(got[name], expected[name], rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["net", "ensemble"])
@pytest.mark.parametrize("dedup", [ON, OFF])
def test_bfloat16_training_learns_as_float32_does_and_keeps_float32_weights(store, kind, dedup):
    pairs = shared_pairs(store, 240, seed=4)
    labels = truthful_labels(pairs)
    reports, models = {}, {}
    for precision in ("float32", "bfloat16"):
        models[precision] = make_model(kind)
        trainer = RewardTrainer(models[precision], TrainerConfig(lr=3e-3, max_epochs=8, patience=None,
                                                                 precision=precision))
        trainer.dedup_below = dedup
        reports[precision] = trainer.fit(pairs, labels, rng=np.random.default_rng(0))
    fp32, bf16 = reports["float32"].train_loss, reports["bfloat16"].train_loss
    assert fp32 != bf16  # the forward passes did run in bfloat16
    assert bf16[-1] < 0.6 * bf16[0]  # each step cast the current weights: it learnt
    assert bf16[-1] == pytest.approx(fp32[-1], rel=0.1, abs=0.02)
    assert reports["bfloat16"].val_accuracy[-1] >= reports["float32"].val_accuracy[-1] - 0.05
    assert all(p.dtype == torch.float32 for p in models["bfloat16"].parameters())


def test_bfloat16_step_rewards_are_summed_in_float32():
    from rlkit.reward.trainer import _returns_delta

    # 1000 steps of 0.1 against the same with one step 0.25 higher: returns near 100, where
    # bfloat16 is 0.5 apart, so a sum kept in bfloat16 would lose the difference
    rewards = torch.full((1, 2, 1000), 0.1, dtype=torch.bfloat16)
    rewards[0, 1, 0] += 0.25
    assert _returns_delta(rewards, {}).dtype == torch.float32
    assert _returns_delta(rewards, {}).item() == pytest.approx(-0.25, abs=1e-3)


def test_auto_precision_is_bfloat16_only_where_the_cpu_multiplies_it_natively(store, tmp_path,
                                                                              monkeypatch):
    """Emulated bfloat16 (an AVX2 CPU) was ~15x slower than float32 here; AMX made it 2.7x faster."""
    import rlkit.reward.trainer as trainer_module
    from rlkit.devices import native_bfloat16

    for flags, native in (("fpu avx2 fma", False), ("avx2 avx512f amx_bf16 amx_tile", True),
                          ("avx512f avx512_bf16", True)):
        (tmp_path / "cpuinfo").write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
        assert native_bfloat16(torch.device("cpu"), str(tmp_path / "cpuinfo")) is native
    assert not native_bfloat16(torch.device("cpu"), str(tmp_path / "missing"))

    pairs = shared_pairs(store, 120, seed=5)
    labels = truthful_labels(pairs)

    def losses(precision: str) -> list[float]:
        trainer = RewardTrainer(make_model("net"), TrainerConfig(lr=3e-3, max_epochs=3, patience=None,
                                                                 precision=precision))
        return trainer.fit(pairs, labels, rng=np.random.default_rng(0)).train_loss

    fp32, bf16 = losses("float32"), losses("bfloat16")
    for native, expected in ((False, fp32), (True, bf16)):
        monkeypatch.setattr(trainer_module, "native_bfloat16", lambda device, native=native: native)
        assert losses("auto") == expected


def test_the_optimizer_is_adamw_unless_adam_with_an_l2_term_is_asked():
    adamw = RewardTrainer(make_model("net"), TrainerConfig(weight_decay=1e-3))
    adam = RewardTrainer(make_model("net"), TrainerConfig(weight_decay=1e-3, optimizer="adam"))
    assert type(adamw.optimizer) is torch.optim.AdamW and type(adam.optimizer) is torch.optim.Adam
    assert adam.optimizer.param_groups[0]["weight_decay"] == 1e-3
    assert not adam.optimizer.param_groups[0].get("decoupled_weight_decay", False)

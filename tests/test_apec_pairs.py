"""APEC rollouts and pair selection on synthetic stores whose checkpoint index is known."""

import re

import numpy as np
import ot
import pytest

import rlkit.apec.transport as transport
from rlkit.apec import (
    PairConfig,
    RolloutConfig,
    demo_ot_distances,
    ot_only_pairs,
    policy_rollouts,
    select_pairs,
)
from rlkit.data import Trajectory, TrajectoryStore
from rlkit.errors import InvalidDataError
from rlkit.feedback import FIVE


def _store(n_ckpt: int = 12, per: int = 3, length: int = 20, seed: int = 0):
    """Checkpoint k's states drift toward the demos' direction as k grows; reward = k."""
    rng = np.random.default_rng(seed)
    store, index = TrajectoryStore(), []
    for k in range(n_ckpt):
        for _ in range(per):
            angle = (1 - k / n_ckpt) * np.pi / 2 + rng.normal(0, 0.05, (length + 1, 1))
            obs = np.concatenate([np.cos(angle), np.sin(angle)], 1).astype(np.float32)
            store.append(Trajectory(obs, np.zeros((length, 1), np.float32),
                                    np.full(length, k, np.float32)))
            index.append(k)
    demo_obs = np.tile(np.array([[1.0, 0.0]], np.float32), (length + 1, 1))
    demos = [Trajectory(demo_obs, np.zeros((length, 1), np.float32), np.zeros(length, np.float32))]
    return store, np.array(index), demos


def _better_is_later(data) -> None:
    left, right = data.meta["checkpoint_left"], data.meta["checkpoint_right"]
    assert np.all(np.where(data.labels > 0.5, left > right, right > left))


def test_pairs_respect_gap_and_prefer_later_checkpoint():
    store, index, _ = _store()
    config = PairConfig(n_pairs=300, gap=4, ot_threshold=None)
    data = select_pairs(store, index, np.random.default_rng(1), config)
    assert len(data) == 300 and set(np.unique(data.labels)) == {0.0, 1.0}
    left, right = data.meta["checkpoint_left"], data.meta["checkpoint_right"]
    assert np.all(np.abs(left - right) > 4)
    _better_is_later(data)
    # The meta columns are the pair's own trajectories: checkpoint and (segment) true return.
    assert np.array_equal(left, index[data.pairs.left[:, 0]])
    assert np.allclose(data.meta["return_left"], left * store.lengths[0])
    assert np.isnan(data.meta["ot_left"]).all() and data.sources.tolist() == ["apec"] * 300
    # Whole trajectories by default.
    assert (data.pairs.left[:, 1] == 0).all() and (data.pairs.left[:, 2] == 20).all()


def test_windows_are_aligned_and_of_the_given_length():
    store, index, _ = _store()
    config = PairConfig(n_pairs=200, gap=2, segment_length=5, ot_threshold=None)
    data = select_pairs(store, index, np.random.default_rng(2), config)
    assert (data.pairs.left[:, 2] == 5).all()
    assert np.array_equal(data.pairs.left[:, 1], data.pairs.right[:, 1])
    assert len(np.unique(data.pairs.left[:, 1])) > 1


def test_ot_filter_keeps_only_pairs_closer_to_demos(monkeypatch):
    store, index, demos = _store()
    calls = []
    real = ot.sinkhorn
    monkeypatch.setattr(transport.ot, "sinkhorn", lambda *a, **k: calls.append(1) or real(*a, **k))
    config = PairConfig(n_pairs=200, gap=1, ot_threshold=1.0)
    data = select_pairs(store, index, np.random.default_rng(3), config, demos=demos)
    assert len(calls) == len(store)  # once per trajectory, not per pair
    later_left = data.labels == 1.0
    ot_later = np.where(later_left, data.meta["ot_left"], data.meta["ot_right"])
    ot_earlier = np.where(later_left, data.meta["ot_right"], data.meta["ot_left"])
    assert np.all(ot_later <= ot_earlier - 1.0)
    _better_is_later(data)
    # The cached distance of one trajectory is the reference's: mean(diag(P C^T)) * 1000, P from
    # ot.sinkhorn(eps 0.01, 100 iterations) on the cosine cost of states + 1e-4.
    t = store[int(data.pairs.left[0, 0])]
    states, demo = t.obs[:-1].astype(np.float64) + 1e-4, demos[0].obs[:-1].astype(np.float64) + 1e-4
    cost = ot.dist(states, demo, metric="cosine")
    plan = real(np.full(len(states), 1 / len(states)), np.full(len(demo), 1 / len(demo)), cost, 0.01,
                numItermax=100).astype(np.float32)
    direct = np.mean(np.diag(plan @ cost.T)) * 1000
    assert data.meta["ot_left"][0] == pytest.approx(float(direct), rel=1e-5)


def test_gap_labels_lie_on_the_scale_and_grow_with_the_gap():
    store, index, _ = _store()
    config = PairConfig(n_pairs=400, gap=1, labels="gap", scale="five", ot_threshold=None)
    data = select_pairs(store, index, np.random.default_rng(4), config)
    assert data.scale == FIVE
    FIVE.validate(data.labels)
    strength = np.maximum(data.labels, 1 - data.labels)
    gap = np.abs(data.meta["checkpoint_left"] - data.meta["checkpoint_right"])
    order = np.argsort(gap, kind="stable")
    assert np.all(np.diff(strength[order]) >= 0) and len(np.unique(strength)) == 2
    _better_is_later(data)


def exactly(message: str) -> str:
    """A ``pytest.raises`` pattern that matches ``message`` and nothing else."""
    return f"^{re.escape(message)}$"


def test_bad_inputs_name_the_field():
    store, index, demos = _store(n_ckpt=5)  # 15 trajectories of 20 steps, checkpoints 0..4
    rng = np.random.default_rng(0)
    with pytest.raises(InvalidDataError, match=exactly(
            "gap 4 is too large for the pool: checkpoint indices span 0..4, so no pair has "
            "index_j > index_i + gap")):
        select_pairs(store, index, rng, PairConfig(gap=4, ot_threshold=None))
    with pytest.raises(InvalidDataError, match=exactly("demos is empty: the OT filter needs demonstrations")):
        select_pairs(store, index, rng, PairConfig(gap=1), demos=[])  # the OT filter is on by default
    with pytest.raises(InvalidDataError,
                       match=exactly("demos: the OT filter (ot_threshold) needs demonstrations")):
        select_pairs(store, index, rng, PairConfig(gap=1))
    with pytest.raises(InvalidDataError, match=exactly("demos is empty: the OT filter needs demonstrations")):
        demo_ot_distances(store, [])
    with pytest.raises(InvalidDataError, match=exactly(
            "n_pairs: found only 0 of 10 pairs in 30 draws; 0 distinct trajectory pairs pass the gap "
            "and OT filter (lower n_pairs, gap or ot_threshold)")):
        select_pairs(store, index, rng, PairConfig(n_pairs=10, gap=1, ot_threshold=1000.0,
                                                   max_draws=3), demos=demos)
    with pytest.raises(InvalidDataError,
                       match=exactly("segment_length 50 is longer than every trajectory (longest: 20)")):
        select_pairs(store, index, rng, PairConfig(gap=1, segment_length=50, ot_threshold=None))
    with pytest.raises(InvalidDataError,
                       match=exactly("checkpoint has shape (14,), expected (15,): one per trajectory")):
        select_pairs(store, index[:-1], rng, PairConfig(gap=1, ot_threshold=None))


def test_policy_rollouts_tag_each_trajectory_with_its_checkpoint():
    from stable_baselines3.common.env_util import make_vec_env

    venv = make_vec_env("Pendulum-v1", n_envs=2)
    policies = [(k, lambda obs, k=k: np.full((len(obs), 1), k - 1.0, np.float32)) for k in (0, 2)]
    store, index = policy_rollouts(policies, venv, np.random.default_rng(0),
                                   RolloutConfig(per_checkpoint=3))
    assert index.tolist() == [0, 0, 0, 2, 2, 2] and len(store) == 6
    assert np.allclose(store[0].acts, -1.0) and np.allclose(store[5].acts, 1.0)


def test_checkpoint_rollouts_cover_every_saved_round(tmp_path):
    from stable_baselines3.common.env_util import make_vec_env

    from rlkit.ail import CheckpointStore, DiscriminatorConfig, build_discriminator, make_generator
    from rlkit.apec import checkpoint_rollouts

    venv = make_vec_env("Pendulum-v1", n_envs=2)
    checkpoints = CheckpointStore(tmp_path)
    config = DiscriminatorConfig(hidden=(8,))
    for round_index in (0, 3):
        generator = make_generator("ppo", venv, 64, seed=round_index,
                                   kwargs={"policy_kwargs": {"net_arch": [8]}})
        discriminator = build_discriminator(config, venv.observation_space, venv.action_space)
        checkpoints.save(round_index, generator, discriminator, {})
    store, index = checkpoint_rollouts(checkpoints, venv, np.random.default_rng(0),
                                       RolloutConfig(per_checkpoint=2))
    assert index.tolist() == [0, 0, 3, 3] and len(store) == 4
    with pytest.raises(InvalidDataError, match="checkpoints"):
        checkpoint_rollouts(CheckpointStore(tmp_path / "none"), venv, np.random.default_rng(0))


def test_ot_only_ablation_prefers_the_rollout_closer_to_the_demos_whatever_its_checkpoint():
    store, index, demos = _store()
    distances = demo_ot_distances(store, demos)
    config = PairConfig(n_pairs=200, ot_threshold=1e-3)
    data = ot_only_pairs(store, index, distances, np.random.default_rng(5), config)
    left, right = data.meta["ot_left"], data.meta["ot_right"]
    assert np.all(np.abs(left - right) > 1e-3)
    assert np.all(np.where(data.labels > 0.5, left < right, right < left))
    assert data.sources.tolist() == ["apec_ot_only"] * 200
    # No gap: some pairs come from the same or neighbouring checkpoints.
    assert np.abs(data.meta["checkpoint_left"] - data.meta["checkpoint_right"]).min() <= 1


def test_ot_only_names_how_many_pairs_are_possible():
    store, index, _ = _store(n_ckpt=3, per=1)
    distances = np.array([0.5, 0.3, 0.1])  # only (0, 2) differs by more than 0.3
    config = PairConfig(n_pairs=5, ot_threshold=0.3, max_draws=1)
    with pytest.raises(InvalidDataError, match="found only .* 1 distinct trajectory pairs"):
        ot_only_pairs(store, index, distances, np.random.default_rng(0), config)


def _states(n_e1: int, n_e2: int, n_absorbing: int = 0) -> Trajectory:
    """A fixed-horizon trajectory: n_e1 states along e1, n_e2 along e2, then absorbing states
    (zeros with the flag set), as ``envs.fixed_horizon`` writes them: (x, y, flag)."""
    rows = [[1.0, 0.0, 0.0]] * n_e1 + [[0.0, 1.0, 0.0]] * n_e2 + [[0.0, 0.0, 1.0]] * n_absorbing
    obs = np.array(rows + [rows[-1]], np.float32)
    n = len(rows)
    return Trajectory(obs, np.zeros((n, 1), np.float32), np.zeros(n, np.float32))


def test_the_ot_distance_is_the_references_transport_cost_and_the_margin_is_in_its_units():
    """By hand: the demo is 1000 states along e1. A rollout with k of its 1000 states along e2
    (cosine cost 1 to every demo state, 0 for e1) must send k/1000 of the mass at cost 1, so
    <P, C> = k/1000, and the reference's mean(diag(P C^T)) * 1000 is the same number. A rollout
    that terminated after 500 states, all along e2, costs <P, C> = 1 and is scaled by 1000/500.
    Absorbing states never enter the transport (the reference's rollouts end at termination)."""
    demo = _states(1000, 0)
    store = TrajectoryStore()
    for n_e1, n_e2, n_absorbing in ((600, 400, 0), (750, 250, 0), (650, 350, 0), (0, 500, 500)):
        store.append(_states(n_e1, n_e2, n_absorbing))
    distances = demo_ot_distances(store, [demo], absorbing_flag=True)
    assert distances == pytest.approx([0.4, 0.25, 0.35, 2.0], abs=2e-3)
    # Against the reference's margin 0.1 (the default): 0.25 <= 0.4 - 0.1 passes, 0.35 does not.
    assert PairConfig().ot_threshold == 0.1 and PairConfig().ot_reg == 0.01
    assert PairConfig().ot_iterations == 100
    index = np.array([0, 20, 20, 20])
    data = select_pairs(store, index, np.random.default_rng(0), PairConfig(n_pairs=5, gap=10),
                        ot_distances=distances)
    assert set(data.meta["checkpoint_left"].tolist() + data.meta["checkpoint_right"].tolist()) == {0, 20}
    later = np.where(data.labels > 0.5, data.meta["ot_left"], data.meta["ot_right"])
    assert np.allclose(later, 0.25, atol=2e-3)  # the 0.35 rollout never passes the 0.1 margin


def test_an_ot_arm_at_its_own_margin_is_that_arm_with_the_pairs_margin_set():
    from rlkit.apec.config import ApecConfig
    from rlkit.runners.apec import build_dataset

    store, index, demos = _store()
    distances = demo_ot_distances(store, demos)
    margin = float(np.quantile(np.abs(distances[:, None] - distances[None, :]), 0.5))
    config = ApecConfig(pairs=PairConfig(n_pairs=100, ot_threshold=0.0),
                        methods=["ot_only", f"ot_only@{margin}", f"apec@{margin}"])

    def dataset(method, pairs=config.pairs):
        return build_dataset(method, config.replace(pairs=pairs), None, demos, store, index, distances)

    at_margin = dataset(f"ot_only@{margin}")
    set_in_pairs = dataset("ot_only", config.pairs.replace(ot_threshold=margin))
    assert np.array_equal(at_margin.pairs.left, set_in_pairs.pairs.left)
    assert np.array_equal(at_margin.labels, set_in_pairs.labels)
    assert np.all(np.abs(at_margin.meta["ot_left"] - at_margin.meta["ot_right"]) > margin)
    bare = dataset("ot_only")  # the pairs' own margin, 0: closer pairs too
    assert np.abs(bare.meta["ot_left"] - bare.meta["ot_right"]).min() < margin
    apec_at_margin = dataset(f"apec@{margin}")
    assert np.array_equal(apec_at_margin.labels,
                          dataset("apec", config.pairs.replace(ot_threshold=margin)).labels)


@pytest.mark.parametrize("method, message", [
    ("ot_only@-0.1", "must be a number >= 0"), ("ot_only@nan", "must be a number >= 0"),
    ("ot_only@wide", "must be a number >= 0"), ("drex@0.1", "only apec, apec_ordinal, ot_only take"),
    ("ot-only", "unknown; one of apec,"),
])
def test_a_method_that_is_no_arm_is_refused_naming_it(method, message):
    from rlkit.apec.config import ApecConfig
    from rlkit.errors import ConfigError

    expected = rf"ApecConfig.methods.1: method '{re.escape(method)}': .*{message}"
    with pytest.raises(ConfigError, match=expected):
        ApecConfig(methods=["apec", method])

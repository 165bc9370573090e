"""Reward nets, ensembles and normalisation: what they read, the shapes they return."""

import dataclasses
import json
import math

import numpy as np
import pytest
import torch
from gymnasium import spaces

from rlkit.errors import InvalidDataError
from rlkit.reward import (
    NormalizedReward,
    RewardEnsemble,
    RewardNet,
    RewardNetSpec,
    RunningNorm,
    TorchRewardFn,
    build_reward_net,
)
from rlkit.types import RewardFn

HOPPER_OBS = spaces.Box(-np.inf, np.inf, (11,), np.float32)
HOPPER_ACT = spaces.Box(-1.0, 1.0, (3,), np.float32)


def random_inputs(rng: np.random.Generator, lead: tuple[int, ...], obs_shape=(11,), act_shape=(3,)):
    return (
        torch.as_tensor(rng.normal(size=(*lead, *obs_shape)), dtype=torch.float32),
        torch.as_tensor(rng.normal(size=(*lead, *act_shape)), dtype=torch.float32),
        torch.as_tensor(rng.normal(size=(*lead, *obs_shape)), dtype=torch.float32),
        torch.as_tensor(rng.random(lead) < 0.5),
    )


def test_spec_survives_a_json_round_trip() -> None:
    spec = RewardNetSpec("mlp", (11,), (3,), None, ("obs", "act", "done"), (64, 32), "tanh")
    assert RewardNetSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


def test_a_spec_writes_every_field_and_one_lacking_fields_is_refused_by_name() -> None:
    data = RewardNetSpec("mlp", (11,), (3,)).to_dict()
    assert set(data) == {f.name for f in dataclasses.fields(RewardNetSpec)}  # defaults too
    del data["linear_first"], data["encoder"]
    with pytest.raises(InvalidDataError, match=r"lacks \['encoder', 'linear_first'\]"):
        RewardNetSpec.from_dict(data)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("kind", "rnn", "kind must be 'mlp' or 'cnn', got 'rnn'"),
     ("inputs", ("obs", "reward"), "inputs must be distinct names"),
     ("activation", "swish2", "activation must be one of"),
     ("hidden", (0,), "hidden and channels must be >= 1")],
)
def test_spec_rejects_bad_fields_by_name(field: str, value, message: str) -> None:
    fields = {"kind": "mlp", "obs_shape": (11,), "act_shape": (3,), field: value}
    with pytest.raises(InvalidDataError, match=message):
        RewardNetSpec(**fields)


def test_forward_keeps_any_leading_batch_shape() -> None:
    net = build_reward_net(HOPPER_OBS, HOPPER_ACT, hidden=(16,), seed=0)
    inputs = random_inputs(np.random.default_rng(0), (2, 3, 5))
    rewards = net(*inputs)
    assert rewards.shape == (2, 3, 5)
    flat = net(*(x.reshape(30, *x.shape[3:]) for x in inputs))
    torch.testing.assert_close(rewards.reshape(30), flat)


def test_seeded_nets_are_reproducible_and_leave_the_global_rng_alone() -> None:
    state = torch.random.get_rng_state()
    first, second = (build_reward_net(HOPPER_OBS, HOPPER_ACT, seed=3) for _ in range(2))
    assert torch.equal(torch.random.get_rng_state(), state)
    for a, b in zip(first.parameters(), second.parameters(), strict=True):
        assert torch.equal(a, b)


def test_net_reads_only_its_inputs() -> None:
    rng = np.random.default_rng(1)
    obs, acts, next_obs, dones = random_inputs(rng, (8,))
    state_only = build_reward_net(HOPPER_OBS, HOPPER_ACT, inputs=("obs",), hidden=(16,), seed=0)
    torch.testing.assert_close(state_only(obs, acts, next_obs, dones),
                               state_only(obs, None, None, None))
    with_done = build_reward_net(HOPPER_OBS, HOPPER_ACT, inputs=("next_obs", "done"), seed=0)
    assert not torch.equal(with_done(None, None, next_obs, torch.zeros(8)),
                           with_done(None, None, next_obs, torch.ones(8)))
    with pytest.raises(InvalidDataError, match=r"reads \['obs'\] but got None"):
        state_only(None, acts, next_obs, dones)


def test_discrete_actions_are_one_hot() -> None:
    net = build_reward_net(HOPPER_OBS, spaces.Discrete(4), inputs=("act",), hidden=(8,), seed=0)
    assert net.spec.n_actions == 4 and net.spec.act_shape == ()
    rewards = net(None, torch.arange(4), None, None)
    torch.testing.assert_close(rewards, net.head(torch.eye(4)).squeeze(-1))


def test_wrong_trailing_shape_is_named() -> None:
    net = build_reward_net(HOPPER_OBS, HOPPER_ACT, seed=0)
    with pytest.raises(InvalidDataError, match=r"obs must have shape \(\.\.\., 11\).*\(4, 17\)"):
        net(torch.zeros(4, 17), torch.zeros(4, 3), None, None)


def test_image_observations_get_a_cnn_over_scaled_pixels() -> None:
    image = spaces.Box(0, 255, (12, 10, 3), np.uint8)
    net = build_reward_net(image, spaces.Discrete(5), inputs=("obs", "act", "next_obs"),
                           hidden=(16,), seed=0)
    assert net.spec.kind == "cnn"
    rng = np.random.default_rng(2)
    obs = torch.as_tensor(rng.integers(0, 256, (4, 2, 12, 10, 3), dtype=np.uint8))
    acts = torch.as_tensor(rng.integers(0, 5, (4, 2)))
    rewards = net(obs, acts, obs, None)
    assert rewards.shape == (4, 2) and torch.isfinite(rewards).all()
    assert not torch.equal(rewards, net(255 - obs, acts, obs, None))
    mlp = build_reward_net(image, spaces.Discrete(5), kind="mlp", seed=0)
    assert mlp.spec.kind == "mlp"


def test_numpy_adapter_is_a_reward_fn_returning_float32_without_grad() -> None:
    net = build_reward_net(HOPPER_OBS, HOPPER_ACT, hidden=(16,), seed=0)
    reward_fn = TorchRewardFn(net)
    assert isinstance(reward_fn, RewardFn)
    rng = np.random.default_rng(3)
    obs, acts = rng.normal(size=(6, 11)), rng.normal(size=(6, 3))  # float64 in
    rewards = reward_fn(obs, acts, obs, np.zeros(6, bool))
    assert rewards.dtype == np.float32 and rewards.shape == (6,)
    expected = net(torch.as_tensor(obs, dtype=torch.float32),
                   torch.as_tensor(acts, dtype=torch.float32), None, None)
    np.testing.assert_array_equal(rewards, expected.detach().numpy())


def constant_net(value: float) -> RewardNet:
    """A net that ignores its input and returns ``value``."""
    net = RewardNet(RewardNetSpec("mlp", (11,), (3,), hidden=(4,)), seed=0)
    with torch.no_grad():
        net.head[-1].weight.zero_()
        net.head[-1].bias.fill_(value)
    return net


def test_ensemble_mean_and_population_std_over_members() -> None:
    ensemble = RewardEnsemble([constant_net(1.0), constant_net(2.0), constant_net(4.0)])
    obs, acts, next_obs, dones = random_inputs(np.random.default_rng(4), (5, 2))
    mean, std = ensemble.mean_std(obs, acts, next_obs, dones)
    torch.testing.assert_close(mean, torch.full((5, 2), 7 / 3))
    torch.testing.assert_close(std, torch.full((5, 2), math.sqrt(14 / 9)))  # ddof 0
    torch.testing.assert_close(ensemble(obs, acts, next_obs, dones), mean)
    mean_np, std_np = ensemble.mean_std_numpy(obs.numpy(), acts.numpy(), None, None)
    assert mean_np.dtype == std_np.dtype == np.float32
    np.testing.assert_array_equal(std_np, std.detach().numpy())


def test_ensemble_std_of_agreeing_members_is_exactly_zero() -> None:
    ensemble = RewardEnsemble([constant_net(0.1) for _ in range(3)])
    _, std = ensemble.mean_std_numpy(np.zeros((7, 11)), np.zeros((7, 3)), None, None)
    np.testing.assert_array_equal(std, np.zeros(7, np.float32))  # no rounding residue
    _, single = RewardEnsemble([constant_net(0.1)]).mean_std_numpy(np.zeros((2, 11)),
                                                                   np.zeros((2, 3)), None, None)
    np.testing.assert_array_equal(single, 0.0)  # one member: 0, not NaN


def test_ensemble_members_must_read_the_same_things() -> None:
    other = build_reward_net(spaces.Box(-1, 1, (17,)), HOPPER_ACT, seed=0)
    with pytest.raises(InvalidDataError, match=r"member 1 reads obs \(17,\)"):
        RewardEnsemble([constant_net(0.0), other])
    with pytest.raises(InvalidDataError, match="at least one member"):
        RewardEnsemble([])


def test_running_norm_batched_updates_equal_the_whole_sample() -> None:
    values = np.random.default_rng(5).normal(3.0, 2.0, size=1000)
    norm = RunningNorm()
    for chunk in np.array_split(values, [1, 10, 400, 401]):
        norm.update(chunk)
    assert norm.count == 1000
    assert norm.mean == pytest.approx(values.mean(), rel=1e-12)
    assert norm.var == pytest.approx(values.var(), rel=1e-12)
    normalized = norm.normalize(values)
    assert normalized.dtype == np.float32
    assert abs(normalized.mean()) < 1e-5 and normalized.std() == pytest.approx(1.0, rel=1e-5)
    with pytest.raises(InvalidDataError, match="NaN or inf"):
        norm.update(np.array([1.0, np.nan]))


def test_normalized_reward_updates_only_when_asked() -> None:
    reward_fn = TorchRewardFn(constant_net(5.0))
    norm = RunningNorm()
    training = NormalizedReward(reward_fn, norm, update=True)
    training(np.zeros((4, 11)), np.zeros((4, 3)), None, None)
    assert norm.count == 4 and norm.mean == pytest.approx(5.0)
    frozen = NormalizedReward(reward_fn, norm, update=False)
    frozen(np.zeros((4, 11)), np.zeros((4, 3)), None, None)
    assert norm.count == 4


def test_numpy_reward_fast_path_equals_the_module_forward() -> None:
    """The per-step path builds features in numpy; it must give exactly the net's rewards (an
    ensemble's forward runs its members as one batched model, so there only up to rounding)."""
    obs_space = spaces.Box(-1, 1, (5,))
    act_space = spaces.Box(-1, 1, (2,))
    rng = np.random.default_rng(0)
    obs, next_obs = rng.normal(size=(2, 6, 5))
    acts = rng.normal(size=(6, 2)).astype(np.float32)
    dones = np.array([0, 1, 0, 0, 1, 0], dtype=bool)
    inputs = ("obs", "act", "next_obs", "done")
    for module in (build_reward_net(obs_space, act_space, inputs=inputs, hidden=(16,), seed=1),
                   RewardEnsemble([build_reward_net(obs_space, act_space, inputs=inputs,
                                                    hidden=(8,), seed=s) for s in range(3)])):
        with torch.no_grad():
            expected = module(*(torch.as_tensor(x, dtype=torch.float32)
                                for x in (obs, acts, next_obs, dones))).numpy()
        fast = TorchRewardFn(module)(obs, acts, next_obs, dones)
        if isinstance(module, RewardEnsemble):
            np.testing.assert_allclose(fast, expected, rtol=1e-6, atol=1e-7)
        else:
            np.testing.assert_array_equal(fast, expected)
    with pytest.raises(InvalidDataError, match="obs must have shape"):
        TorchRewardFn(module)(obs[:, :4], acts, next_obs, dones)
    with pytest.raises(InvalidDataError, match="inputs disagree on the batch shape"):
        TorchRewardFn(module)(obs, acts[:3], next_obs, dones)


@pytest.mark.parametrize("inputs", [("obs",), ("next_obs", "done"), ("act", "obs"),
                                    ("done", "act", "next_obs", "obs")])
def test_numpy_features_are_the_rows_features_builds(inputs: tuple[str, ...]) -> None:
    net = build_reward_net(spaces.Box(-1, 1, (2, 3)), spaces.Box(-1, 1, (2,)), inputs=inputs,
                           hidden=(4,), seed=0)
    rng = np.random.default_rng(0)
    given = {"obs": rng.normal(size=(5, 2, 3)), "act": rng.normal(size=(5, 2)).astype(np.float32),
             "next_obs": rng.normal(size=(5, 2, 3)), "done": rng.random(5) < 0.5}
    rows = net.numpy_features(given)
    expected, lead = net.features(*(torch.as_tensor(given[n]) for n in ("obs", "act", "next_obs", "done")))
    assert lead == (5,) and rows is not None and rows.dtype == np.float32
    np.testing.assert_array_equal(rows, expected.to(torch.float32).numpy())
    wide = next(name for name in inputs if name != "done")
    narrow = given[wide].reshape(5, -1)[:, :1]
    assert net.numpy_features({**given, wide: narrow}) is None  # features() names the problem
    if len(inputs) > 1:
        assert net.numpy_features({**given, wide: given[wide][:3]}) is None


def test_a_net_with_an_absorbing_flag_is_zero_on_absorbing_states_on_every_path(tmp_path) -> None:
    """APEC's reference masks absorbing steps out of every return: the net, its numpy fast path,
    a batched ensemble and a saved and reloaded copy are all 0 where the last obs entry is 1."""
    from rlkit.reward import load_reward_model, save_reward_model

    obs_space = spaces.Box(-np.inf, np.inf, (5,), np.float32)  # 4 entries and the flag
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(3, 8, 5)).astype(np.float32)
    obs[..., -1] = 0.0
    obs[:, 5:] = 0.0
    obs[:, 5:, -1] = 1.0  # each trajectory falls after 5 steps: 3 absorbing steps padded
    acts = rng.normal(size=(3, 8, 2)).astype(np.float32)
    plain = build_reward_net(obs_space, spaces.Box(-1, 1, (2,)), inputs=("obs",),
                             hidden=(16,), seed=3)
    flagged = build_reward_net(obs_space, spaces.Box(-1, 1, (2,)), inputs=("obs",), hidden=(16,),
                               seed=3, absorbing_flag=True)
    with torch.no_grad():
        unmasked = plain(torch.as_tensor(obs), None, None, None).numpy()
        masked = flagged(torch.as_tensor(obs), None, None, None).numpy()
    assert np.all(unmasked[:, 5:] != 0.0)  # the plain net has a value there
    np.testing.assert_allclose(masked[:, :5], unmasked[:, :5], rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(masked[:, 5:], 0.0)
    # the gradient reaches the weights through the real steps only: the same as masking after
    loss = flagged(torch.as_tensor(obs), None, None, None).square().sum()
    loss.backward()
    reference = plain(torch.as_tensor(obs), None, None, None)
    (reference * torch.as_tensor(obs[..., -1] < 0.5)).square().sum().backward()
    for got, expected in zip(flagged.parameters(), plain.parameters(), strict=True):
        torch.testing.assert_close(got.grad, expected.grad, rtol=1e-5, atol=1e-6)
    flat = (obs.reshape(24, 5), acts.reshape(24, 2), obs.reshape(24, 5), np.zeros(24, bool))
    np.testing.assert_allclose(TorchRewardFn(flagged)(*flat), masked.reshape(24), rtol=1e-6, atol=1e-7)
    members = [build_reward_net(obs_space, spaces.Box(-1, 1, (2,)), inputs=("obs",), hidden=(8,),
                                seed=s, absorbing_flag=True) for s in range(2)]
    ensemble = RewardEnsemble(members)
    assert ensemble.batched
    with torch.no_grad():
        per_member = ensemble.member_rewards(torch.as_tensor(obs), None, None, None)
    np.testing.assert_array_equal(per_member[:, :, 5:].numpy(), 0.0)
    assert np.all(per_member[:, :, :5].numpy() != 0.0)
    np.testing.assert_array_equal(TorchRewardFn(ensemble)(*flat).reshape(3, 8)[:, 5:], 0.0)
    save_reward_model(flagged, tmp_path / "model")
    loaded = load_reward_model(tmp_path / "model").model
    assert loaded.spec.absorbing_flag
    np.testing.assert_allclose(TorchRewardFn(loaded)(*flat), masked.reshape(24), rtol=1e-6, atol=1e-7)
    with pytest.raises(InvalidDataError, match="absorbing_flag needs an MLP reading flat obs"):
        RewardNetSpec("mlp", (5,), (2,), inputs=("act",), absorbing_flag=True)
    with pytest.raises(InvalidDataError, match="ensemble member 1 reads .* absorbing_flag False"):
        RewardEnsemble([members[0], build_reward_net(obs_space, spaces.Box(-1, 1, (2,)),
                                                     inputs=("obs",), hidden=(8,), seed=5)])


def test_linear_first_is_the_references_mlp_on_every_path(tmp_path) -> None:
    """APEC's reference reward MLPs (model/reward.py ``first_fc``, ``Linear -> ReLU`` blocks,
    ``last_fc``) apply no activation after their first layer: the net computes
    ``W3 relu(W2 (W1 x + b1) + b2) + b3``, and so do its numpy fast path, a batched ensemble and
    a saved and reloaded copy; its parameters are named as a plain net's."""
    from rlkit.reward import load_reward_model, save_reward_model

    rng = np.random.default_rng(1)
    obs = torch.as_tensor(rng.normal(size=(40, 11)), dtype=torch.float32)
    net = build_reward_net(HOPPER_OBS, HOPPER_ACT, inputs=("obs",), hidden=(16, 8), seed=2, linear_first=True)
    plain = build_reward_net(HOPPER_OBS, HOPPER_ACT, inputs=("obs",), hidden=(16, 8), seed=2)
    assert net.state_dict().keys() == plain.state_dict().keys()
    plain.load_state_dict(net.state_dict())
    w = {k: v.detach() for k, v in net.state_dict().items()}
    by_hand = torch.relu((obs @ w["head.0.weight"].T + w["head.0.bias"]) @ w["head.2.weight"].T
                         + w["head.2.bias"]) @ w["head.4.weight"].T + w["head.4.bias"]
    expected = by_hand.reshape(40).numpy()
    with torch.no_grad():
        rewards = net(obs, None, None, None)
        torch.testing.assert_close(rewards, by_hand.reshape(40))
        assert not torch.allclose(plain(obs, None, None, None), rewards)  # the first ReLU matters
    # 40 rows >= the first layer's 16: run_head composes W2 W1 into one map (compose_first); the
    # gradients are those of running the layers one by one
    grads = []
    for composed in (True, False):
        net.zero_grad()
        net.compose_first = composed
        net(obs, None, None, None).square().sum().backward()
        grads.append([p.grad.clone() for p in net.parameters()])
    for composed_grad, layered_grad in zip(*grads, strict=True):
        torch.testing.assert_close(composed_grad, layered_grad, rtol=1e-5, atol=1e-6)
    net.compose_first = True
    flat = (obs.numpy(), np.zeros((40, 3), np.float32), obs.numpy(), np.zeros(40, bool))
    np.testing.assert_allclose(TorchRewardFn(net)(*flat), expected, rtol=1e-5, atol=1e-6)
    members = [build_reward_net(HOPPER_OBS, HOPPER_ACT, inputs=("obs",), hidden=(16, 8), seed=s,
                                linear_first=True) for s in (2, 3)]
    ensemble = RewardEnsemble(members)
    assert ensemble.batched
    with torch.no_grad():
        torch.testing.assert_close(ensemble.member_rewards(obs, None, None, None)[0], by_hand.reshape(40))
    assert not RewardEnsemble([members[0], plain]).batched  # heads of two shapes run one by one
    save_reward_model(net, tmp_path / "model")
    loaded = load_reward_model(tmp_path / "model").model
    assert loaded.spec.linear_first
    np.testing.assert_allclose(TorchRewardFn(loaded)(*flat), expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(InvalidDataError, match="linear_first needs a hidden layer"):
        RewardNetSpec("mlp", (11,), (3,), hidden=(), linear_first=True)


@pytest.mark.parametrize("absorbing_flag", [False, True])
def test_the_head_in_row_blocks_gives_the_rewards_and_gradients_of_one_pass(absorbing_flag: bool) -> None:
    """A big batch runs through the MLP head ``head_rows`` rows at a time (for the CPU's cache):
    the same rewards and the same weight gradients as one pass, the last short block included."""
    obs_space = spaces.Box(-np.inf, np.inf, (5,), np.float32)
    obs = torch.as_tensor(np.random.default_rng(1).normal(size=(7, 9, 5)), dtype=torch.float32)
    if absorbing_flag:
        obs[..., -1] = (torch.arange(9) >= 6).float()  # 3 absorbing steps: 42 rows reach the head
    nets = [build_reward_net(obs_space, HOPPER_ACT, inputs=("obs",), hidden=(16, 16), seed=4,
                             absorbing_flag=absorbing_flag) for _ in range(2)]
    whole, blocks = nets
    whole.head_rows, blocks.head_rows = None, 10
    passes = []
    blocks.head.register_forward_hook(lambda module, inputs, output: passes.append(len(output)))
    rewards = [net(obs, None, None, None) for net in nets]
    assert passes == ([10] * 4 + [2] if absorbing_flag else [10] * 6 + [3])
    torch.testing.assert_close(rewards[1], rewards[0], rtol=1e-6, atol=1e-7)
    for reward in rewards:
        (reward * torch.linspace(-1, 1, 9)).sum().backward()
    for got, expected in zip(blocks.parameters(), whole.parameters(), strict=True):
        torch.testing.assert_close(got.grad, expected.grad, rtol=1e-5, atol=1e-6)

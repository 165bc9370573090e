"""Saved reward models: exact round trips, no pickle, and clear errors for damage and mismatches."""

import json
from pathlib import Path

import numpy as np
import pytest
from gymnasium import spaces
from safetensors import safe_open

from rlkit.errors import FileFormatError, IncompatibleModelError, InvalidDataError
from rlkit.reward import (
    NormalizedReward,
    RewardEnsemble,
    RewardNetSpec,
    RunningNorm,
    TorchRewardFn,
    build_reward_net,
    load_reward_model,
    save_reward_model,
)

HOPPER_OBS = spaces.Box(-np.inf, np.inf, (11,), np.float32)
HOPPER_ACT = spaces.Box(-1.0, 1.0, (3,), np.float32)


def hopper_batch(n: int = 32) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    return (rng.normal(size=(n, 11)).astype(np.float32), rng.uniform(-1, 1, (n, 3)),
            rng.normal(size=(n, 11)).astype(np.float32), rng.random(n) < 0.1)


def test_net_round_trip_reproduces_outputs_exactly(tmp_path: Path) -> None:
    net = build_reward_net(HOPPER_OBS, HOPPER_ACT, inputs=("obs", "act", "next_obs", "done"),
                           hidden=(32, 16), activation="tanh", seed=1)
    save_reward_model(net, tmp_path)
    loaded = load_reward_model(tmp_path, HOPPER_OBS, HOPPER_ACT)
    assert loaded.model.spec == net.spec and loaded.norm is None
    batch = hopper_batch()
    np.testing.assert_array_equal(loaded.reward_fn()(*batch), TorchRewardFn(net)(*batch))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.json", "model.safetensors"]


def test_ensemble_with_normaliser_round_trip(tmp_path: Path) -> None:
    ensemble = RewardEnsemble([build_reward_net(HOPPER_OBS, HOPPER_ACT, hidden=(h,), seed=h)
                               for h in (8, 16, 32)])  # members may differ in width
    norm = RunningNorm()
    norm.update(np.array([0.5, 1.5, 4.0]))
    save_reward_model(ensemble, tmp_path, norm=norm)
    loaded = load_reward_model(tmp_path)
    assert isinstance(loaded.model, RewardEnsemble) and len(loaded.model) == 3
    assert loaded.norm.state_dict() == norm.state_dict()
    batch = hopper_batch()
    expected = NormalizedReward(TorchRewardFn(ensemble), norm, update=False)(*batch)
    np.testing.assert_array_equal(loaded.reward_fn()(*batch), expected)
    np.testing.assert_array_equal(loaded.model.mean_std_numpy(*batch)[1],
                                  ensemble.mean_std_numpy(*batch)[1])


def test_files_are_plain_json_and_safetensors(tmp_path: Path) -> None:
    net = build_reward_net(spaces.Box(0, 255, (8, 8, 3), np.uint8), spaces.Discrete(4), seed=0)
    save_reward_model(net, tmp_path)
    header = json.loads((tmp_path / "model.json").read_text())
    assert header["format"] == "rlkit.reward_model/1" and header["ensemble_size"] == 1
    assert header["specs"][0]["kind"] == "cnn" and header["specs"][0]["n_actions"] == 4
    with safe_open(tmp_path / "model.safetensors", framework="pt") as weights:
        assert set(weights.keys()) == set(net.state_dict())


def test_mismatched_spaces_are_named(tmp_path: Path) -> None:
    save_reward_model(build_reward_net(HOPPER_OBS, HOPPER_ACT, seed=0), tmp_path)
    walker_obs = spaces.Box(-np.inf, np.inf, (17,), np.float32)
    with pytest.raises(IncompatibleModelError,
                       match=r"obs shape \(11,\) in model.json vs \(17,\) in the env"):
        load_reward_model(tmp_path, walker_obs, HOPPER_ACT)
    with pytest.raises(IncompatibleModelError,
                       match=r"action shape \(3,\) in model.json vs \(6,\) in the env"):
        load_reward_model(tmp_path, HOPPER_OBS, spaces.Box(-1, 1, (6,)))
    with pytest.raises(IncompatibleModelError,
                       match="continuous actions in model.json vs 5 discrete actions in the env"):
        load_reward_model(tmp_path, HOPPER_OBS, spaces.Discrete(5))


@pytest.mark.parametrize("damage", ["truncate", "garble", "delete"])
def test_damaged_weights_raise_file_format_error(tmp_path: Path, damage: str) -> None:
    save_reward_model(build_reward_net(HOPPER_OBS, HOPPER_ACT, seed=0), tmp_path)
    weights = tmp_path / "model.safetensors"
    data = weights.read_bytes()
    if damage == "truncate":
        weights.write_bytes(data[: len(data) // 2])
    elif damage == "garble":
        weights.write_bytes(b"\xff" * len(data))
    else:
        weights.unlink()
    with pytest.raises(FileFormatError, match="model.safetensors"):
        load_reward_model(tmp_path)


def test_damaged_or_foreign_json_raises_file_format_error(tmp_path: Path) -> None:
    with pytest.raises(FileFormatError, match="no such file"):
        load_reward_model(tmp_path / "missing")
    save_reward_model(build_reward_net(HOPPER_OBS, HOPPER_ACT, seed=0), tmp_path)
    spec_file = tmp_path / "model.json"
    good = spec_file.read_text()
    spec_file.write_text(good[:40])
    with pytest.raises(FileFormatError, match="not valid JSON"):
        load_reward_model(tmp_path)
    spec_file.write_text(json.dumps({**json.loads(good), "format": "other/9"}))
    with pytest.raises(FileFormatError, match="format is 'other/9'"):
        load_reward_model(tmp_path)
    header = json.loads(good)
    header["specs"][0]["hidden"] = [7]  # the weights no longer fit the spec
    spec_file.write_text(json.dumps(header))
    with pytest.raises(FileFormatError, match="weights do not fit the specs"):
        load_reward_model(tmp_path)


def test_running_norm_state_is_json_and_exact() -> None:
    norm = RunningNorm()
    norm.update(np.random.default_rng(0).normal(size=101))
    state = json.loads(json.dumps(norm.state_dict()))
    restored = RunningNorm.from_state(state)
    values = np.linspace(-3, 3, 7)
    np.testing.assert_array_equal(restored.normalize(values), norm.normalize(values))
    with pytest.raises(InvalidDataError, match=r"lacks \['var'\]"):
        RunningNorm.from_state({"count": 1.0, "mean": 0.0, "eps": 1e-8})


def test_spec_from_json_with_unknown_field_is_refused() -> None:
    with pytest.raises(InvalidDataError, match="not a reward net spec: .*'depth'"):
        RewardNetSpec.from_dict({**RewardNetSpec("mlp", (3,), ()).to_dict(), "depth": 2})

"""Pixel networks: random-shift augmentation, CNN reward nets and discriminators on frame stacks."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from gymnasium import spaces
from stable_baselines3.common.vec_env import DummyVecEnv
from torch import nn

from envs.pixels import make_pixel_env
from rlkit.ail import AILConfig, AILTrainer, DiscriminatorConfig, Transitions
from rlkit.ail import discriminator as discriminator_module
from rlkit.ail.discriminator import build_discriminator
from rlkit.ail.losses import gradient_penalty
from rlkit.data import Trajectory, sample_pairs
from rlkit.errors import InvalidDataError
from rlkit.reward import (
    RewardNet,
    RewardNetSpec,
    RewardTrainer,
    TorchRewardFn,
    TrainerConfig,
    build_reward_net,
    load_reward_model,
    save_reward_model,
)
from rlkit.reward import trainer as trainer_module
from rlkit.reward.augment import default_pad, random_shift, shift_observations
from rlkit.reward.nets import image_layout, is_image_space
from rlkit.reward.numpy_rewards import forward_in_chunks, numpy_to_tensors
from tests.fake_data import truthful_labels
from tests.reward_builders import ACTIONS, STACK, conv_net, region_store


def _images(n: int = 6, c: int = 9, h: int = 16, w: int = 16, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (n, c, h, w), generator=gen, dtype=torch.uint8)


def test_random_shift_at_pad_zero_is_identity() -> None:
    images = _images()
    out = random_shift(images, pad=0, generator=torch.Generator().manual_seed(1))
    assert out.dtype == torch.uint8
    assert torch.equal(out, images)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_random_shift_is_a_crop_of_the_replicate_padded_image(dtype: torch.dtype) -> None:
    pad = 3
    images = _images(n=16, h=12, w=10).to(dtype)
    out = random_shift(images, pad=pad, generator=torch.Generator().manual_seed(2))
    assert out.shape == images.shape and out.dtype == dtype
    padded = F.pad(images.float(), (pad,) * 4, mode="replicate").to(dtype)
    offsets = set()
    for image, shifted in zip(padded, out, strict=True):
        matches = [(dy, dx) for dy in range(2 * pad + 1) for dx in range(2 * pad + 1)
                   if torch.equal(image[:, dy:dy + 12, dx:dx + 10], shifted)]
        assert matches, "an output is not a crop of its padded input"
        offsets.add(matches[0])
    assert len(offsets) > 1  # each image draws its own shift


def test_random_shift_is_reproducible_given_the_generator() -> None:
    images = _images(n=32)
    first = random_shift(images, pad=4, generator=torch.Generator().manual_seed(5))
    again = random_shift(images, pad=4, generator=torch.Generator().manual_seed(5))
    other = random_shift(images, pad=4, generator=torch.Generator().manual_seed(6))
    assert torch.equal(first, again)
    assert not torch.equal(first, other)


def test_random_shift_equals_drqv2_grid_sample_for_the_same_shifts() -> None:
    """DrQ-v2's RandomShiftsAug (bilinear grid_sample of a shifted pixel-centre grid), written out
    with shifts drawn from the same generator, gives the same images."""
    n, c, h, pad = 5, 6, 16, 4
    images = torch.rand(n, c, h, h, generator=torch.Generator().manual_seed(0))
    eps = 1.0 / (h + 2 * pad)
    arange = torch.linspace(-1.0 + eps, 1.0 - eps, h + 2 * pad)[:h]
    arange = arange.unsqueeze(0).repeat(h, 1).unsqueeze(2)
    base = torch.cat([arange, arange.transpose(1, 0)], dim=2).unsqueeze(0).repeat(n, 1, 1, 1)
    shift = torch.randint(0, 2 * pad + 1, (n, 2), generator=torch.Generator().manual_seed(3))
    grid = base + shift[:, None, None, :].float() * 2.0 / (h + 2 * pad)
    padded = F.pad(images, (pad,) * 4, "replicate")
    expected = F.grid_sample(padded, grid, padding_mode="zeros", align_corners=False)
    out = random_shift(images, pad=pad, generator=torch.Generator().manual_seed(3))
    assert (out - expected).abs().max() < 1e-5  # float rounding of the grid only


@pytest.mark.parametrize("shape, pad", [((3, 8, 8), 4), ((2, 3, 8, 8), -1)])
def test_random_shift_rejects_bad_input(shape: tuple[int, ...], pad: int) -> None:
    with pytest.raises(InvalidDataError):
        random_shift(torch.zeros(shape), pad=pad)


# --- image layouts and the CNN reward net ---------------------------------------------------


@pytest.mark.parametrize("shape, layout", [
    ((9, 64, 64), "channels_first"), ((3, 84, 84), "channels_first"), ((1, 8, 8), "channels_first"),
    ((64, 64, 3), "channels_last"), ((12, 10, 3), "channels_last"), ((64, 64, 12), "channels_last"),
    ((4, 4, 4), "channels_last"), ((64, 3, 64), None), ((9, 64), None),
])
def test_image_layout_reads_the_channel_axis(shape: tuple[int, ...], layout: str | None) -> None:
    assert image_layout(shape) == layout
    assert is_image_space(spaces.Box(0, 255, shape, np.uint8)) == (layout is not None)
    assert not is_image_space(spaces.Box(0, 255, shape, np.float32))


def test_channel_first_and_channel_last_nets_agree_on_the_same_pixels() -> None:
    """Same seed, same weights: a channel-first net on a stack reads what a channel-last net reads
    on the transposed stack; obs and next_obs are stacked on the channel axis in both."""
    first = build_reward_net(STACK, spaces.Discrete(3), inputs=("obs", "act", "next_obs"),
                             hidden=(8,), seed=0)
    last = build_reward_net(spaces.Box(0, 255, (16, 16, 9), np.uint8), spaces.Discrete(3),
                            inputs=("obs", "act", "next_obs"), hidden=(8,), seed=0)
    assert first.spec.kind == last.spec.kind == "cnn"
    assert first.spec.channels_first and not last.spec.channels_first
    obs, next_obs = _images(n=10).reshape(2, 5, 9, 16, 16), _images(n=10, seed=1).reshape(2, 5, 9, 16, 16)
    acts = torch.zeros(2, 5, dtype=torch.long)
    rewards = first(obs, acts, next_obs, None)
    assert rewards.shape == (2, 5)
    transposed = last(obs.permute(0, 1, 3, 4, 2), acts, next_obs.permute(0, 1, 3, 4, 2), None)
    assert torch.allclose(rewards, transposed, atol=1e-6), (rewards, transposed)
    with pytest.raises(InvalidDataError, match=r"obs must have shape \(\.\.\., 9, 16, 16\)"):
        first(obs.permute(0, 1, 3, 4, 2), acts, next_obs, None)


def test_drq_encoder_follows_the_reference() -> None:
    net = build_reward_net(spaces.Box(0, 255, (9, 64, 64), np.uint8), spaces.Box(-1, 1, (2,)),
                           inputs=("obs",), encoder="drq", seed=0)
    assert net.encoder is not None
    convs = [m for m in net.encoder.modules() if isinstance(m, nn.Conv2d)]
    assert [(c.out_channels, c.stride, c.padding) for c in convs] == [
        (32, (2, 2), (0, 0)), *[(32, (1, 1), (0, 0))] * 3]
    linear = next(m for m in net.encoder.modules() if isinstance(m, nn.Linear))
    assert (linear.in_features, linear.out_features) == (32 * 25 * 25, 50)  # 64 -> 31 -> 25
    assert isinstance(net.encoder[-2], nn.LayerNorm) and isinstance(net.encoder[-1], nn.Tanh)
    assert net(_images(n=3, h=64, w=64), None, None, None).shape == (3,)
    with pytest.raises(InvalidDataError, match="too small"):
        build_reward_net(spaces.Box(0, 255, (9, 8, 8), np.uint8), spaces.Box(-1, 1, (2,)),
                         encoder="drq")


def test_specs_record_the_layout_and_specs_lacking_the_image_settings_are_refused(tmp_path: Path) -> None:
    old = {"kind": "cnn", "obs_shape": [8, 8, 3], "act_shape": [], "n_actions": 4,
           "inputs": ["obs", "act"], "hidden": [16], "activation": "relu", "channels": [16, 32, 32]}
    with pytest.raises(InvalidDataError, match="lacks .*'channels_first', 'encoder', 'feature_dim'"):
        RewardNetSpec.from_dict(old)
    net = build_reward_net(STACK, spaces.Discrete(3), hidden=(8,), encoder="drq", feature_dim=7,
                           channels=(4, 4), seed=0)
    save_reward_model(net, tmp_path)
    loaded = load_reward_model(tmp_path, STACK, spaces.Discrete(3)).model
    assert loaded.spec == net.spec and loaded.spec.channels_first
    obs, acts = _images(n=4).numpy(), np.zeros(4, np.int64)
    np.testing.assert_array_equal(TorchRewardFn(loaded)(obs, acts, obs, np.zeros(4)),
                                  TorchRewardFn(net)(obs, acts, obs, np.zeros(4)))


def test_reward_inference_runs_in_chunks_with_the_same_rewards() -> None:
    net = build_reward_net(STACK, spaces.Discrete(3), hidden=(8,), seed=0)
    obs, acts = _images(n=50).numpy(), np.arange(50) % 3
    whole = forward_in_chunks(lambda o, a: net(*numpy_to_tensors(net, o, a), None, None), [obs, acts])
    chunked = forward_in_chunks(lambda o, a: net(*numpy_to_tensors(net, o, a), None, None),
                                [obs, acts], rows=7)
    assert chunked.dtype == np.float32 and chunked.shape == (50,)
    np.testing.assert_allclose(chunked, whole, rtol=1e-5, atol=1e-6)


# --- training a CNN reward net on frame stacks ---------------------------------------------


@pytest.mark.parametrize("encoder", ["compact", "drq"])
def test_conv_reward_net_learns_a_region_brightness_preference(encoder: str) -> None:
    rng = np.random.default_rng(0)
    pairs = sample_pairs(region_store(12, rng), 300, 4, rng)
    held_out = sample_pairs(region_store(6, np.random.default_rng(1)), 200, 4,
                            np.random.default_rng(2))
    trainer = RewardTrainer(conv_net(encoder=encoder), TrainerConfig(
        lr=3e-3, max_epochs=8, patience=None, val_fraction=0.0, device="cpu"))
    started = time.perf_counter()
    trainer.fit(pairs, truthful_labels(pairs), rng=rng)
    seconds = time.perf_counter() - started
    assert trainer.shift_pad == 1  # auto: the reference's pad scaled to 16 x 16
    assert next(trainer.model.parameters()).device.type == "cpu"
    accuracy = trainer.evaluate(held_out, truthful_labels(held_out))["accuracy"]
    # 4 seeds: compact 0.94-0.97; drq 0.87-0.94 (its unpadded convolutions, made for 64-84 px
    # frames, shrink these 16 x 16 stacks to 1 x 1: here it only has to show that it trains)
    assert accuracy > (0.9 if encoder == "compact" else 0.8), (accuracy, seconds)


def test_training_batches_are_shifted_and_evaluation_never_is(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    pairs = sample_pairs(region_store(4, rng), 60, 4, rng)
    labels = truthful_labels(pairs)
    config = TrainerConfig(max_epochs=2, batch_size=16, val_fraction=0.25, shift_pad=2)

    def fit(augment: str) -> RewardNet:
        net = conv_net()
        RewardTrainer(net, config.replace(augment=augment)).fit(pairs, labels)
        return net

    same = [fit("shift"), fit("shift"), fit("none")]
    assert all(torch.equal(a, b) for a, b in zip(same[0].parameters(), same[1].parameters(), strict=True))
    assert not all(torch.equal(a, b) for a, b in
                   zip(same[0].parameters(), same[2].parameters(), strict=True))
    calls: list[tuple[int, ...]] = []

    def spy(batch: dict[str, torch.Tensor], pad: int, generator: torch.Generator | None,
            channels_first: bool) -> dict[str, torch.Tensor]:
        calls.append(tuple(batch["obs"].shape))
        return shift_observations(batch, pad, generator, channels_first)

    monkeypatch.setattr(trainer_module, "shift_observations", spy)
    trainer = RewardTrainer(conv_net(), config.replace(augment="shift"))
    report = trainer.fit(pairs, labels)
    assert len(calls) == report.steps and all(shape[1:] == (2, 4, 9, 16, 16) for shape in calls)
    trainer.evaluate(pairs, labels)
    obs = _images(n=3).numpy()
    TorchRewardFn(trainer.model)(obs, np.zeros((3, 2)), obs, np.zeros(3))
    assert len(calls) == report.steps  # validation, evaluation and rewards: never shifted


def test_augment_settings_are_checked() -> None:
    vector = RewardNet(RewardNetSpec("mlp", (4,), (2,), hidden=(8,)), seed=0)
    assert RewardTrainer(vector).shift_pad is None  # auto: vector nets are left alone
    with pytest.raises(InvalidDataError, match="augment='shift' needs a CNN"):
        RewardTrainer(vector, TrainerConfig(augment="shift"))
    assert RewardTrainer(conv_net(), TrainerConfig(augment="none")).shift_pad is None
    assert RewardTrainer(conv_net(), TrainerConfig(shift_pad=5)).shift_pad == 5
    assert default_pad(84, 84) == 4 and default_pad(64, 64) == 3 and default_pad(6, 6) == 0


# --- the convolutional AIL discriminator -----------------------------------------------------

DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]


def patch_frames(rng: np.random.Generator, n: int, corner: int) -> np.ndarray:
    """``n`` stacks ``(9, 16, 16)`` of dim noise with a bright 5x5 patch in the newest frame, at
    the top left (``corner`` 0: the expert's) or the bottom right (1: the agent's)."""
    stacks = rng.integers(0, 80, size=(n, 9, 16, 16), dtype=np.uint8)
    at = slice(2, 7) if corner == 0 else slice(9, 14)
    stacks[:, -3:, at, at] = 230
    return stacks


def frame_transitions(rng: np.random.Generator, n: int, corner: int) -> Transitions:
    obs = patch_frames(rng, n, corner)
    return Transitions(obs, rng.uniform(-1, 1, (n, 2)).astype(np.float32), obs, np.zeros(n, bool))


def pixel_venv() -> DummyVecEnv:
    venv = DummyVecEnv([lambda: make_pixel_env("rlkit/PixelPointMass-v0", 3, size=16,
                                               max_episode_steps=20)])
    venv.seed(0)
    return venv


def synthetic_demos(rng: np.random.Generator, n: int = 3) -> list[Trajectory]:
    return [Trajectory(patch_frames(rng, 21, 0), rng.uniform(-1, 1, (20, 2)).astype(np.float32),
                       np.zeros(20, np.float32)) for _ in range(n)]


@pytest.mark.parametrize("device", DEVICES)
def test_cnn_discriminator_separates_expert_from_agent_frames(device: str) -> None:
    """The trainer's own discriminator step (random shifts, gradient penalty on the pixels) on
    frame stacks: a few dozen steps tell the expert's frames from the agent's."""
    rng = np.random.default_rng(0)
    config = AILConfig(rounds=1, steps_per_round=32, device=device, discriminator=DiscriminatorConfig(
        state_only=True, hidden=(32,), lr=3e-3, batch_size=32, updates_per_round=40,
        grad_penalty=1.0))
    trainer = AILTrainer(config, pixel_venv(), synthetic_demos(rng), "ppo", {"n_steps": 32})
    disc = trainer.discriminator
    assert disc.reward_net.spec.kind == "cnn" and disc.reward_net.spec.channels_first
    assert disc.shift_pad == 1  # auto on 16 x 16
    assert {p.device.type for p in disc.parameters()} == {torch.device(device).type}
    metrics = trainer.update_discriminator(frame_transitions(rng, 200, 1))
    assert metrics["grad_penalty"] > 0 and metrics["accuracy"] > 0.5
    expert, agent = frame_transitions(rng, 300, 0), frame_transitions(rng, 300, 1)
    r_expert = disc.generator_reward(expert.obs, expert.acts, expert.next_obs, expert.dones)
    r_agent = disc.generator_reward(agent.obs, agent.acts, agent.next_obs, agent.dones)
    accuracy = ((r_expert > np.log(2)).mean() + (r_agent < np.log(2)).mean()) / 2
    assert accuracy > 0.9, accuracy


def test_discriminator_steps_are_shifted_from_the_trainer_rng_and_rewards_never(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    config = AILConfig(rounds=1, steps_per_round=32, discriminator=DiscriminatorConfig(
        hidden=(8,), batch_size=8, updates_per_round=3, shift_pad=2))
    calls: list[int] = []

    def spy(batch: dict[str, torch.Tensor], pad: int, generator: torch.Generator | None,
            channels_first: bool) -> dict[str, torch.Tensor]:
        calls.append(pad)
        return shift_observations(batch, pad, generator, channels_first)

    monkeypatch.setattr(discriminator_module, "shift_observations", spy)
    trainer = AILTrainer(config, pixel_venv(), synthetic_demos(rng), "ppo", {"n_steps": 32})
    agent = frame_transitions(rng, 50, 1)
    state = trainer.torch_rng.get_state()
    trainer.update_discriminator(agent)
    assert calls == [2] * 6  # expert and agent batch of each of the 3 steps
    assert not torch.equal(trainer.torch_rng.get_state(), state)
    trainer._reward(agent)
    assert len(calls) == 6
    plain = AILTrainer(config.replace(discriminator=config.discriminator.replace(augment="none")),
                       pixel_venv(), synthetic_demos(np.random.default_rng(1)), "ppo",
                       {"n_steps": 32})
    assert plain.discriminator.shift_pad is None
    with pytest.raises(InvalidDataError, match="augment='shift' needs image observations"):
        build_discriminator(DiscriminatorConfig(augment="shift"), ACTIONS, ACTIONS)


def test_generator_reward_in_chunks_matches_one_forward() -> None:
    disc = build_discriminator(DiscriminatorConfig(hidden=(8,)), STACK, ACTIONS, seed=0)
    batch = frame_transitions(np.random.default_rng(2), 1100, 0)  # over INFERENCE_ROWS
    rewards = disc.generator_reward(batch.obs, batch.acts, batch.next_obs, batch.dones)
    assert rewards.shape == (1100,) and rewards.dtype == np.float32
    tensors = numpy_to_tensors(disc.reward_net, batch.obs, batch.acts, batch.next_obs, batch.dones)
    with torch.no_grad():
        whole = disc.score(dict(zip(("obs", "acts", "next_obs", "dones"), tensors, strict=True)))
    np.testing.assert_allclose(rewards, F.softplus(whole).numpy(), rtol=1e-5, atol=1e-6)


def test_gradient_penalty_differentiates_pixels_in_unit_intensity() -> None:
    """A score linear in the pixels: its gradient per unit of intensity (pixels / 255) is the
    weight vector, whatever the uint8 inputs, so the penalty is (|w| - 1)^2."""
    weights = torch.full((9 * 16 * 16,), 0.5 / 48)  # |w| = 0.5
    expert = {"obs": _images(n=4), "dones": torch.zeros(4)}
    agent = {"obs": _images(n=4, seed=1), "dones": torch.zeros(4)}

    def score(batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return (batch["obs"].float().reshape(4, -1) / 255.0) @ weights

    penalty = gradient_penalty(score, expert, agent, torch.Generator().manual_seed(0))
    assert penalty.item() == pytest.approx(0.25, rel=1e-4)


def test_pixel_ail_round_runs_end_to_end() -> None:
    rng = np.random.default_rng(3)
    config = AILConfig(rounds=1, steps_per_round=32, device="cpu",
                       discriminator=DiscriminatorConfig(hidden=(8,), batch_size=16,
                                                         updates_per_round=2, grad_penalty=1.0))
    trainer = AILTrainer(config, pixel_venv(), synthetic_demos(rng), "ppo",
                         {"n_steps": 32, "batch_size": 16, "n_epochs": 1})
    (record,) = trainer.train()
    assert record.timesteps == 32 and np.isfinite(record.expert_reward)
    assert {"loss", "accuracy", "grad_penalty"} <= set(record.disc)

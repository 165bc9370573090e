"""The pixel generator: DrQSAC (rlkit.factories.pixel_sac) built by rlkit.ail.make_generator."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from stable_baselines3 import SAC
from stable_baselines3.common.vec_env import DummyVecEnv

from envs.pixels import KEYPOINT_COLOURS, make_pixel_env
from rlkit.ail import AILConfig, AILTrainer, DiscriminatorConfig, make_generator, policy_log_prob
from rlkit.errors import InvalidDataError
from rlkit.factories import pixel_sac
from rlkit.factories.keypoints import ColourKeypoints
from rlkit.factories.pixel_sac import DrQCnnPolicy, DrQSAC
from rlkit.persistence.agents import load_agent, save_agent

SIZE = 16  # (9, 16, 16) stacks; two convs of strides (2, 1) fit them
SMALL: dict[str, Any] = {
    "batch_size": 8, "learning_starts": 0, "buffer_size": 500,
    "policy_kwargs": {"net_arch": [16], "features_extractor_kwargs": {"channels": 4, "strides": [2, 1],
                                                                       "features_dim": 8}},
}


def pixel_venv() -> DummyVecEnv:
    return DummyVecEnv([lambda: make_pixel_env("rlkit/PixelPointMass-v0", 3, size=SIZE)])


def trained(steps: int = 40, **kwargs: Any) -> DrQSAC:
    generator = make_generator("sac", pixel_venv(), steps, seed=0, kwargs={**SMALL, **kwargs})
    assert isinstance(generator, DrQSAC)
    generator.learn(steps)
    return generator


def encoder_params(generator: DrQSAC) -> list[torch.Tensor]:
    return list(generator.critic.features_extractor.parameters())


def test_sac_on_images_is_drqsac_with_one_encoder_owned_by_the_critic() -> None:
    generator = make_generator("sac", pixel_venv(), 64, seed=0, kwargs=SMALL)
    assert type(generator) is DrQSAC and isinstance(generator.policy, DrQCnnPolicy)
    encoder = generator.critic.features_extractor
    assert generator.actor.features_extractor is encoder
    assert generator.critic_target.features_extractor is not encoder
    ids = {id(p) for p in encoder.parameters()}
    actor_ids = {id(p) for group in generator.actor.optimizer.param_groups for p in group["params"]}
    critic_ids = {id(p) for group in generator.critic.optimizer.param_groups for p in group["params"]}
    assert ids <= critic_ids and not ids & actor_ids


def test_vector_sac_stays_sb3_sac_and_drqsac_needs_images() -> None:
    import gymnasium

    venv = DummyVecEnv([lambda: gymnasium.make("Pendulum-v1")])
    assert type(make_generator("sac", venv, 64, seed=0)) is SAC
    with pytest.raises(InvalidDataError, match="image observations"):
        make_generator("drqsac", venv, 64, seed=0)


@pytest.mark.parametrize(("policy_kwargs", "message"), [
    ({"features_extractor_kwargs": {"strides": [2, 2, 2, 2]}}, "too small"),
    ({"features_extractor_kwargs": {"width": 8}}, r"\['width'\] are not settings of the 'conv' encoder"),
    ({"encoder": "keypoints", "features_extractor_kwargs": {"channels": 4}},
     r"\['channels'\] are not settings of the 'keypoints' encoder"),
    ({"encoder": "resnet"}, "encoder must be one of"),
    ({"share_features_extractor": True}, "share_features_extractor itself"),
])
def test_bad_encoder_settings_are_refused_by_name(policy_kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidDataError, match=message):
        make_generator("sac", pixel_venv(), 64, seed=0,
                       kwargs={**SMALL, "augment_pad": 0, "policy_kwargs": policy_kwargs})


@pytest.mark.parametrize("pad", [4, 0])
def test_sampled_batches_are_shifted_obs_and_next_obs(monkeypatch: pytest.MonkeyPatch, pad: int) -> None:
    generator = trained(augment_pad=pad, learning_starts=1000)  # no updates while collecting
    calls: list[tuple[tuple[int, ...], torch.dtype, int]] = []

    def spy(images: torch.Tensor, shift: int = 4, generator: torch.Generator | None = None) -> torch.Tensor:
        calls.append((tuple(images.shape), images.dtype, shift))
        return torch.zeros_like(images)  # the update must read what the augmentation returns

    monkeypatch.setattr(pixel_sac, "random_shift", spy)
    seen: list[torch.Tensor] = []
    extract = generator.critic.extract_features

    def record(obs: torch.Tensor, extractor: torch.nn.Module) -> torch.Tensor:
        seen.append(obs)
        return extract(obs, extractor)  # type: ignore[arg-type]

    monkeypatch.setattr(generator.critic, "extract_features", record)
    generator.train(gradient_steps=2, batch_size=8)
    if pad == 0:
        assert calls == [] and seen[0].any()
    else:
        assert calls == [((8, 9, SIZE, SIZE), torch.uint8, pad)] * 4  # obs and next_obs, 2 steps
        assert not seen[0].any()


def test_the_encoder_learns_from_the_critic_loss_only(monkeypatch: pytest.MonkeyPatch) -> None:
    generator = trained(learning_starts=1000)
    before = [p.detach().clone() for p in encoder_params(generator)]
    monkeypatch.setattr(generator.critic.optimizer, "step", lambda *args, **kwargs: None)
    generator.train(gradient_steps=3, batch_size=8)
    assert all(torch.equal(a, b) for a, b in zip(before, encoder_params(generator), strict=True))
    monkeypatch.undo()
    actor_before = [p.detach().clone() for p in generator.actor.mu.parameters()]
    generator.train(gradient_steps=3, batch_size=8)
    assert not all(torch.equal(a, b) for a, b in zip(before, encoder_params(generator), strict=True))
    assert not all(torch.equal(a, b) for a, b in
                   zip(actor_before, generator.actor.mu.parameters(), strict=True))


def test_separate_encoders_each_learn_from_their_own_loss() -> None:
    generator = trained(policy_kwargs={**SMALL["policy_kwargs"], "share_encoder": False})
    assert generator.actor.features_extractor is not generator.critic.features_extractor
    actor_encoder = list(generator.actor.features_extractor.parameters())
    before = [p.detach().clone() for p in actor_encoder]
    generator.train(gradient_steps=2, batch_size=8)
    assert not all(torch.equal(a, b) for a, b in zip(before, actor_encoder, strict=True))


def test_save_load_round_trip_acts_identically(tmp_path: Any) -> None:
    generator = trained(augment_pad=2, policy_kwargs={**SMALL["policy_kwargs"], "share_encoder": True})
    obs = np.random.default_rng(0).integers(0, 256, (4, 9, SIZE, SIZE)).astype(np.uint8)
    save_agent(generator, tmp_path / "generator")
    loaded = load_agent({"DrQSAC": DrQSAC}, tmp_path / "generator", env=pixel_venv())
    assert isinstance(loaded, DrQSAC) and loaded.augment_pad == 2 and loaded.policy.share_encoder
    assert loaded.actor.features_extractor is loaded.critic.features_extractor
    np.testing.assert_array_equal(generator.predict(obs, deterministic=True)[0],
                                  loaded.predict(obs, deterministic=True)[0])
    acts = np.random.default_rng(1).uniform(-1, 1, (4, 2)).astype(np.float32)
    torch.testing.assert_close(policy_log_prob(generator, obs, acts), policy_log_prob(loaded, obs, acts))
    loaded.learn(10)  # it goes on training


def test_policy_log_prob_on_image_obs() -> None:
    generator = trained(steps=10, learning_starts=1000)
    obs = np.random.default_rng(0).integers(0, 256, (5, 9, SIZE, SIZE)).astype(np.uint8)
    log_prob = policy_log_prob(generator, obs, np.zeros((5, 2), np.float32))
    assert log_prob.shape == (5,) and torch.isfinite(log_prob).all()


@pytest.mark.parametrize("loss", ["gail", "airl"])
def test_tiny_ail_run_from_pixels(loss: str) -> None:
    from rlkit.ail import demos_from_policy

    venv = pixel_venv()
    demos = demos_from_policy(venv, lambda obs: np.zeros((len(obs), 2), np.float32), 1,
                              np.random.default_rng(0), seed=0)
    config = AILConfig(rounds=2, steps_per_round=64, seed=0,
                       discriminator=DiscriminatorConfig(loss=loss, hidden=(8,), batch_size=16,
                                                         updates_per_round=2))
    trainer = AILTrainer(config, venv, demos, "sac", generator_kwargs={**SMALL, "learning_starts": 32})
    records = trainer.train()
    assert isinstance(trainer.generator, DrQSAC) and trainer.generator.num_timesteps == 128
    assert trainer.generator._n_updates > 0
    assert [r.round for r in records] == [0, 1] and all(np.isfinite(r.agent_reward) for r in records)


def test_ail_checkpoints_of_a_pixel_generator_load_and_resume(tmp_path: Any) -> None:
    from rlkit.ail import CheckpointStore, demos_from_policy

    venv = pixel_venv()
    demos = demos_from_policy(venv, lambda obs: np.zeros((len(obs), 2), np.float32), 1,
                              np.random.default_rng(0), seed=0)
    config = AILConfig(rounds=2, steps_per_round=32, seed=0,
                       discriminator=DiscriminatorConfig(hidden=(8,), batch_size=16))
    kwargs = {**SMALL, "learning_starts": 16}
    store = CheckpointStore(tmp_path / "ail")
    trainer = AILTrainer(config, venv, demos, "sac", generator_kwargs=kwargs, checkpoints=store)
    trainer.train()
    obs = np.random.default_rng(0).integers(0, 256, (4, 9, SIZE, SIZE)).astype(np.uint8)
    loaded = store.load(1).generator
    assert isinstance(loaded, DrQSAC)
    np.testing.assert_array_equal(trainer.generator.predict(obs, deterministic=True)[0],
                                  loaded.predict(obs, deterministic=True)[0])
    resumed = AILTrainer(config.model_copy(update={"rounds": 3}), pixel_venv(), demos, "sac",
                         generator_kwargs=kwargs, checkpoints=store)
    assert resumed.resume() == 1
    assert isinstance(resumed.generator, DrQSAC) and resumed.generator.replay_buffer is not None
    assert resumed.generator.replay_buffer.size() == 64
    resumed.train()
    assert resumed.generator.num_timesteps == 96
    unbroken = AILTrainer(config.model_copy(update={"rounds": 3}), pixel_venv(), demos, "sac",
                          generator_kwargs=kwargs, checkpoints=CheckpointStore(tmp_path / "unbroken"))
    assert unbroken.train() == resumed.records  # mid-episode, augmentation RNG and all: bit-identical
    for name, value in unbroken.generator.policy.state_dict().items():
        assert torch.equal(resumed.generator.policy.state_dict()[name], value), name


def test_a_drqsac_run_killed_mid_episode_resumes_bit_identical(tmp_path: Any) -> None:
    """The augmentation's own RNG is kept in the resume point with the episode in progress."""
    from rlkit.factories.resumable import ResumableTraining

    def sitting(directory: Any, kill_at: int | None = None) -> DrQSAC:
        generator = make_generator("sac", pixel_venv(), 40, seed=0,
                                   kwargs={**SMALL, "learning_starts": 10, "augment_pad": 2})
        assert isinstance(generator, DrQSAC)
        training = ResumableTraining(directory, 120, 40)
        training.resume(generator)

        class Killed(Exception):
            pass

        def kill(locals_: dict[str, Any], _: Any) -> bool:
            if kill_at is not None and generator.num_timesteps >= kill_at:
                raise Killed
            return True

        from stable_baselines3.common.callbacks import ConvertCallback

        try:
            training.train(generator, ConvertCallback(kill))
        except Killed:
            pass
        return generator

    whole = sitting(tmp_path / "whole")
    sitting(tmp_path / "killed", kill_at=100)  # points at 40 and 80, in 200-step episodes
    resumed = sitting(tmp_path / "killed")
    assert resumed.num_timesteps == whole.num_timesteps == 120
    for name, value in whole.policy.state_dict().items():
        assert torch.equal(resumed.policy.state_dict()[name], value), name


# --- the fixed keypoint encoder ----------------------------------------------------------------

KEYPOINTS: dict[str, Any] = {
    **SMALL, "augment_pad": 0,
    "policy_kwargs": {"net_arch": [16], "encoder": "keypoints",
                      "features_extractor_kwargs": {"colours": KEYPOINT_COLOURS["rlkit/PixelPointMass-v0"]}},
}


def test_keypoints_are_where_the_env_put_its_objects() -> None:
    env = make_pixel_env("rlkit/PixelPointMass-v0", 3, size=32)
    obs, info = env.reset(seed=3)
    states = [info["state"]]
    for action in ([1.0, 1.0], [1.0, -1.0]):
        obs, _, _, _, info = env.step(np.array(action, np.float32))
        states.append(info["state"])
    encoder = ColourKeypoints(env.observation_space, KEYPOINT_COLOURS["rlkit/PixelPointMass-v0"])
    features = encoder(torch.as_tensor(obs[None]).float() / 255).reshape(3, 2, 3).numpy()
    half_pixel = 2.2 / 32 / 2  # the frame spans [-1.1, 1.1]: a centroid is within a pixel
    for frame, state in zip(features, states, strict=True):
        mass, target = frame
        np.testing.assert_allclose(mass[:2] * 1.1, state[0:2], atol=2 * half_pixel)
        np.testing.assert_allclose(target[:2] * 1.1, state[4:6], atol=2 * half_pixel)
        assert mass[2] == target[2] == 1.0
    assert not np.allclose(features[0, 0, :2], features[2, 0, :2])  # the mass moved


def test_a_colour_not_in_the_frame_is_absent_at_zero() -> None:
    env = make_pixel_env("rlkit/PixelPendulum-v0", 2, size=16)
    obs, _ = env.reset(seed=0)
    encoder = ColourKeypoints(env.observation_space, [[1, 2, 3], *KEYPOINT_COLOURS["rlkit/PixelPendulum-v0"]])
    features = encoder(torch.as_tensor(obs[None]).float() / 255).reshape(2, 2, 3)
    assert features[:, 0].eq(0).all() and features[:, 1, 2].eq(1).all()


@pytest.mark.parametrize(("colours", "message"), [([], "non-empty"), ([[0, 0]], r"\[r, g, b\]"),
                                                  ([[0, 0, 300]], "0-255")])
def test_bad_colours_are_refused(colours: Any, message: str) -> None:
    with pytest.raises(InvalidDataError, match=message):
        ColourKeypoints(pixel_venv().observation_space, colours)


def test_drqsac_on_keypoints_trains_its_mlps_and_round_trips(tmp_path: Any) -> None:
    generator = make_generator("sac", pixel_venv(), 40, seed=0, kwargs=KEYPOINTS)
    assert isinstance(generator, DrQSAC) and isinstance(generator.critic.features_extractor, ColourKeypoints)
    assert generator.critic.features_extractor.features_dim == 3 * 2 * 3
    before = [p.detach().clone() for p in generator.actor.mu.parameters()]
    generator.learn(40)
    assert not all(torch.equal(a, b) for a, b in zip(before, generator.actor.mu.parameters(), strict=True))
    save_agent(generator, tmp_path / "generator")
    loaded = load_agent({"DrQSAC": DrQSAC}, tmp_path / "generator", env=pixel_venv())
    assert loaded.policy.encoder == "keypoints"
    obs = np.stack([pixel_venv().reset()[0] for _ in range(2)])
    np.testing.assert_array_equal(generator.predict(obs, deterministic=True)[0],
                                  loaded.predict(obs, deterministic=True)[0])


def test_keypoints_refuse_augmentation() -> None:
    with pytest.raises(InvalidDataError, match="augment_pad=4 with the keypoints encoder"):
        make_generator("sac", pixel_venv(), 40, seed=0, kwargs={**KEYPOINTS, "augment_pad": 4})

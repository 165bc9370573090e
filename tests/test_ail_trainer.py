"""Short AIL runs with PPO and SAC generators on a tiny env: learning, relabelling, checkpoints."""

from __future__ import annotations

import shutil
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3.common.vec_env import DummyVecEnv

from rlkit.ail import (
    AILConfig,
    AILTrainer,
    CheckpointStore,
    DiscriminatorConfig,
    demos_from_policy,
    load_demos,
    policy_log_prob,
    save_demos,
)
from rlkit.ail import checkpoints as checkpoints_module
from rlkit.ail.discriminator import build_discriminator
from rlkit.errors import ConfigError, FileFormatError, InvalidDataError
from tests.small_tasks import expert, venv


@pytest.fixture(scope="module")
def demos():
    return demos_from_policy(venv(), expert, 10, np.random.default_rng(0))


def random_return(n: int = 20) -> float:
    trajectories = demos_from_policy(venv(1), None, n, np.random.default_rng(1))  # type: ignore[arg-type]
    return float(np.mean([t.ret for t in trajectories]))


def test_gail_with_ppo_beats_random_and_checkpoints_load_back_identically(demos, tmp_path):
    seen: list[int] = []
    store = CheckpointStore(tmp_path / "ckpt", every=4)
    config = AILConfig(rounds=8, steps_per_round=256, discriminator=DiscriminatorConfig(
        hidden=(32, 32), batch_size=256, updates_per_round=30, lr=3e-3))
    trainer = AILTrainer(config, venv(), demos, "ppo", {
        "n_epochs": 10, "learning_rate": 3e-3, "policy_kwargs": {"net_arch": [32, 32]}},
        checkpoints=store, callbacks=[lambda record, _: seen.append(record.round)])
    records = trainer.train()
    assert seen == list(range(8)) and records[-1].timesteps == 8 * 256
    returns = [r.true_return for r in records]
    assert np.mean(returns[-2:]) > random_return() + 3.0, returns
    assert records[-1].disc["accuracy"] > 0.7
    assert records[-1].expert_reward > records[-1].agent_reward
    # checkpoints of rounds 3 and 7; the last one is the trainer's current state
    assert store.rounds() == [3, 7] and store.latest() == 7
    checkpoint = store.load(7)
    assert checkpoint.round == 7 and checkpoint.diagnostics["true_return"] == returns[7]
    obs = np.random.default_rng(0).uniform(-1, 1, (50, 1)).astype(np.float32)
    np.testing.assert_array_equal(checkpoint.generator.predict(obs, deterministic=True)[0],
                                  trainer.generator.predict(obs, deterministic=True)[0])
    acts, dones = expert(obs), np.zeros(50, bool)
    np.testing.assert_array_equal(checkpoint.discriminator.generator_reward(obs, acts, obs, dones),
                                  trainer.discriminator.generator_reward(obs, acts, obs, dones))
    assert store.load(3).generator.num_timesteps == 4 * 256
    with pytest.raises(FileFormatError, match="round_000002"):
        store.load(2)


def test_gail_with_sac_relabels_its_buffer_and_checkpoints(demos, tmp_path):
    store = CheckpointStore(tmp_path)
    config = AILConfig(rounds=2, steps_per_round=150, discriminator=DiscriminatorConfig(
        hidden=(16,), grad_penalty=1.0, updates_per_round=3, gail_reward="logit"))
    trainer = AILTrainer(config, venv(), demos, "sac", {
        "learning_starts": 100, "batch_size": 64, "policy_kwargs": {"net_arch": [16]}},
        checkpoints=store)
    records = trainer.train()
    assert "grad_penalty" in records[0].disc and records[1].timesteps == 300
    # the replay buffer holds the current discriminator's reward of the (unscaled) env actions
    buffer, policy = trainer.generator.replay_buffer, trainer.generator.policy
    n = buffer.pos * buffer.n_envs
    obs = buffer.observations[: buffer.pos].reshape(n, 1)
    acts = policy.unscale_action(buffer.actions[: buffer.pos].reshape(n, 1))
    expected = trainer.discriminator.generator_reward(
        obs, acts, buffer.next_observations[: buffer.pos].reshape(n, 1), np.zeros(n, bool))
    np.testing.assert_allclose(buffer.rewards[: buffer.pos].reshape(-1), expected, rtol=1e-5)
    loaded = store.load(1)
    np.testing.assert_array_equal(loaded.generator.predict(obs, deterministic=True)[0],
                                  trainer.generator.predict(obs, deterministic=True)[0])
    assert store.rounds() == [0, 1]


def test_interrupted_checkpoint_write_leaves_nothing_half_written(demos, tmp_path, monkeypatch):
    config = AILConfig(rounds=1, steps_per_round=64, discriminator=DiscriminatorConfig(
        loss="airl", state_only=True, hidden=(16,)))
    trainer = AILTrainer(config, venv(), demos, "ppo")
    trainer.train()
    store = CheckpointStore(tmp_path)
    store.save(0, trainer.generator, trainer.discriminator, {"note": "first"})

    def crash(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt("killed mid-write")

    monkeypatch.setattr(checkpoints_module, "save_reward_model", crash)
    for round_index in (0, 1):  # overwriting an existing round, and writing a new one
        with pytest.raises(KeyboardInterrupt):
            store.save(round_index, trainer.generator, trainer.discriminator, {"note": "second"})
    assert store.rounds() == [0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["round_000000"]
    assert store.load(0).diagnostics == {"note": "first"}


def test_airl_and_maxent_run_with_sac(demos):
    for disc in (DiscriminatorConfig(loss="airl", hidden=(16,), updates_per_round=20, lr=1e-2),
                 DiscriminatorConfig(loss="maxent", state_only=True, reward_clip=10.0,
                                     weight_decay=1e-3, hidden=(16,), updates_per_round=20,
                                     lr=1e-2)):
        config = AILConfig(rounds=1, steps_per_round=120, discriminator=disc)
        env = venv()
        trainer = AILTrainer(config, env, demos, "sac",
                             {"learning_starts": 100, "policy_kwargs": {"net_arch": [16]}})
        record = trainer.train()[0]
        assert np.isfinite(record.disc["loss"]) and np.isfinite(record.agent_reward)
        assert ("accuracy" if disc.loss == "airl" else "reward_gap") in record.disc
        assert (trainer.discriminator.shaping_net is not None) == (disc.loss == "airl")
        # on fresh demo and generator transitions the trained discriminator beats its own start
        rng = np.random.default_rng(3)
        expert_batch = trainer.expert.sample(rng, 512)
        agent_batch = trainer.agent.transitions().sample(rng, 512)
        log_pis = ([policy_log_prob(trainer.generator, b.obs, b.acts)
                    for b in (expert_batch, agent_batch)] if disc.loss == "airl" else [])
        untrained = build_discriminator(disc, env.observation_space, env.action_space,
                                        seed=config.seed)
        (start, _), (loss, metrics) = (
            d.loss(expert_batch.to_torch("cpu"), agent_batch.to_torch("cpu"), *log_pis)
            for d in (untrained, trainer.discriminator))
        assert loss.item() < start.item() - 0.2, disc.loss
        if disc.loss == "airl":  # ~0.53 untrained
            assert metrics["accuracy"] > 0.7
        else:  # the max-ent reward rose on the demos against the generator's (~0.04 untrained)
            assert metrics["reward_gap"] > 0.2
        assert record.expert_reward > record.agent_reward


def test_sac_log_prob_matches_sb3(demos):
    trainer = AILTrainer(AILConfig(rounds=1, steps_per_round=10), venv(), demos, "sac")
    obs = np.random.default_rng(0).uniform(-1, 1, (32, 1)).astype(np.float32)
    obs_tensor, _ = trainer.generator.policy.obs_to_tensor(obs)
    scaled, log_prob = trainer.generator.actor.action_log_prob(obs_tensor)
    acts = trainer.generator.policy.unscale_action(scaled.detach().numpy())
    np.testing.assert_allclose(policy_log_prob(trainer.generator, obs, acts).numpy(),
                               log_prob.detach().numpy(), rtol=1e-3, atol=1e-3)


def test_demos_round_trip_and_bad_demos_fail_early(demos, tmp_path):
    path = save_demos(demos, tmp_path / "demos")
    loaded = load_demos(path)
    assert len(loaded) == len(demos)
    np.testing.assert_array_equal(loaded[0].obs, demos[0].obs)
    config = AILConfig(rounds=1, steps_per_round=10)
    with pytest.raises(InvalidDataError, match="demos is empty"):
        AILTrainer(config, venv(), [], "ppo")
    pendulum = DummyVecEnv([lambda: gym.make("Pendulum-v1")])
    with pytest.raises(InvalidDataError, match=r"demos\[0\].obs"):
        AILTrainer(config, pendulum, demos, "ppo")
    with pytest.raises(InvalidDataError, match="AILConfig.rounds"):
        AILConfig(rounds=0, steps_per_round=10)


def test_an_interrupted_run_resumes_from_its_last_checkpoint(demos, tmp_path):
    disc = DiscriminatorConfig(loss="maxent", state_only=True, hidden=(16,))
    config = AILConfig(rounds=4, steps_per_round=120, discriminator=disc)
    sac = {"learning_starts": 50, "policy_kwargs": {"net_arch": [16]}}
    first = AILTrainer(config, venv(), demos, "sac", sac, checkpoints=CheckpointStore(tmp_path))
    assert first.resume() is None  # nothing saved yet: a fresh start
    first.run_round()
    first.run_round()  # ... and the process is killed here

    again = AILTrainer(config, venv(1), demos, "sac", sac, checkpoints=CheckpointStore(tmp_path))
    assert again.resume() == 1 and again.round == 2
    for name, value in first.discriminator.state_dict().items():
        torch.testing.assert_close(again.discriminator.state_dict()[name], value)
    adam_steps = [t.optimizer.state_dict()["state"][0]["step"] for t in (first, again)]
    assert adam_steps[0] == adam_steps[1] > 0
    assert again.rng.bit_generator.state == first.rng.bit_generator.state
    assert again.generator.num_timesteps == 240
    filled = first.generator.replay_buffer.pos
    assert again.generator.replay_buffer.pos == filled
    np.testing.assert_array_equal(again.generator.replay_buffer.rewards[:filled],
                                  first.generator.replay_buffer.rewards[:filled])
    obs = np.linspace(-1, 1, 9, dtype=np.float32)[:, None]
    np.testing.assert_array_equal(again.generator.predict(obs, deterministic=True)[0],
                                  first.generator.predict(obs, deterministic=True)[0])
    records = again.train()
    assert [r.round for r in records] == [0, 1, 2, 3] and records[-1].timesteps == 480
    assert CheckpointStore(tmp_path).rounds() == [0, 1, 2, 3]


def parameters(trainer: AILTrainer) -> dict[str, torch.Tensor]:
    return {**{f"generator.{k}": v for k, v in trainer.generator.policy.state_dict().items()},
            **{f"discriminator.{k}": v for k, v in trainer.discriminator.state_dict().items()}}


@pytest.mark.parametrize("lost_last_resume_folder", [False, True])
def test_a_run_killed_mid_episode_resumes_bit_identical(demos, tmp_path, lost_last_resume_folder):
    """Rounds of 55 steps per env end part way through Point's 20-step episodes; killed after
    round 1 (or after writing round 1's checkpoint, before its resume/ folder), the run goes on
    to the same records, networks and replay buffer as one never stopped."""
    disc = DiscriminatorConfig(loss="maxent", state_only=True, hidden=(16,))
    config = AILConfig(rounds=4, steps_per_round=110, discriminator=disc)
    sac = {"learning_starts": 50, "policy_kwargs": {"net_arch": [16]}}
    whole = AILTrainer(config, venv(), demos, "sac", sac, checkpoints=CheckpointStore(tmp_path / "whole"))
    whole_records = whole.train()
    first = AILTrainer(config, venv(), demos, "sac", sac, checkpoints=CheckpointStore(tmp_path / "killed"))
    first.run_round()
    if lost_last_resume_folder:
        shutil.copytree(tmp_path / "killed" / "resume", tmp_path / "resume-0")
    first.run_round()  # ... and the process is killed here
    if lost_last_resume_folder:
        shutil.rmtree(tmp_path / "killed" / "resume")
        (tmp_path / "resume-0").rename(tmp_path / "killed" / "resume")

    again = AILTrainer(config, venv(), demos, "sac", sac, checkpoints=CheckpointStore(tmp_path / "killed"))
    assert again.resume() == (0 if lost_last_resume_folder else 1)
    records = again.train()
    assert records == whole_records  # every diagnostic, true returns of the cut episodes included
    assert [r.n_episodes for r in records] == [4, 6, 6, 6]
    mine, theirs = parameters(again), parameters(whole)
    for name, value in theirs.items():
        assert torch.equal(mine[name], value), name
    np.testing.assert_array_equal(again.generator.replay_buffer.observations,
                                  whole.generator.replay_buffer.observations)


def test_a_damaged_or_foreign_resume_folder_is_refused_by_name(demos, tmp_path):
    """resume/ is a run-state point: a file of it missing, a folder without its point.json (an
    older rlkit's) or a point of another config is refused naming it; without resume/ at all the
    run resumes from the latest checkpoint with a new episode."""
    config = AILConfig(rounds=3, steps_per_round=110, discriminator=DiscriminatorConfig(hidden=(16,)))
    sac = {"learning_starts": 50, "policy_kwargs": {"net_arch": [16]}}
    first = AILTrainer(config, venv(), demos, "sac", sac, checkpoints=CheckpointStore(tmp_path))
    first.run_round()
    first.run_round()
    resume_dir = tmp_path / "resume"
    episode = (resume_dir / "episode.npz").read_bytes()
    (resume_dir / "episode.npz").unlink()
    again = AILTrainer(config, venv(), demos, "sac", sac, checkpoints=CheckpointStore(tmp_path))
    with pytest.raises(FileFormatError, match=r"resume/episode.npz: missing \(listed in point.json\)"):
        again.resume()
    (resume_dir / "episode.npz").write_bytes(episode)
    other = config.replace(steps_per_round=55)
    with pytest.raises(ConfigError, match=r"resume/point.json holds a resumable run .*ail.steps_per_round"):
        AILTrainer(other, venv(), demos, "sac", sac, checkpoints=CheckpointStore(tmp_path)).resume()
    point = (resume_dir / "point.json").read_bytes()
    (resume_dir / "point.json").unlink()
    with pytest.raises(FileFormatError, match=r"resume/point.json: missing \(not an AIL resume point"):
        again.resume()
    (resume_dir / "point.json").write_bytes(point)
    shutil.rmtree(resume_dir)
    assert again.resume() == 1 and again.generator._last_obs is None  # a new episode
    assert [r.round for r in again.train()] == [0, 1, 2]


def test_resume_names_a_damaged_trainer_state(demos, tmp_path):
    config = AILConfig(rounds=1, steps_per_round=64, discriminator=DiscriminatorConfig(hidden=(16,)))
    AILTrainer(config, venv(), demos, "ppo", checkpoints=CheckpointStore(tmp_path)).train()
    (tmp_path / "round_000000" / "trainer_state.pt").write_bytes(b"not a torch file")
    trainer = AILTrainer(config, venv(), demos, "ppo", checkpoints=CheckpointStore(tmp_path))
    with pytest.raises(FileFormatError, match="trainer_state.pt: damaged"):
        trainer.resume()

"""The online preference-RL loop with PPO and with SAC (replay buffer relabelled)."""

import numpy as np
import pytest

from rlkit.config import load_config
from rlkit.data import SegmentPairs, TrajectoryStore, collect_trajectories, sample_pairs
from rlkit.factories.builders import build_reward_model, make_venv
from rlkit.factories.configs import PrefRLConfig
from rlkit.prefrl import PreferenceRL
from rlkit.reward.metrics import evaluate_reward
from rlkit.wrappers import relabel_replay_buffer


def small_config(algo: str, **extra: str) -> PrefRLConfig:
    kwargs = ("{n_steps: 64, batch_size: 64, n_epochs: 2}" if algo == "ppo"
              else "{learning_starts: 100, batch_size: 64, buffer_size: 5000}")
    overrides = [
        "env.id=Pendulum-v1", "env.n_envs=2", f"agent.algo={algo}", f"agent.kwargs={kwargs}",
        "agent.total_timesteps=600", "query.every_steps=200", "query.initial_pairs=40",
        "query.pairs_per_round=20", "query.segment_length=10", "model.hidden=[32, 32]",
        "trainer.max_epochs=3", *(f"{k}={v}" for k, v in extra.items()),
    ]
    return load_config(PrefRLConfig, None, overrides)


def truthful_labels(pairs: SegmentPairs) -> np.ndarray:
    """1 where the left segment has the higher true return, else 0."""
    left, right = pairs.gather()
    return (left.returns() > right.returns()).astype(np.float32)


def held_out_pairs(config: PrefRLConfig) -> SegmentPairs:
    """Pairs from random-policy episodes the loop never saw (its env, another seed)."""
    venv = make_venv(config.env)
    store = TrajectoryStore()
    store.extend(collect_trajectories(venv, None, np.random.default_rng(7), n_steps=400,
                                      max_length=200, seed=99))
    venv.close()
    return sample_pairs(store, 300, config.query.segment_length, np.random.default_rng(123))


@pytest.mark.parametrize("algo", ["ppo", "sac"])
def test_loop_queries_refits_and_records_experience(algo):
    config = small_config(algo, **{"trainer.max_epochs": "10"})
    loop = PreferenceRL(config)
    result = loop.learn()
    # the refits learned the true reward: on pairs the teacher never saw, labelled by the true
    # return, the model beats the same network unfitted (same seed), which scores ~0.73 (random
    # episodes) and ~0.55 (the agent's own)
    unfitted = build_reward_model(config.model, loop.venv.observation_space,
                                  loop.venv.action_space, config.seed)
    sampled = sample_pairs(loop.store, 300, config.query.segment_length, np.random.default_rng(5))
    for pairs in (held_out_pairs(config), sampled):
        labels = truthful_labels(pairs)
        fitted = evaluate_reward(loop.model, pairs, labels)["accuracy"]
        assert fitted > 0.8
        assert fitted > evaluate_reward(unfitted, pairs, labels)["accuracy"] + 0.1
    # 1 initial round + one every 200 agent steps over 600 steps
    assert len(result.rounds) == 4
    assert len(result.dataset) == 40 + 3 * 20
    assert result.dataset.sources.tolist() == ["SimulatedTeacher"] * len(result.dataset)
    assert np.isfinite(result.dataset.meta["oracle_p"]).all()
    # the agent's own experience was recorded: the store grew past the random seed data
    assert loop.store.n_steps >= 200 + 600 - 2 * 200
    assert result.episodes.true_returns  # Pendulum episodes end at 200 steps
    assert loop.wrapped.num_envs == 2


def test_sac_replay_buffer_carries_the_current_learned_reward():
    loop = PreferenceRL(small_config("sac"))
    loop.learn()
    buffer = loop.agent.replay_buffer
    n = buffer.pos
    before = buffer.rewards[:n].copy()
    # change the model and relabel: stored rewards must follow it exactly
    for parameter in loop.model.parameters():
        parameter.data.add_(0.1)
    reward_fn = loop.reward_fn.reward_fn  # the un-normalised learned reward
    assert relabel_replay_buffer(loop.agent, reward_fn) == n * buffer.n_envs
    obs = buffer.observations[:n].reshape(n * buffer.n_envs, -1)
    # SB3 keeps Box actions scaled to [-1, 1]; the reward is computed on the env's actions
    acts = loop.agent.policy.unscale_action(buffer.actions[:n].reshape(n * buffer.n_envs, -1))
    assert np.abs(acts).max() > 1.0  # Pendulum's torque range is [-2, 2]
    next_obs = buffer.next_observations[:n].reshape(obs.shape)
    expected = reward_fn(obs, acts, next_obs, np.zeros(len(obs), bool))
    np.testing.assert_allclose(buffer.rewards[:n].reshape(-1), expected, rtol=1e-5)
    assert not np.allclose(before, buffer.rewards[:n])


def test_max_pairs_stops_the_queries():
    result = PreferenceRL(small_config("ppo", **{"query.max_pairs": "50"})).learn()
    assert len(result.dataset) == 60  # initial 40, one round of 20 reaches the cap of 50

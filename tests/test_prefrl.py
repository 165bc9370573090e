"""The online preference-RL loop with PPO and with SAC (replay buffer relabelled)."""

import numpy as np
import pytest
from stable_baselines3 import SAC
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from rlkit.data import SegmentPairs, TrajectoryStore, collect_trajectories, sample_pairs
from rlkit.errors import ConfigError
from rlkit.factories.builders import build_reward_model, make_venv
from rlkit.factories.configs import PrefRLConfig
from rlkit.prefrl import PreferenceRL
from rlkit.reward.metrics import evaluate_reward
from rlkit.reward.normalize import NormalizedReward
from rlkit.wrappers import LazyRewardReplayBuffer, relabel_replay_buffer
from tests.fake_data import truthful_labels
from tests.tiny_runs import count_env_steps, small_config


def held_out_pairs(config: PrefRLConfig) -> SegmentPairs:
    """Pairs from random-policy episodes the loop never saw (its env, another seed)."""
    venv = make_venv(config.env)
    store = TrajectoryStore()
    store.extend(collect_trajectories(venv, None, np.random.default_rng(7), n_steps=400,
                                      max_length=200, seed=99))
    venv.close()
    return sample_pairs(store, 300, config.query.segment_length, np.random.default_rng(123))


@pytest.mark.parametrize("algo", ["ppo", "sac"])
def test_loop_queries_refits_and_records_experience(algo: str) -> None:
    config = small_config(algo, **{"trainer.max_epochs": "10", "agent.total_timesteps": "800"})
    loop = PreferenceRL.from_config(config)
    env_steps = count_env_steps(loop.venv)
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
    # the budget is every env step the run takes: 200 random ones for the first query, then the
    # agent's 600; 1 initial round after the random steps + one every 200 steps
    assert env_steps() == loop.agent.num_timesteps == 800
    assert [r.timestep for r in result.rounds] == [200, 400, 600, 800]
    assert len(result.dataset) == 40 + 3 * 20
    assert result.dataset.sources.tolist() == ["SimulatedTeacher"] * len(result.dataset)
    assert np.isfinite(result.dataset.meta["oracle_p"]).all()
    # the agent's own experience was recorded: the store grew past the random seed data
    assert loop.store.n_steps >= 200 + 600 - 2 * 200
    assert isinstance(loop.agent, OffPolicyAlgorithm) == (algo == "sac")
    if isinstance(loop.agent, OffPolicyAlgorithm):  # labelled in batches; SAC's own random
        # start (learning_starts) comes after the loop's random steps
        assert isinstance(loop.agent.replay_buffer, LazyRewardReplayBuffer)
        assert loop.agent.learning_starts == 100 + 200
    assert result.episodes.true_returns  # Pendulum episodes end at 200 steps
    assert loop.wrapped.num_envs == 2


def test_sac_replay_buffer_carries_the_current_learned_reward() -> None:
    loop = PreferenceRL.from_config(small_config("sac"))
    loop.learn()
    agent = loop.agent
    assert isinstance(agent, SAC)
    buffer = agent.replay_buffer
    assert buffer is not None
    n = buffer.pos
    before = buffer.rewards[:n].copy()
    # change the model and relabel: stored rewards must follow it exactly
    for parameter in loop.model.parameters():
        parameter.data.add_(0.1)
    assert isinstance(loop.reward_fn, NormalizedReward)
    reward_fn = loop.reward_fn.reward_fn  # the un-normalised learned reward
    assert isinstance(buffer, LazyRewardReplayBuffer)
    buffer.add(buffer.observations[0], buffer.next_observations[0], buffer.actions[0],  # one more
               buffer.rewards[0], buffer.dones[0], [{}] * buffer.n_envs)  # row waits for its label
    n = buffer.pos
    assert relabel_replay_buffer(agent, reward_fn) == n * buffer.n_envs
    assert buffer.n_waiting == 0  # relabelled: not to be labelled (and normalised) again
    obs = buffer.observations[:n].reshape(n * buffer.n_envs, -1)
    # SB3 keeps Box actions scaled to [-1, 1]; the reward is computed on the env's actions
    acts = agent.policy.unscale_action(buffer.actions[:n].reshape(n * buffer.n_envs, -1))
    assert np.abs(acts).max() > 1.0  # Pendulum's torque range is [-2, 2]
    next_obs = buffer.next_observations[:n].reshape(obs.shape)
    expected = reward_fn(obs, acts, next_obs, np.zeros(len(obs), bool))
    np.testing.assert_allclose(buffer.rewards[:n].reshape(-1), expected, rtol=1e-5)
    assert not np.allclose(before, buffer.rewards[:len(before)])


def test_random_steps_must_leave_steps_for_the_agent() -> None:
    with pytest.raises(ConfigError, match=r"query.every_steps=600: .* agent.total_timesteps=600"):
        PreferenceRL.from_config(small_config("ppo", **{"query.every_steps": "600"}))
    with pytest.raises(ConfigError, match="replay_buffer_class"):
        kwargs = "{replay_buffer_class: ReplayBuffer}"
        PreferenceRL.from_config(small_config("sac", **{"agent.kwargs": kwargs}))


def test_max_pairs_stops_the_queries() -> None:
    result = PreferenceRL.from_config(small_config("ppo", **{"query.max_pairs": "50"})).learn()
    assert len(result.dataset) == 60  # initial 40, one round of 20 reaches the cap of 50

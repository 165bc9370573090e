"""PEBBLE's unsupervised pre-training in pref-rl: before the first labels an off-policy agent
explores on a state-entropy reward, then the learned reward takes over and the critic restarts."""

import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3 import SAC
from stable_baselines3.common.buffers import ReplayBuffer

from rlkit.errors import ConfigError
from rlkit.prefrl import PreferenceRL
from rlkit.prefrl import loop as prefrl_loop
from rlkit.prefrl.unsupervised import StateEntropyReward, reset_critic
from rlkit.wrappers.relabel import buffer_transitions
from tests.tiny_runs import count_env_steps, small_config


def buffer_of(points: list[list[float]]) -> ReplayBuffer:
    box = spaces.Box(-100, 100, (len(points[0]),), np.float32)
    buffer = ReplayBuffer(16, box, spaces.Box(-1, 1, (1,), np.float32), device="cpu")
    for point in points:
        obs = np.array([point], np.float32)
        buffer.add(obs, obs, np.zeros((1, 1), np.float32), np.zeros(1), np.zeros(1), [{}])
    return buffer


def test_each_state_is_paid_the_distance_to_its_kth_nearest_other_state():
    buffer = buffer_of([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0], [3.0, 4.0], [7.0, 0.0]])
    stored = buffer.observations[:5, 0]
    # by hand, from (3, 0): itself 0, (1, 0) 2, (0, 0) 3, (7, 0) 4, (3, 4) 4
    for k, expected in [(1, 2.0), (2, 3.0), (3, 4.0)]:
        reward = StateEntropyReward(buffer, k=k)(stored, None, stored[2:3], None)
        np.testing.assert_allclose(reward, [expected], rtol=1e-6)
    whole = StateEntropyReward(buffer, k=2)(stored, None, stored, None)
    np.testing.assert_allclose(whole, [3.0, 2.0, 3.0, np.sqrt(20), np.sqrt(32)], rtol=1e-6)
    np.testing.assert_array_equal(StateEntropyReward(buffer, k=2, chunk=2)(stored, None, stored, None), whole)
    far = StateEntropyReward(buffer, k=50)(stored, None, stored[:1], None)  # fewer states than k
    np.testing.assert_allclose(far, [7.0], rtol=1e-6)  # the farthest: (7, 0)


def test_an_empty_buffer_pays_nothing():
    empty = ReplayBuffer(4, spaces.Box(-1, 1, (2,)), spaces.Box(-1, 1, (1,)), device="cpu")
    assert StateEntropyReward(empty)(np.zeros((3, 2)), None, np.zeros((3, 2)), None).tolist() == [0, 0, 0]


def test_reset_critic_reinitialises_the_critic_only():
    import gymnasium

    agent = SAC("MlpPolicy", gymnasium.make("Pendulum-v1"), learning_starts=0, batch_size=16, seed=0)
    agent.learn(40)
    vector = torch.nn.utils.parameters_to_vector
    critic, actor = vector(agent.critic.parameters()).clone(), vector(agent.actor.parameters()).clone()
    assert agent.critic.optimizer.state
    reset_critic(agent)
    assert not torch.allclose(vector(agent.critic.parameters()), critic)
    torch.testing.assert_close(vector(agent.critic_target.parameters()), vector(agent.critic.parameters()))
    torch.testing.assert_close(vector(agent.actor.parameters()), actor)
    assert not agent.critic.optimizer.state


def test_the_agent_explores_on_state_entropy_then_trains_on_the_learned_reward(monkeypatch):
    # 50 random steps, then two whole 200-step episodes of exploration, then 450 steps of training
    config = small_config("sac", **{"query.every_steps": "450", "query.unsupervised_steps": "400",
                                    "agent.total_timesteps": "900", "env.n_envs": "1"})
    loop = PreferenceRL.from_config(config)
    steps = count_env_steps(loop.venv)
    seen: dict[str, np.ndarray] = {}
    resets = []
    real_query, real_reset = loop.query_and_refit, prefrl_loop.reset_critic

    def query(n_pairs, save_resume_point=True):
        buffer = loop.agent.replay_buffer
        if not seen:  # the first round: what exploration left
            seen["pos"], seen["timestep"] = np.array(buffer.pos), np.array(loop.agent.num_timesteps)
            seen["explored"] = buffer.rewards[:buffer.pos, 0].copy()
            seen["store_steps"] = np.array(loop.store.n_steps)
        record = real_query(n_pairs, save_resume_point)
        if "relabelled" not in seen:
            seen["relabelled"] = buffer.rewards[:seen["pos"], 0].copy()
            raw = loop.reward_fn.reward_fn  # the learned model, before normalisation
            seen["learned"] = raw(*buffer_transitions(buffer, np.arange(seen["pos"])))
        return record

    scored = []

    class Counted(StateEntropyReward):
        def __call__(self, obs, acts, next_obs, dones):
            scored.append(len(next_obs))
            return super().__call__(obs, acts, next_obs, dones)

    monkeypatch.setattr(prefrl_loop, "StateEntropyReward", Counted)
    monkeypatch.setattr(loop, "query_and_refit", query)
    monkeypatch.setattr(prefrl_loop, "reset_critic", lambda agent: (resets.append(agent), real_reset(agent)))
    loop.learn()

    assert steps() == config.agent.total_timesteps  # the budget counts every explored step
    assert seen["timestep"] == 450 and seen["store_steps"] == 450  # 50 random + 400 explored
    assert seen["pos"] == 400  # the agent's own steps, in its buffer
    explored = seen["explored"]
    assert abs(explored.mean()) < 0.5 and explored.std() > 0.5  # normalised entropy rewards
    # the first refit paid the explored rows the learned reward (normalised: an affine map of it)
    assert np.corrcoef(seen["relabelled"], seen["learned"])[0, 1] > 0.999
    assert abs(np.corrcoef(seen["relabelled"], explored)[0, 1]) < 0.9
    assert resets == [loop.agent]
    assert sum(scored) == 400  # every explored row paid its entropy once, and no later row
    assert loop.agent.replay_buffer.reward_fn is loop.reward_fn  # the learned reward pays the rest


@pytest.mark.parametrize(("overrides", "message"), [
    ({"query.unsupervised_steps": "200"}, "must be below query.every_steps=200"),
    ({"query.unsupervised_steps": "100", "agent.algo": "ppo"}, "needs an off-policy agent"),
])
def test_impossible_exploration_settings_are_refused(overrides, message):
    with pytest.raises(ConfigError, match=message):
        algo = overrides.pop("agent.algo", "sac")
        PreferenceRL.from_config(small_config(algo, **overrides))

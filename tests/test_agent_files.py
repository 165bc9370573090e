"""SB3 agents saved by rlkit load back without unpickling anything, and act and train as before."""

import numpy as np
import pytest
import stable_baselines3.common.save_util as sb3_save_util
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.env_util import make_vec_env

from rlkit.errors import ConfigError, FileFormatError
from rlkit.factories.builders import ALGORITHMS, load_policy
from rlkit.persistence.agents import load_agent, save_agent


@pytest.fixture
def no_unpickling(monkeypatch):
    """Any cloudpickle load in SB3's loader fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("SB3 unpickled a field")
    monkeypatch.setattr(sb3_save_util.cloudpickle, "loads", refuse)


def trained(algo, env_id: str):
    venv = make_vec_env(env_id, n_envs=2, seed=0)
    options = ({"n_steps": 64, "batch_size": 32} if algo is PPO
               else {"buffer_size": 500, "learning_starts": 10})
    agent = algo("MlpPolicy", venv, seed=0, **options)
    agent.learn(128)
    return agent, venv


@pytest.mark.parametrize(("algo", "env_id"), [(PPO, "CartPole-v1"), (SAC, "Pendulum-v1")])
def test_a_saved_agent_acts_and_trains_on_without_unpickling(tmp_path, no_unpickling, algo, env_id):
    agent, venv = trained(algo, env_id)
    path = save_agent(agent, tmp_path / "agent")
    assert path.name == "agent.zip" and (tmp_path / "agent.json").is_file()
    obs = venv.reset()
    acting = load_agent(ALGORITHMS, path)  # no env: for acting only
    training = load_agent(ALGORITHMS, path, env=venv)
    for loaded in (acting, training):
        np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0],
                                      agent.predict(obs, deterministic=True)[0])
    assert training.num_timesteps == agent.num_timesteps == 128
    if algo is SAC:  # acting needs no replay buffer: one slot, not the 500 it trained with
        assert acting.replay_buffer.buffer_size == 1 and training.replay_buffer.buffer_size == 250
    training.learn(64, reset_num_timesteps=False)
    assert training.num_timesteps > 128


def test_a_zip_with_other_pickled_fields_or_no_plain_file_is_refused(tmp_path, no_unpickling):
    agent, _ = trained(PPO, "CartPole-v1")
    path = save_agent(agent, tmp_path / "agent")
    agent.save(path)  # SB3's own save after training also pickles the run's last observations
    with pytest.raises(FileFormatError, match=r"holds pickled \[.*'_last_obs'.*\]; rlkit loads no pickled"):
        load_agent(ALGORITHMS, path)
    (tmp_path / "agent.json").unlink()
    with pytest.raises(FileFormatError, match=r"agent.json: not readable"):
        load_agent(ALGORITHMS, path)


def test_rollout_sources_load_rlkit_agents_safely_and_other_zips_through_sb3(tmp_path, monkeypatch):
    agent, venv = trained(PPO, "CartPole-v1")
    obs = venv.reset()
    agent.save(tmp_path / "foreign.zip")  # someone else's SB3 file: SB3's loader, pickles and all
    with monkeypatch.context() as patch:
        patch.setattr(sb3_save_util.cloudpickle, "loads", None)  # would fail if called
        with pytest.raises(ConfigError, match=r"policy.path=.*foreign.zip: .*policy.trust_pickle=true"):
            load_policy("ppo", tmp_path / "foreign.zip")  # only by explicit opt-in
    foreign = load_policy("ppo", tmp_path / "foreign.zip", trust_pickle=True)
    save_agent(agent, tmp_path / "ours")
    monkeypatch.setattr(sb3_save_util.cloudpickle, "loads", None)  # would fail if called
    ours = load_policy("ppo", tmp_path / "ours.zip")
    for loaded in (foreign, ours):
        np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0],
                                      agent.predict(obs, deterministic=True)[0])

"""rl-zoo3 trains on a saved learned reward named in its hyperparameter YAML (rlkit.wrappers.zoo)."""

from __future__ import annotations

import argparse
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
import yaml
from stable_baselines3 import PPO
from stable_baselines3.common.monitor import Monitor, load_results
from stable_baselines3.common.vec_env import DummyVecEnv

from rlkit.errors import FileFormatError, IncompatibleModelError, InvalidDataError
from rlkit.reward import build_reward_net, save_reward_model
from rlkit.wrappers.zoo import LearnedRewardVecWrapper, LearnedRewardWrapper

LEARNED = 7.0  # every step; Pendulum's own reward is never positive
PENDULUM = gym.make("Pendulum-v1")


def constant_model(directory: Path, value: float, env: gym.Env = PENDULUM) -> Path:
    net = build_reward_net(env.observation_space, env.action_space, hidden=(4,), seed=0)
    with torch.no_grad():
        net.head[-1].weight.zero_()
        net.head[-1].bias.fill_(value)
    return save_reward_model(net, directory)


def test_the_wrappers_load_the_model_by_path_and_keep_the_true_reward(tmp_path: Path) -> None:
    model = str(constant_model(tmp_path / "model", LEARNED))
    env = LearnedRewardWrapper(gym.make("Pendulum-v1"), reward_model=model)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(np.zeros(1, np.float32))
    assert reward == pytest.approx(LEARNED) and info["original_reward"] <= 0.0
    venv = LearnedRewardVecWrapper(DummyVecEnv([lambda: gym.make("Pendulum-v1")] * 2),
                                   reward_model=model, mode="add", device="cpu")
    venv.reset()
    _, rewards, _, infos = venv.step(np.zeros((2, 1), np.float32))
    true = np.array([info["original_reward"] for info in infos])
    np.testing.assert_allclose(rewards, true + LEARNED, rtol=1e-6)


def test_a_model_for_other_spaces_a_missing_model_and_a_bad_mode_are_refused(tmp_path: Path) -> None:
    cartpole = constant_model(tmp_path / "cartpole", 1.0, gym.make("CartPole-v1"))
    with pytest.raises(IncompatibleModelError, match=r"obs shape \(4,\).*\(3,\)"):
        LearnedRewardWrapper(gym.make("Pendulum-v1"), reward_model=str(cartpole))
    with pytest.raises(FileFormatError, match="no such file"):
        LearnedRewardVecWrapper(DummyVecEnv([lambda: gym.make("Pendulum-v1")]),
                                reward_model=str(tmp_path / "missing"))
    model = str(constant_model(tmp_path / "model", LEARNED))
    with pytest.raises(InvalidDataError, match="mode must be one of"):
        LearnedRewardWrapper(gym.make("Pendulum-v1"), reward_model=model, mode="replcae")


def test_sb3_on_the_gym_wrapper_alone_reports_the_true_return(tmp_path: Path) -> None:
    """Outside rl-zoo3 SB3 adds a Monitor to an env without one, above the learned reward; the
    wrapper puts one below it, so the episode buffer holds the true return."""
    model = str(constant_model(tmp_path / "model", LEARNED))
    env = LearnedRewardWrapper(gym.make("Pendulum-v1"), reward_model=model)
    assert isinstance(env.env, Monitor)
    assert LearnedRewardWrapper(env.env, reward_model=model).env is env.env  # one Monitor only
    agent = PPO("MlpPolicy", env, n_steps=256, batch_size=64, n_epochs=1, device="cpu", seed=0)
    agent.learn(256)
    (episode,) = agent.ep_info_buffer
    assert episode["l"] == 200 and episode["r"] < 0.0  # learned: +1400


@pytest.mark.slow
@pytest.mark.parametrize(("key", "wrapper"), [("env_wrapper", "LearnedRewardWrapper"),
                                              ("vec_env_wrapper", "LearnedRewardVecWrapper")])
def test_rl_zoo3_trains_on_the_learned_reward_and_reports_the_true_return(
    tmp_path: Path, key: str, wrapper: str
) -> None:
    exp_manager = pytest.importorskip("rl_zoo3.exp_manager")
    model_dir = constant_model(tmp_path / "model", LEARNED)
    conf = tmp_path / "ppo.yml"
    conf.write_text(yaml.safe_dump({"Pendulum-v1": {
        "n_envs": 2, "n_timesteps": 512, "policy": "MlpPolicy",
        "n_steps": 128, "batch_size": 64, "n_epochs": 1,
        key: [{f"rlkit.wrappers.zoo.{wrapper}": {"reward_model": str(model_dir)}}],
    }}))
    # What `python -m rl_zoo3.train --algo ppo --env Pendulum-v1 --conf-file ppo.yml` runs.
    manager = exp_manager.ExperimentManager(
        argparse.Namespace(), "ppo", "Pendulum-v1", str(tmp_path / "logs"), config=str(conf),
        seed=0, device="cpu", verbose=0, eval_freq=-1, log_interval=-1,  # train.py's defaults
    )
    agent, _ = manager.setup_experiment()
    manager.learn(agent)
    manager.save_trained_model(agent)

    assert agent.num_timesteps == 512
    # What the agent trained on: the learned reward, except where a 200-step episode was cut off
    # (SB3 adds the discounted value of the last observation there).
    buffer = agent.rollout_buffer
    cut = np.roll(buffer.episode_starts, -1, axis=0).astype(bool)
    assert cut.sum() == 2
    np.testing.assert_allclose(buffer.rewards[~cut], LEARNED)
    episodes = list(agent.ep_info_buffer)  # rollout/ep_rew_mean: 2 envs x 1 full episode
    assert [e["l"] for e in episodes] == [200, 200]
    assert all(e["r"] < 0.0 for e in episodes)  # the true return (the learned one is +1400)
    monitor = load_results(manager.save_path)  # monitor.csv: the same true returns
    assert sorted(monitor["r"]) == pytest.approx(sorted(e["r"] for e in episodes), rel=1e-5)
    # rl-zoo3 keeps the hyperparameters beside the agent (a python-tagged OrderedDict: read as text)
    resolved = (Path(manager.params_path) / "config.yml").read_text()
    assert f"rlkit.wrappers.zoo.{wrapper}" in resolved and f"reward_model: {model_dir}" in resolved
    assert (Path(manager.save_path) / "Pendulum-v1.zip").is_file()

"""Parameter-shared training through SuperSuit, as the stack notes describe it."""

from typing import Any

import numpy as np
import pytest
import supersuit as ss
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import KVWriter, Logger

import envs.overcooked as oc
from rlkit.wrappers.pettingzoo_wrapper import PettingZooRewardWrapper


def test_supersuit_vec_env_trains_a_shared_ppo_policy():
    par = oc.parallel_env(layout="A", recipe="lettuce-tomato", n_agents=3)
    venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(par), 2, num_cpus=0,
                                 base_class="stable_baselines3")
    assert venv.num_envs == 6  # 2 games x 3 agents, one shared policy
    assert venv.observation_space.shape == (32,)
    # no seed=: SuperSuit's ConcatVecEnv has no seed() for SB3 to call
    model = PPO("MlpPolicy", venv, n_steps=32, batch_size=64, n_epochs=1, device="cpu")
    model.learn(192)
    assert model.num_timesteps == 192
    actions, _ = model.predict(venv.reset(), deterministic=True)
    assert actions.shape == (6,) and np.all((0 <= actions) & (actions < 14))


class KeptValues(KVWriter):
    """An SB3 logger output that keeps every dumped value."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0) -> None:
        self.rows.append(dict(key_values))


class EpisodeSums(BaseCallback):
    """Per vectorised row, the sums of the true (``original_reward``) and trained-on rewards."""

    def __init__(self, num_envs: int) -> None:
        super().__init__()
        self.true_sum, self.learned_sum = np.zeros(num_envs), np.zeros(num_envs)
        self.true_returns: list[float] = []
        self.learned_returns: list[float] = []
        self.reported: list[float] = []

    def _on_step(self) -> bool:
        infos, dones = self.locals["infos"], self.locals["dones"].astype(bool)  # SuperSuit: uint8
        self.true_sum += [info["original_reward"] for info in infos]
        self.learned_sum += self.locals["rewards"]
        for i in np.flatnonzero(dones):
            self.true_returns.append(self.true_sum[i])
            self.learned_returns.append(self.learned_sum[i])
            self.reported.append(infos[i]["learned_episode_return"])
        self.true_sum[dones] = self.learned_sum[dones] = 0.0
        return True


def test_true_per_agent_returns_reach_sb3_ep_rew_mean_through_supersuit():
    """A learned reward on every agent; SB3's episode buffer and ``rollout/ep_rew_mean`` must hold
    the game's own returns, with no VecMonitor (which would sum the learned rewards)."""
    par = oc.parallel_env(layout="A", recipe="lettuce-tomato", n_agents=2, max_steps=16)
    five = {agent: (lambda o, a, n, d: np.array([5.0])) for agent in par.possible_agents}
    wrapped = PettingZooRewardWrapper(par, five)
    venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(wrapped), 2, num_cpus=0,
                                 base_class="stable_baselines3")
    model = PPO("MlpPolicy", venv, n_steps=32, batch_size=64, n_epochs=1, device="cpu")
    kept = KeptValues()
    model.set_logger(Logger(folder=None, output_formats=[kept]))
    sums = EpisodeSums(venv.num_envs)
    model.learn(128, callback=sums)  # one rollout: 4 rows x 32 steps = 8 episodes of 16 steps

    assert len(sums.true_returns) == 8
    assert sums.learned_returns == pytest.approx([80.0] * 8)  # the agent trained on 16 x 5
    assert sums.reported == pytest.approx(sums.learned_returns)
    buffered = [episode["r"] for episode in model.ep_info_buffer]
    assert sorted(buffered) == pytest.approx(sorted(sums.true_returns))
    assert all(episode["l"] == 16 for episode in model.ep_info_buffer)
    assert 80.0 not in buffered
    (logged,) = [row["rollout/ep_rew_mean"] for row in kept.rows if "rollout/ep_rew_mean" in row]
    assert logged == pytest.approx(np.mean(sums.true_returns))

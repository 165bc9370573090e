"""Training an SB3 agent on a learned reward while recording its TRUE episode returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.type_aliases import TrainFreq
from stable_baselines3.common.utils import should_collect_more_steps

from rlkit.factories.builders import make_agent, make_venv
from rlkit.factories.configs import AgentConfig, EnvConfig
from rlkit.logging import Logger, attach_to_sb3
from rlkit.reward import RunningNorm
from rlkit.reward.normalize import NormalizedReward
from rlkit.types import RewardFn
from rlkit.wrappers import RewardVecEnvWrapper


@dataclass
class EpisodeLog:
    """True and learned episode returns against the timestep at which each episode ended."""

    timesteps: list[int] = field(default_factory=list)
    true_returns: list[float] = field(default_factory=list)
    learned_returns: list[float] = field(default_factory=list)


class EpisodeLogCallback(BaseCallback):
    """Collects ``info["episode"]`` (the true return, see ``RewardVecEnvWrapper``) as episodes end
    and forwards a smoothed value to an rlkit ``Logger``: the mean of the last ``every`` episodes'
    returns as ``<prefix>true_return`` and ``<prefix>learned_return``."""

    def __init__(self, log: EpisodeLog, logger: Logger | None = None, every: int = 10,
                 prefix: str = "agent/") -> None:
        super().__init__()
        self.log = log
        self.rlkit_logger = logger
        self.every = every
        self.prefix = prefix

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            if "episode" in info:
                self.log.timesteps.append(self.num_timesteps)
                self.log.true_returns.append(float(info["episode"]["r"]))
                self.log.learned_returns.append(float(info.get("learned_episode_return", np.nan)))
                if self.rlkit_logger is not None and len(self.log.true_returns) % self.every == 0:
                    recent = self.log.true_returns[-self.every:]
                    metrics = {f"{self.prefix}true_return": float(np.mean(recent))}
                    learned = np.asarray(self.log.learned_returns[-self.every:])
                    if np.isfinite(learned).any():  # none when rewards are paid later (lazy buffer)
                        metrics[f"{self.prefix}learned_return"] = float(np.nanmean(learned))
                    self.rlkit_logger.log(metrics, step=self.num_timesteps)
        return True


def train_agent_on_reward(
    reward_fn: RewardFn, env: EnvConfig, config: AgentConfig, seed: int,
    logger: Logger | None = None,
) -> tuple[BaseAlgorithm, EpisodeLog]:
    """Learn a policy on ``reward_fn`` (normalised when configured), the true reward unseen."""
    if config.normalize_reward:
        reward_fn = NormalizedReward(reward_fn, RunningNorm())
    venv = RewardVecEnvWrapper(make_venv(env, seed_offset=seed), reward_fn)
    agent = make_agent(config, venv, seed)
    log = EpisodeLog()
    agent.learn(config.total_timesteps, callback=EpisodeLogCallback(log, logger))
    venv.close()
    return agent, log


def train_on_env_reward(
    env: EnvConfig, config: AgentConfig, seed: int, logger: Logger | None = None,
) -> tuple[BaseAlgorithm, EpisodeLog]:
    """Learn a policy on the env's own reward, as SB3 gets it (not normalised), for exactly
    ``config.total_timesteps`` env steps (``StopAtBudget``): the true-reward baseline beside an
    agent trained on a learned reward with the same settings and budget.

    Args:
        env: the env section (its seed seeds the envs, as for the learned-reward agent).
        config: the agent's settings and budget.
        seed: the agent's seed.
        logger: where its episode returns and SB3's own metrics go, when given.

    Returns:
        The agent and its training episodes' returns.
    """
    venv = make_venv(env)
    agent = make_agent(config, venv, seed)
    if logger is not None:
        attach_to_sb3(agent, logger)
    log = EpisodeLog()
    budget = config.total_timesteps
    agent.learn(budget, callback=[EpisodeLogCallback(log, logger), StopAtBudget(budget)])
    venv.close()
    return agent, log


class StopAtBudget(BaseCallback):
    """Ends training at exactly ``budget`` env steps. PPO collects whole rollouts, so without it a
    budget that is not a whole number of them (or a pref-rl run resumed mid-rollout, whose
    rollouts start at its resume point) runs on to the next rollout's end (with pref-rl, more
    query rounds and labels); the rollout the budget ends inside is collected (and recorded) but
    not trained on, and one that ends at the budget is trained on (SB3's own loop ends after it):
    the counts of ``rlkit.factories.budget``."""

    def __init__(self, budget: int) -> None:
        super().__init__()
        self.budget = budget

    def _on_step(self) -> bool:
        return self.num_timesteps < self.budget or self._collection_ends_here()

    def _collection_ends_here(self) -> bool:
        """Whether this step is the last of the collection SB3 trains on next."""
        if isinstance(self.model, OffPolicyAlgorithm):
            freq = self.model.train_freq
            assert isinstance(freq, TrainFreq)
            episodes = self.locals["num_collected_episodes"] + int(np.sum(self.locals["dones"]))
            return not should_collect_more_steps(freq, self.locals["num_collected_steps"], episodes)
        return self.locals["n_steps"] + 1 >= self.locals["n_rollout_steps"]

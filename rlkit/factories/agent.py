"""Training an SB3 agent on a learned reward while recording its TRUE episode returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback

from rlkit.factories.builders import make_agent, make_venv
from rlkit.factories.configs import AgentConfig, EnvConfig
from rlkit.logging import Logger
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

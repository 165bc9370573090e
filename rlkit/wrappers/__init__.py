"""Reward wrappers: a learned or shaped reward in front of gymnasium, SB3 and PettingZoo envs."""

from rlkit.wrappers.gym_wrapper import RewardMode, RewardWrapper
from rlkit.wrappers.pettingzoo_wrapper import PettingZooRewardWrapper
from rlkit.wrappers.relabel import (
    RolloutRewardRelabeller,
    per_rollout_reward,
    relabel_replay_buffer,
)
from rlkit.wrappers.vec_wrapper import RewardVecEnvWrapper, StepObserver

__all__ = [
    "PettingZooRewardWrapper",
    "RewardMode",
    "RewardVecEnvWrapper",
    "RewardWrapper",
    "RolloutRewardRelabeller",
    "StepObserver",
    "per_rollout_reward",
    "relabel_replay_buffer",
]

"""Reward wrappers: a learned or shaped reward in front of gymnasium, SB3 and PettingZoo envs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlkit._lazy import lazy_exports

if TYPE_CHECKING:
    from rlkit.wrappers.gym_wrapper import RewardMode, RewardWrapper
    from rlkit.wrappers.pettingzoo_wrapper import PettingZooRewardWrapper
    from rlkit.wrappers.relabel import (
        LazyRewardReplayBuffer,
        RolloutRewardRelabeller,
        check_reward_env,
        per_rollout_reward,
        per_sample_reward,
        relabel_replay_buffer,
    )
    from rlkit.wrappers.vec_wrapper import RewardVecEnvWrapper, StepObserver

__all__ = [
    "LazyRewardReplayBuffer",
    "PettingZooRewardWrapper",
    "RewardMode",
    "RewardVecEnvWrapper",
    "RewardWrapper",
    "RolloutRewardRelabeller",
    "StepObserver",
    "check_reward_env",
    "per_rollout_reward",
    "per_sample_reward",
    "relabel_replay_buffer",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "rlkit.wrappers.gym_wrapper": ["RewardMode", "RewardWrapper"],
    "rlkit.wrappers.pettingzoo_wrapper": ["PettingZooRewardWrapper"],
    "rlkit.wrappers.relabel": ["LazyRewardReplayBuffer", "RolloutRewardRelabeller", "check_reward_env",
                               "per_rollout_reward", "per_sample_reward", "relabel_replay_buffer"],
    "rlkit.wrappers.vec_wrapper": ["RewardVecEnvWrapper", "StepObserver"],
})

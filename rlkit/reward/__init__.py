"""Reward models learned from preferences: nets, ensembles, losses, trainer, metrics, save/load."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlkit._lazy import lazy_exports

if TYPE_CHECKING:
    from rlkit.reward.ensemble import RewardEnsemble
    from rlkit.reward.losses import (
        LossFn,
        bradley_terry,
        hinge,
        make_loss,
        ordinal_cross_entropy,
        rao_kupper_ties,
    )
    from rlkit.reward.metrics import (
        evaluate_dataset,
        evaluate_reward,
        oracle_cross_entropy,
        pearson,
        preference_accuracy,
        tie_aware_accuracy,
    )
    from rlkit.reward.nets import RewardNet, RewardNetSpec, build_reward_net
    from rlkit.reward.normalize import NormalizedReward, RunningNorm
    from rlkit.reward.numpy_rewards import TorchRewardFn
    from rlkit.reward.serialization import LoadedRewardModel, load_reward_model, save_reward_model
    from rlkit.reward.trainer import RewardTrainer, TrainerConfig, TrainReport

__all__ = [
    "LoadedRewardModel",
    "LossFn",
    "NormalizedReward",
    "RewardEnsemble",
    "RewardNet",
    "RewardNetSpec",
    "RewardTrainer",
    "RunningNorm",
    "TorchRewardFn",
    "TrainReport",
    "TrainerConfig",
    "bradley_terry",
    "build_reward_net",
    "evaluate_dataset",
    "evaluate_reward",
    "hinge",
    "load_reward_model",
    "make_loss",
    "oracle_cross_entropy",
    "ordinal_cross_entropy",
    "pearson",
    "preference_accuracy",
    "rao_kupper_ties",
    "save_reward_model",
    "tie_aware_accuracy",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "rlkit.reward.ensemble": ["RewardEnsemble"],
    "rlkit.reward.losses": [
        "LossFn", "bradley_terry", "hinge", "make_loss", "ordinal_cross_entropy", "rao_kupper_ties",
    ],
    "rlkit.reward.metrics": [
        "evaluate_dataset", "evaluate_reward", "oracle_cross_entropy", "pearson",
        "preference_accuracy", "tie_aware_accuracy",
    ],
    "rlkit.reward.nets": ["RewardNet", "RewardNetSpec", "build_reward_net"],
    "rlkit.reward.numpy_rewards": ["TorchRewardFn"],
    "rlkit.reward.normalize": ["NormalizedReward", "RunningNorm"],
    "rlkit.reward.serialization": ["LoadedRewardModel", "load_reward_model", "save_reward_model"],
    "rlkit.reward.trainer": ["RewardTrainer", "TrainerConfig", "TrainReport"],
})

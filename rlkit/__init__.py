"""rlkit: reward learning from feedback of any granularity.

The names a user reaches for first are importable from here (``from rlkit import
PreferenceDataset, RewardTrainer``); each is imported on first use, so ``import rlkit`` and the
``rlkit`` command's start stay cheap. Everything else lives in its package (``rlkit.reward``,
``rlkit.feedback``, ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlkit._lazy import lazy_exports

# The one place the version is written: setup.cfg reads it (``version = attr: rlkit.__version__``).
__version__ = "0.1.0"

if TYPE_CHECKING:
    from rlkit.data.store import TrajectoryStore
    from rlkit.data.trajectory import Trajectory
    from rlkit.errors import RlkitError
    from rlkit.extras import MissingExtraError
    from rlkit.feedback.dataset import PreferenceDataset
    from rlkit.feedback.scale import OrdinalScale
    from rlkit.feedback.teachers import SimulatedTeacher, TeacherConfig
    from rlkit.prefrl.loop import PreferenceRL
    from rlkit.reward.ensemble import RewardEnsemble
    from rlkit.reward.nets import RewardNet, build_reward_net
    from rlkit.reward.numpy_rewards import TorchRewardFn
    from rlkit.reward.serialization import load_reward_model, save_reward_model
    from rlkit.reward.trainer import RewardTrainer, TrainerConfig
    from rlkit.types import RewardFn, Teacher
    from rlkit.wrappers.gym_wrapper import RewardWrapper
    from rlkit.wrappers.pettingzoo_wrapper import PettingZooRewardWrapper
    from rlkit.wrappers.vec_wrapper import RewardVecEnvWrapper

__all__ = [
    "MissingExtraError",
    "OrdinalScale",
    "PettingZooRewardWrapper",
    "PreferenceDataset",
    "PreferenceRL",
    "RewardEnsemble",
    "RewardFn",
    "RewardNet",
    "RewardTrainer",
    "RewardVecEnvWrapper",
    "RewardWrapper",
    "RlkitError",
    "SimulatedTeacher",
    "Teacher",
    "TeacherConfig",
    "TorchRewardFn",
    "TrainerConfig",
    "Trajectory",
    "TrajectoryStore",
    "__version__",
    "build_reward_net",
    "load_reward_model",
    "save_reward_model",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "rlkit.data.store": ["TrajectoryStore"],
    "rlkit.data.trajectory": ["Trajectory"],
    "rlkit.errors": ["RlkitError"],
    "rlkit.extras": ["MissingExtraError"],
    "rlkit.feedback.dataset": ["PreferenceDataset"],
    "rlkit.feedback.scale": ["OrdinalScale"],
    "rlkit.feedback.teachers": ["SimulatedTeacher", "TeacherConfig"],
    "rlkit.prefrl.loop": ["PreferenceRL"],
    "rlkit.reward.ensemble": ["RewardEnsemble"],
    "rlkit.reward.nets": ["RewardNet", "build_reward_net"],
    "rlkit.reward.numpy_rewards": ["TorchRewardFn"],
    "rlkit.reward.serialization": ["load_reward_model", "save_reward_model"],
    "rlkit.reward.trainer": ["RewardTrainer", "TrainerConfig"],
    "rlkit.types": ["RewardFn", "Teacher"],
    "rlkit.wrappers.gym_wrapper": ["RewardWrapper"],
    "rlkit.wrappers.pettingzoo_wrapper": ["PettingZooRewardWrapper"],
    "rlkit.wrappers.vec_wrapper": ["RewardVecEnvWrapper"],
})

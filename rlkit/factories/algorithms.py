"""The SB3 algorithms rlkit builds by name (lower case, as configs spell them); ``drqsac`` is SAC
from pixels (``rlkit.factories.pixel_sac``), the generator and demonstrator of pixel tasks."""

from __future__ import annotations

from stable_baselines3 import A2C, PPO, SAC, TD3
from stable_baselines3.common.base_class import BaseAlgorithm

from rlkit.factories.pixel_sac import DrQSAC

ALGORITHMS: dict[str, type[BaseAlgorithm]] = {"ppo": PPO, "sac": SAC, "a2c": A2C, "td3": TD3,
                                              "drqsac": DrQSAC}

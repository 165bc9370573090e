"""The SB3 algorithms rlkit builds by name (lower case, as configs spell them)."""

from __future__ import annotations

from stable_baselines3 import A2C, PPO, SAC, TD3
from stable_baselines3.common.base_class import BaseAlgorithm

ALGORITHMS: dict[str, type[BaseAlgorithm]] = {"ppo": PPO, "sac": SAC, "a2c": A2C, "td3": TD3}

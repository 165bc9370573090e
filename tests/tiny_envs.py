"""Tiny envs that learn in a few hundred steps, for tests of whole training pipelines."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

POINT_ID = "rlkit-test/Point-v0"


class Point(gym.Env[np.ndarray, np.ndarray]):
    """Move a point on [-1, 1] towards 0; reward -|x|; 20 steps. Learnable in a few hundred steps."""

    observation_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.x, self.t = float(self.np_random.uniform(-1, 1)), 0
        return np.array([self.x], np.float32), {}

    def step(self, action: np.ndarray):
        self.x = float(np.clip(self.x + 0.25 * float(np.clip(action[0], -1, 1)), -1, 1))
        self.t += 1
        return np.array([self.x], np.float32), -abs(self.x), False, self.t >= 20, {}

    def episode_state(self) -> dict[str, np.ndarray]:
        """Where it is (``rlkit.persistence.env_state``): a resumed run goes on mid-episode."""
        return {"x": np.asarray(self.x), "t": np.asarray(self.t)}

    def load_episode_state(self, state: Mapping[str, np.ndarray]) -> None:
        self.x, self.t = float(state["x"]), int(state["t"])


if POINT_ID not in gym.registry:
    gym.register(POINT_ID, entry_point=Point, max_episode_steps=20)

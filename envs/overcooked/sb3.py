"""``OvercookedVecEnv`` as a Stable-Baselines3 ``VecEnv`` (imports SB3, hence torch: opt-in)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices

from envs.overcooked.vector import OvercookedVecEnv


class SB3OvercookedVecEnv(VecEnv):
    """Parameter-shared training: ``PPO("MlpPolicy", SB3OvercookedVecEnv(OvercookedVecEnv(64)))``."""

    def __init__(self, venv: OvercookedVecEnv) -> None:
        self.venv = venv
        super().__init__(venv.num_envs, venv.observation_space, venv.action_space)

    def reset(self) -> np.ndarray:
        self._reset_seeds()  # the game is deterministic: seeds have nothing to seed
        self._reset_options()
        return self.venv.reset()

    def step_async(self, actions: np.ndarray) -> None:
        self.venv.step_async(actions)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        return self.venv.step_wait()

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return [getattr(self.venv, attr_name)] * len(self._get_indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise AttributeError(f"rows share one engine: set {attr_name!r} on the OvercookedVecEnv itself")

    def env_method(
        self, method_name: str, *args: Any, indices: VecEnvIndices = None, **kwargs: Any
    ) -> list[Any]:
        raise AttributeError(f"rows share one engine: call {method_name!r} on the OvercookedVecEnv itself")

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [False] * len(self._get_indices(indices))

    def get_images(self) -> Sequence[np.ndarray | None]:
        frames = self.venv.frames()
        return [frame for frame in frames for _ in range(self.venv.n_agents)]

    def _get_indices(self, indices: VecEnvIndices) -> Sequence[int]:
        if indices is None:
            return range(self.num_envs)
        return [indices] if isinstance(indices, int) else list(indices)

"""Tasks whose answer is known: the Point env's expert and its vector env, and the cue game, where
each of two agents must answer the same cue differently (multi-agent PPO learns it in seconds)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from stable_baselines3.common.vec_env import DummyVecEnv

from rlkit.marl import ParallelEnvRows
from tests.tiny_envs import Point

N_CUES = 3
LENGTH = 8  # steps in a cue game


def expert(obs: np.ndarray) -> np.ndarray:
    """The Point env's expert: a push towards 0 in proportion to the distance, clipped to [-1, 1].

    Args:
        obs: Point observations (the positions).

    Returns:
        The actions.
    """
    return np.clip(-4.0 * obs, -1.0, 1.0)


def venv(seed: int = 0) -> DummyVecEnv:
    """Two Point envs in a vector env.

    Args:
        seed: seeds the envs.

    Returns:
        The vector env.
    """
    env = DummyVecEnv([Point, Point])
    env.seed(seed)
    return env


class CueGame(ParallelEnv):
    """Each step a random cue c is shown to everyone; agent i scores 1 for action (c + i) mod 3.

    The agents must answer the same cue differently, so the task is solved only if each policy
    learns from its own agent's rewards (or, shared, reads the agent id).
    """

    metadata = {"name": "cue_game"}
    render_mode = None

    def __init__(self, n_agents: int = 2) -> None:
        self.possible_agents = [f"player_{i}" for i in range(n_agents)]
        self._rng = np.random.default_rng(0)

    def observation_space(self, agent: str) -> spaces.Box:
        return spaces.Box(0.0, 1.0, (N_CUES,), np.float32)

    def action_space(self, agent: str) -> spaces.Discrete:
        return spaces.Discrete(N_CUES)

    def _obs(self) -> dict[str, np.ndarray]:
        self._cue = int(self._rng.integers(N_CUES))
        return {a: np.eye(N_CUES, dtype=np.float32)[self._cue] for a in self.agents}

    def reset(self, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray], dict[str, dict]]:
        self._rng = np.random.default_rng(seed)
        self.agents, self._t = list(self.possible_agents), 0
        return self._obs(), {a: {} for a in self.agents}

    def step(self, actions: dict[str, int]) -> tuple[dict[str, np.ndarray], dict[str, float], dict[str, bool],
                                                     dict[str, bool], dict[str, dict]]:
        rewards = {a: float(actions[a] == (self._cue + i) % N_CUES) for i, a in enumerate(self.agents)}
        self._t += 1
        done = self._t >= LENGTH
        obs = self._obs()
        flags = dict.fromkeys(self.agents, False)
        truncations = dict.fromkeys(self.agents, done)
        if done:
            self.agents = []
        return obs, rewards, flags, truncations, {a: {} for a in rewards}


def cue_rows(num_games: int = 8) -> ParallelEnvRows:
    """``num_games`` cue games of two agents, as multi-agent PPO steps them.

    Args:
        num_games: how many games run side by side.

    Returns:
        The rows.
    """
    return ParallelEnvRows(CueGame, num_games)

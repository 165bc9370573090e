"""Records what an agent experiences, step by step, into a TrajectoryStore (online preference RL)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from rlkit.data.sim_state import STATE_KEY, recorded_states
from rlkit.data.store import TrajectoryStore
from rlkit.data.trajectory import Trajectory
from rlkit.errors import ConfigError


class TrajectoryRecorder:
    """A step observer for ``RewardVecEnvWrapper``: one open trajectory per env.

    An episode end closes the env's trajectory (terminal only for a true termination). Episodes
    longer than ``max_length`` are cut into non-terminal pieces so segments are available
    before long episodes finish. Simulator states in ``info[STATE_KEY]`` are kept as the
    trajectories' ``states`` (what rendering a queried segment needs).

    Args:
        store: where each closed trajectory is added.
        n_envs: the number of envs of the VecEnv it observes.
        max_length: the most steps of one trajectory, >= 1.

    Raises:
        ConfigError: when ``max_length`` is below 1.
    """

    def __init__(self, store: TrajectoryStore, n_envs: int, max_length: int = 500) -> None:
        if max_length < 1:
            raise ConfigError(f"max_length must be >= 1, got {max_length}")
        self.store = store
        self.max_length = max_length
        self._open: list[list[tuple[np.ndarray, np.ndarray, float]]] = [[] for _ in range(n_envs)]
        self._states: list[list[np.ndarray | None]] = [[] for _ in range(n_envs)]

    def __call__(
        self,
        obs: np.ndarray,
        acts: np.ndarray,
        next_obs: np.ndarray,
        true_rews: np.ndarray,
        dones: np.ndarray,
        terminal: np.ndarray,
        infos: list[dict[str, Any]],
    ) -> None:
        for i, steps in enumerate(self._open):
            steps.append((obs[i], acts[i], float(true_rews[i])))
            self._states[i].append(infos[i].get(STATE_KEY))
            if dones[i] or len(steps) >= self.max_length:
                self._close(i, next_obs[i], bool(terminal[i]) and bool(dones[i]))

    def episode_state(self) -> dict[str, np.ndarray] | None:
        """Each env's open trajectory (``obs.<env>``, ``acts.<env>``, ``rews.<env>``): what a run
        resumed mid-episode records on from (None when simulator states are recorded)."""
        if any(state is not None for states in self._states for state in states):
            return None
        found: dict[str, np.ndarray] = {}
        for env, steps in enumerate(self._open):
            if steps:
                obs, acts, rews = (np.stack(column) for column in zip(*steps, strict=True))
                found |= {f"obs.{env}": obs, f"acts.{env}": acts, f"rews.{env}": rews}
        return found

    def load_episode_state(self, state: Mapping[str, np.ndarray]) -> None:
        """Take back what ``episode_state`` gave."""
        for env in range(len(self._open)):
            if f"obs.{env}" in state:
                obs, acts, rews = (state[f"{name}.{env}"] for name in ("obs", "acts", "rews"))
                self._open[env] = [(o, a, float(r)) for o, a, r in zip(obs, acts, rews, strict=True)]
                self._states[env] = [None] * len(obs)

    def _close(self, env: int, final_obs: np.ndarray, terminal: bool) -> None:
        steps, self._open[env] = self._open[env], []
        states, self._states[env] = self._states[env], []
        self.store.append(Trajectory.from_steps(steps, final_obs, terminal, recorded_states(states)))

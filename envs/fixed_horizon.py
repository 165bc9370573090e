"""Fixed-horizon episodes with an absorbing state, as APEC (after DAC) uses for Hopper/Walker/Ant.

Early termination leaks information to an imitation reward (a positive reward makes the agent live
long, a negative one makes it fall early). So every episode lasts exactly ``horizon`` steps: after
the inner env terminates, the agent sits in an absorbing state with reward 0 until the horizon.

Observation change: a flat ``Box`` of dim ``d`` becomes dim ``d + 1``. The last entry is the
absorbing flag: 0 on real states (the rest is the inner observation unchanged), 1 on absorbing
ones (the rest is zeros, clipped into the inner bounds). ``terminated`` is never returned; each
episode ends with ``truncated=True`` at step ``horizon``. ``info["inner_terminated"]`` marks the
step at which the inner env terminated and ``info["absorbing"]`` the absorbing steps, whose
actions are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rlkit.errors import InvalidDataError, StateError


class FixedHorizon(gym.Wrapper[np.ndarray, Any, np.ndarray, Any]):
    """Pad every episode to ``horizon`` steps with a flagged, zero-reward absorbing state.

    With ``pad=False`` the observations are the same (the flag always 0) but an episode ends where
    the inner env terminates (``terminated=True``), as an agent trains in APEC's reference (its
    fixed-horizon env returns ``done`` there and its SAC resets, apec_mjc/envs/mujocoFH.py,
    rl_alg/sac.py:441-458): padded episodes would fill a replay buffer with absorbing states.

    Args:
        env: the inner env, with a flat Box observation space and a time limit (if any) of at
            least ``horizon`` steps.
        horizon: the steps of every episode.
        pad: pad an episode that terminates early with absorbing states (else it ends there).
    """

    def __init__(self, env: gym.Env[np.ndarray, Any], horizon: int, pad: bool = True) -> None:
        super().__init__(env)
        self.pad = pad
        space = env.observation_space
        if not isinstance(space, spaces.Box) or len(space.shape) != 1:
            raise InvalidDataError(f"observation_space must be a flat Box, got {space}")
        if horizon < 1:
            raise InvalidDataError(f"horizon must be >= 1, got {horizon}")
        limit = env.spec.max_episode_steps if env.spec is not None else None
        if limit is not None and limit < horizon:
            raise InvalidDataError(
                f"the env's time limit (max_episode_steps={limit}) is below horizon={horizon}; "
                "episodes could not all reach the horizon"
            )
        self.horizon = horizon
        self.observation_space = spaces.Box(
            low=np.append(space.low, 0).astype(space.dtype),
            high=np.append(space.high, 1).astype(space.dtype),
            dtype=space.dtype,
        )
        self._absorbing_obs = np.append(
            np.clip(np.zeros(space.shape), space.low, space.high), 1
        ).astype(space.dtype)
        self._t = 0
        self._absorbed = False

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self._t = 0
        self._absorbed = False
        return self._real(obs), info

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        if self._t >= self.horizon:
            raise StateError(f"the episode reached horizon={self.horizon}; call reset()")
        self._t += 1
        at_horizon = self._t >= self.horizon
        if self._absorbed:
            return self._absorbing_obs.copy(), 0.0, False, at_horizon, {"absorbing": True}
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated:
            self._absorbed = True
            info = {**info, "inner_terminated": True}
            if not self.pad:
                return self._real(obs), reward, True, False, info
        # an inner truncation can only come at the horizon (checked in __init__) or from an env
        # without a spec'd limit; the episode cannot go on then, so it ends here as well
        return self._real(obs), reward, False, at_horizon or (truncated and not terminated), info

    def episode_state(self) -> dict[str, np.ndarray]:
        """Steps taken and whether the inner env has ended (``rlkit.persistence.env_state``)."""
        return {"t": np.asarray(self._t), "absorbed": np.asarray(self._absorbed)}

    def load_episode_state(self, state: Mapping[str, np.ndarray]) -> None:
        self._t, self._absorbed = int(state["t"]), bool(state["absorbed"])

    def _real(self, obs: np.ndarray) -> np.ndarray:
        return np.append(obs, 0).astype(self.observation_space.dtype)


def make_fixed_horizon(env_id: str, horizon: int | None = None, pad: bool = True,
                       **kwargs: Any) -> FixedHorizon:
    """``gym.make(env_id)`` padded to ``horizon`` steps (default: its registered time limit,
    e.g. 1000 for Hopper-v5), with the time limit raised to the horizon when it is shorter.

    Args:
        env_id: a registered gymnasium id, e.g. ``"Hopper-v5"``.
        horizon: the episode length, in steps; the registered time limit when ``None``.
        pad: pad to the horizon; False: the same observations, episodes end at termination.
        **kwargs: passed to ``gym.make``.

    Returns:
        The wrapped env; every episode lasts exactly ``horizon`` steps (with ``pad``).

    Raises:
        InvalidDataError: when no horizon is given and the id has no time limit, the horizon is
            below 1, or the observations are not a flat ``Box``.
    """
    limit = gym.spec(env_id).max_episode_steps
    horizon = horizon if horizon is not None else limit
    if horizon is None:
        raise InvalidDataError(f"{env_id} has no registered time limit; give horizon")
    return FixedHorizon(gym.make(env_id, max_episode_steps=max(horizon, limit or 0), **kwargs),
                        horizon, pad)

"""One episode (or a piece of one) as arrays."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rlkit.errors import InvalidDataError


@dataclass(frozen=True, eq=False)
class Trajectory:
    """``T >= 1`` transitions of one episode (or a piece of one), as arrays.

    Float arrays must be finite.

    Attributes:
        obs: ``T + 1`` observations (the last is the final observation).
        acts: ``T`` actions.
        rews: ``(T,)`` the env's rewards.
        terminal: the episode ended in a true terminal state (not a time limit or a cut), which
            is when the last step counts as ``done`` for a reward net.
        infos: the env's info dict of each of the ``T`` steps, when kept.
        states: ``(T, state size)`` floats, the simulator state after each step: what rendering
            a segment as video needs (``rlkit.data.sim_state``); None when not recorded.

    Raises:
        InvalidDataError: when the lengths or shapes disagree, or a float array holds NaN or inf.
    """

    obs: np.ndarray
    acts: np.ndarray
    rews: np.ndarray
    terminal: bool = False
    infos: tuple[dict[str, Any], ...] | None = field(default=None, repr=False)
    states: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        n = len(self.acts)
        if n == 0:
            raise InvalidDataError("a trajectory needs at least one transition (acts is empty)")
        if len(self.obs) != n + 1:
            raise InvalidDataError(
                f"obs must have len(acts) + 1 = {n + 1} rows (the final observation included), "
                f"got {len(self.obs)}"
            )
        if self.rews.shape != (n,):
            raise InvalidDataError(f"rews must have shape ({n},), got {self.rews.shape}")
        if self.infos is not None and len(self.infos) != n:
            raise InvalidDataError(f"infos must have {n} entries, got {len(self.infos)}")
        if self.states is not None and (self.states.ndim != 2 or len(self.states) != n
                                        or not np.issubdtype(self.states.dtype, np.floating)):
            raise InvalidDataError(
                f"states must be floats of shape ({n}, state size), got {self.states.dtype} "
                f"{self.states.shape}"
            )
        for name in ("obs", "acts", "rews", "states"):
            array = getattr(self, name)
            if array is not None and np.issubdtype(array.dtype, np.floating) and not np.isfinite(array).all():
                bad = int(np.flatnonzero(~np.isfinite(array.reshape(len(array), -1)).all(1))[0])
                raise InvalidDataError(f"{name} holds NaN or inf (first at step {bad})")

    @classmethod
    def from_steps(
        cls, steps: list[tuple[np.ndarray, np.ndarray, float]], final_obs: np.ndarray,
        terminal: bool, states: list[np.ndarray] | None = None,
    ) -> Trajectory:
        """Build from per-step ``(obs, action, reward)`` tuples and the observation after them
        (and the simulator state after each step, when recorded)."""
        obs = np.stack([s[0] for s in steps] + [np.asarray(final_obs)])
        if np.issubdtype(obs.dtype, np.floating):
            obs = obs.astype(np.float32)
        acts = np.stack([s[1] for s in steps])
        rews = np.asarray([s[2] for s in steps], dtype=np.float32)
        return cls(obs=obs, acts=acts, rews=rews, terminal=terminal,
                   states=None if states is None else np.stack(states).astype(np.float64))

    def __len__(self) -> int:
        return len(self.acts)

    @property
    def dones(self) -> np.ndarray:
        """Per-step done flags: only the last step of a terminal trajectory is done."""
        dones = np.zeros(len(self), dtype=bool)
        dones[-1] = self.terminal
        return dones

    @property
    def ret(self) -> float:
        """The undiscounted return of the true reward."""
        return float(self.rews.sum())

"""Flat transition batches for the discriminator: expert demos and a ring of recent agent steps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from rlkit.data import Trajectory
from rlkit.errors import InvalidDataError


@dataclass(frozen=True, eq=False)
class Transitions:
    """``N`` transitions ``(s, a, s', done)``; ``dones`` marks true terminations only.

    Attributes:
        obs: the ``N`` observations before each step.
        acts: the ``N`` actions.
        next_obs: the ``N`` observations after each step.
        dones: ``(N,)`` bool, True where the step ended in a true terminal state.

    Raises:
        InvalidDataError: when the arrays' lengths differ.
    """

    obs: np.ndarray
    acts: np.ndarray
    next_obs: np.ndarray
    dones: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.obs)
        for name in ("acts", "next_obs", "dones"):
            if len(getattr(self, name)) != n:
                raise InvalidDataError(f"{name} has {len(getattr(self, name))} rows, obs has {n}")

    def __len__(self) -> int:
        return len(self.obs)

    @classmethod
    def from_trajectories(cls, trajectories: Sequence[Trajectory]) -> Transitions:
        if not trajectories:
            raise InvalidDataError("trajectories is empty: no transitions to learn from")
        return cls(
            obs=np.concatenate([t.obs[:-1] for t in trajectories]),
            acts=np.concatenate([t.acts for t in trajectories]),
            next_obs=np.concatenate([t.obs[1:] for t in trajectories]),
            dones=np.concatenate([t.dones for t in trajectories]),
        )

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` row indices drawn with replacement (so tiny demo sets still fill a batch)."""
        return rng.integers(0, len(self), size=n)

    def take(self, index: np.ndarray) -> Transitions:
        return Transitions(self.obs[index], self.acts[index], self.next_obs[index], self.dones[index])

    def sample(self, rng: np.random.Generator, n: int) -> Transitions:
        """``n`` transitions drawn with replacement."""
        return self.take(self.draw(rng, n))

    def to_torch(self, device: str | torch.device) -> dict[str, torch.Tensor]:
        """Tensors keyed like ``RewardNet.forward``'s arguments; floats become float32."""
        def tensor(array: np.ndarray) -> torch.Tensor:
            if array.dtype in (np.float64, np.bool_):
                array = array.astype(np.float32)
            return torch.as_tensor(array, device=device)

        return {"obs": tensor(self.obs), "acts": tensor(self.acts),
                "next_obs": tensor(self.next_obs), "dones": tensor(self.dones)}


def take_rows(tensors: dict[str, torch.Tensor], index: np.ndarray) -> dict[str, torch.Tensor]:
    """Rows ``index`` of ``to_torch``'s tensors, gathered where they live (only the index travels)."""
    rows = torch.as_tensor(index, device=next(iter(tensors.values())).device)
    return {name: tensor[rows] for name, tensor in tensors.items()}


class TransitionBuffer:
    """The most recent ``capacity`` agent transitions; a ``StepObserver`` for the reward wrapper,
    so generator experience is captured as it is collected, with no second rollout.

    Each env's step counts as one transition; once full, the oldest are overwritten. It also
    collects the true returns of the episodes that end (``pop_episode_returns``).

    Args:
        capacity: the most transitions kept, >= 1.
        obs_shape: the shape of one observation.
        act_shape: the shape of one action (``()`` for a discrete action).
        act_dtype: the actions' dtype.
        obs_dtype: the observations' dtype.

    Raises:
        InvalidDataError: when ``capacity`` is below 1.
    """

    def __init__(self, capacity: int, obs_shape: tuple[int, ...], act_shape: tuple[int, ...],
                 act_dtype: np.dtype, obs_dtype: type | np.dtype = np.float32) -> None:
        if capacity < 1:
            raise InvalidDataError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._obs = np.zeros((capacity, *obs_shape), dtype=obs_dtype)
        self._next_obs = np.zeros_like(self._obs)
        self._acts = np.zeros((capacity, *act_shape), dtype=act_dtype)
        self._dones = np.zeros(capacity, dtype=bool)
        self._pos = 0
        self._size = 0
        self.episode_returns: list[float] = []

    def __len__(self) -> int:
        return self._size

    def __call__(self, obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray,
                 true_rews: np.ndarray, dones: np.ndarray, terminal: np.ndarray,
                 infos: list[dict[str, Any]]) -> None:
        n = len(obs)
        index = (self._pos + np.arange(n)) % self.capacity
        self._obs[index] = obs
        self._acts[index] = np.asarray(acts).reshape(self._acts[index].shape)
        self._next_obs[index] = next_obs
        self._dones[index] = terminal
        self._pos = int((self._pos + n) % self.capacity)
        self._size = min(self._size + n, self.capacity)
        self.episode_returns += [float(infos[i]["episode"]["r"]) for i in np.flatnonzero(dones)
                                 if "episode" in infos[i]]

    def transitions(self) -> Transitions:
        """A copy of what the buffer holds (order does not matter to the discriminator)."""
        if self._size == 0:
            raise InvalidDataError("the agent buffer is empty: run the generator first")
        s = slice(0, self._size)
        return Transitions(self._obs[s].copy(), self._acts[s].copy(), self._next_obs[s].copy(),
                           self._dones[s].copy())

    def pop_episode_returns(self) -> list[float]:
        """True returns of the episodes finished since the last call."""
        returns, self.episode_returns = self.episode_returns, []
        return returns

    def episode_state(self) -> dict[str, np.ndarray]:
        """All it holds, for a run that must go on exactly (``rlkit.persistence.env_state``)."""
        return {"obs": self._obs, "next_obs": self._next_obs, "acts": self._acts, "dones": self._dones,
                "pos": np.asarray(self._pos), "size": np.asarray(self._size),
                "episode_returns": np.asarray(self.episode_returns, dtype=np.float64)}

    def load_episode_state(self, state: Mapping[str, np.ndarray]) -> None:
        """Take back what ``episode_state`` gave (a buffer of the same capacity and shapes)."""
        for name in ("obs", "next_obs", "acts", "dones"):
            mine, saved = getattr(self, f"_{name}"), np.asarray(state[name])
            if saved.shape != mine.shape:
                raise InvalidDataError(f"{name} of shape {saved.shape}, this buffer's are {mine.shape}")
            mine[:] = saved
        self._pos, self._size = int(state["pos"]), int(state["size"])
        self.episode_returns = [float(r) for r in state["episode_returns"]]

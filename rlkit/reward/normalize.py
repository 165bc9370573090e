"""Running reward normalisation: a learned reward's scale is arbitrary, an RL algorithm's is not."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rlkit.errors import InvalidDataError
from rlkit.types import RewardFn


class RunningNorm:
    """Scalar running mean and variance (population), merged batch by batch (Chan et al.'s
    parallel Welford update), so updating with a batch equals updating with its values one by one.
    """

    def __init__(self, eps: float = 1e-8) -> None:
        self.count = 0
        self.mean = 0.0
        self.var = 1.0  # until the first update, so normalize is the identity
        self.eps = eps

    @property
    def std(self) -> float:
        return math.sqrt(self.var + self.eps)

    def update(self, x: np.ndarray) -> None:
        x = np.asarray(x, np.float64).ravel()
        if x.size == 0:
            return
        if not np.isfinite(x).all():
            raise InvalidDataError("RunningNorm.update got NaN or inf rewards")
        n, batch_mean = x.size, float(x.mean())
        batch_m2 = float(((x - batch_mean) ** 2).sum())
        old_m2 = self.var * self.count if self.count else 0.0
        total = self.count + n
        shift = batch_mean - self.mean
        self.mean += shift * n / total
        self.var = (old_m2 + batch_m2 + shift**2 * self.count * n / total) / total
        self.count = total

    def normalize(self, x: np.ndarray) -> np.ndarray:
        """(x - mean) / sqrt(var + eps), float32."""
        return ((np.asarray(x, np.float64) - self.mean) / self.std).astype(np.float32)

    def state_dict(self) -> dict[str, float]:
        return {"count": float(self.count), "mean": self.mean, "var": self.var, "eps": self.eps}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> RunningNorm:
        missing = {"count", "mean", "var", "eps"} - set(state)
        if missing:
            raise InvalidDataError(f"normaliser state lacks {sorted(missing)}")
        values = {key: float(state[key]) for key in ("count", "mean", "var", "eps")}
        bad = [key for key, value in values.items() if not math.isfinite(value)]
        if bad or values["count"] < 0 or values["var"] < 0 or values["eps"] < 0:
            raise InvalidDataError(f"normaliser state out of range: {values}")
        norm = cls(eps=values["eps"])
        norm.count, norm.mean, norm.var = int(values["count"]), values["mean"], values["var"]
        return norm


class NormalizedReward:
    """A ``RewardFn`` whose output is normalised; with ``update=True`` the statistics follow the
    rewards it sees (training), with ``update=False`` they are frozen (evaluation, a loaded model).
    """

    def __init__(self, reward_fn: RewardFn, norm: RunningNorm, update: bool = True) -> None:
        self.reward_fn = reward_fn
        self.norm = norm
        self.update = update

    def __call__(
        self, obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray, dones: np.ndarray
    ) -> np.ndarray:
        rewards = self.reward_fn(obs, acts, next_obs, dones)
        if self.update:
            self.norm.update(rewards)
        return self.norm.normalize(rewards)

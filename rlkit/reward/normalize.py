"""Running reward normalisation: a learned reward's scale is arbitrary, an RL algorithm's is not."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from stable_baselines3.common.running_mean_std import RunningMeanStd

from rlkit.errors import InvalidDataError
from rlkit.types import RewardFn

STATE_KEYS = ("count", "mean", "var", "eps")


class RunningNorm:
    """Scalar running mean and (population) variance on SB3's ``RunningMeanStd``, which merges
    batch by batch (Chan et al.'s parallel update), so a batch counts as its values one by one.

    Two things are added: NaN or inf rewards are refused instead of poisoning the statistics, and
    the count starts at 0 (SB3's default starts at 1e-4 with mean 0 and variance 1, a prior that
    shifts the statistics by ~1e-7), so the first batch sets the exact sample mean and variance.
    Until the first update the statistics are mean 0 and variance 1: ``normalize`` is the
    identity.

    Args:
        eps: added to the variance when normalising, >= 0 (keeps a constant reward finite).
    """

    def __init__(self, eps: float = 1e-8) -> None:
        self.stats = RunningMeanStd(epsilon=0.0, shape=())
        self.eps = eps

    @property
    def count(self) -> int:
        return int(self.stats.count)

    @property
    def mean(self) -> float:
        return float(self.stats.mean)

    @property
    def var(self) -> float:
        return float(self.stats.var)

    @property
    def std(self) -> float:
        return math.sqrt(self.var + self.eps)

    def update(self, x: np.ndarray) -> None:
        x = np.asarray(x, np.float64).ravel()
        if x.size == 0:
            return
        if not np.isfinite(x).all():
            raise InvalidDataError("RunningNorm.update got NaN or inf rewards")
        self.stats.update(x)

    def normalize(self, x: np.ndarray) -> np.ndarray:
        """(x - mean) / sqrt(var + eps), float32."""
        return ((np.asarray(x, np.float64) - self.mean) / self.std).astype(np.float32)

    def state_dict(self) -> dict[str, float]:
        return {"count": float(self.count), "mean": self.mean, "var": self.var, "eps": self.eps}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> RunningNorm:
        missing = set(STATE_KEYS) - set(state)
        if missing:
            raise InvalidDataError(f"normaliser state lacks {sorted(missing)}")
        values = {key: float(state[key]) for key in STATE_KEYS}
        bad = [key for key, value in values.items() if not math.isfinite(value)]
        if bad or values["count"] < 0 or values["var"] < 0 or values["eps"] < 0:
            raise InvalidDataError(f"normaliser state out of range: {values}")
        norm = cls(eps=values["eps"])
        norm.stats.count = float(int(values["count"]))
        norm.stats.mean = np.asarray(values["mean"], np.float64)
        norm.stats.var = np.asarray(values["var"], np.float64)
        return norm


class NormalizedReward:
    """A ``RewardFn`` whose output is normalised by running statistics, as float32.

    Args:
        reward_fn: the reward to normalise.
        norm: the statistics, shared with whoever saves or restores them.
        update: True: each call first updates ``norm`` with the rewards it sees (training);
            False: the statistics are frozen (evaluation, a loaded model).
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

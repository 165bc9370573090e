"""Spreads over seeds as every results page reports them: the mean, the sample standard deviation
(ddof = 1), and the 95% t-interval of the mean, with n beside them; paired differences between
two arms over the same seeds, and what their interval shows."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from scipy import stats

Seed = TypeVar("Seed", bound=Hashable)


@dataclass(frozen=True)
class Spread:
    mean: float
    sd: float  # sample standard deviation, ddof = 1 (NaN for n < 2)
    n: int
    low: float  # 95% t-interval of the mean (NaN for n < 2)
    high: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        data = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
        n = len(data)
        if n == 0:
            return cls(math.nan, math.nan, 0, math.nan, math.nan)
        mean = float(data.mean())
        if n < 2:
            return cls(mean, math.nan, 1, math.nan, math.nan)
        sd = float(data.std(ddof=1))
        half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
        return cls(mean, sd, n, mean - half, mean + half)

    def cell(self, digits: int = 1) -> str:
        """``mean [low, high] (n)`` for a markdown table."""
        if self.n < 2:
            return f"{self.mean:.{digits}f} (n={self.n})"
        return f"{self.mean:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}] (n={self.n})"

    def as_dict(self) -> dict[str, float]:
        return {"mean": self.mean, "sd": self.sd, "n": self.n, "ci95_low": self.low, "ci95_high": self.high}


def paired_difference(a: Mapping[Seed, float], b: Mapping[Seed, float]) -> Spread:
    """The spread of ``a[k] - b[k]`` over the keys (seeds) both hold: a paired comparison, each
    seed's difference taken within that seed, so what the seeds share cancels.

    Args:
        a: one arm's value per seed.
        b: the other arm's value per seed.

    Returns:
        The spread of the per-seed differences (n: the seeds both hold with finite values).
    """
    return Spread.of([a[key] - b[key] for key in a if key in b])


def verdict(difference: Spread, higher_is_better: bool = True) -> str:
    """What a paired difference ``a - b`` shows about ``a``: ``better`` or ``worse`` where its
    95% interval lies on one side of 0, ``not resolved`` where it holds 0, ``too few seeds`` under
    n = 2.

    Args:
        difference: the spread of ``a - b`` over seeds.
        higher_is_better: whether a larger value of the metric is better (False for a loss).

    Returns:
        One of the four words above.
    """
    if difference.n < 2:
        return "too few seeds"
    sign = 1.0 if higher_is_better else -1.0
    low, high = sorted((sign * difference.low, sign * difference.high))
    return "better" if low > 0 else "worse" if high < 0 else "not resolved"

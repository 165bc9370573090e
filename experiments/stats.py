"""Spreads over seeds as every results page reports them: the mean, the sample standard deviation
(ddof = 1), and the 95% t-interval of the mean, with n beside them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats


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

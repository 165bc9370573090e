"""Ordinal label scales: levels in [0, 1] with names, and unbiased stochastic rounding onto them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rlkit.errors import InvalidLabelError


@dataclass(frozen=True)
class OrdinalScale:
    """Increasing levels in [0, 1]; 1 means the left segment is better, 0.5 a tie.

    An empty ``levels`` tuple is the continuous ``oracle`` scale: any value in [0, 1].

    Attributes:
        name: the scale's name (``binary``, ``ternary``, ``five``, ``oracle`` or a custom one).
        levels: the labels allowed, increasing from 0 to 1 (at least two), or empty for the
            continuous scale.
        names: a name per level, shown to people (empty for the continuous scale).

    Raises:
        InvalidLabelError: when discrete levels do not increase from 0 to 1 or ``names`` has
            another length.
    """

    name: str
    levels: tuple[float, ...]
    names: tuple[str, ...]

    def __post_init__(self) -> None:
        levels = np.asarray(self.levels, dtype=float)
        if self.is_continuous:
            return
        if len(levels) < 2 or levels[0] != 0.0 or levels[-1] != 1.0:
            raise InvalidLabelError(
                f"scale {self.name!r}: levels must start at 0 and end at 1, got {self.levels}"
            )
        if (np.diff(levels) <= 0).any():
            raise InvalidLabelError(f"scale {self.name!r}: levels must increase, got {self.levels}")
        if len(self.names) != len(self.levels):
            raise InvalidLabelError(
                f"scale {self.name!r}: {len(self.levels)} levels but {len(self.names)} names"
            )

    @property
    def is_continuous(self) -> bool:
        return len(self.levels) == 0

    def quantize(self, p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Round probabilities onto the levels so that ``E[z] = p`` exactly.

        Between neighbouring levels ``lo <= p <= hi`` take ``hi`` with probability
        ``(p - lo) / (hi - lo)``, else ``lo``. NaN (skipped) stays NaN.
        """
        p = np.asarray(p, dtype=np.float64)
        finite = np.isfinite(p)
        if ((p[finite] < 0) | (p[finite] > 1)).any():
            raise InvalidLabelError("probabilities to quantize must lie in [0, 1]")
        if self.is_continuous:
            return p.astype(np.float32)
        levels = np.asarray(self.levels)
        safe = np.where(finite, p, 0.5)
        upper = np.clip(np.searchsorted(levels, safe, side="left"), 1, len(levels) - 1)
        lo, hi = levels[upper - 1], levels[upper]
        take_hi = rng.random(p.shape) < (safe - lo) / (hi - lo)
        z = np.where(take_hi, hi, lo)
        return np.where(finite, z, np.nan).astype(np.float32)

    def validate(self, labels: np.ndarray, what: str = "labels") -> None:
        """Raise if a label is outside [0, 1] or off the levels (NaN = skipped is allowed)."""
        labels = np.asarray(labels, dtype=np.float64)
        if np.isinf(labels).any():
            raise InvalidLabelError(f"{what}: inf is not a label (use NaN for a skipped pair)")
        finite = labels[np.isfinite(labels)]
        outside = (finite < 0) | (finite > 1)
        if outside.any():
            raise InvalidLabelError(f"{what}: {finite[outside][0]:.6g} is outside [0, 1]")
        if self.is_continuous or len(finite) == 0:
            return
        distance = np.abs(finite[:, None] - np.asarray(self.levels)[None, :]).min(axis=1)
        off = distance > 1e-6
        if off.any():
            raise InvalidLabelError(
                f"{what}: {finite[off][0]:.6g} is not on the {self.name!r} scale {self.levels}"
            )

    def level_name(self, z: float) -> str:
        if self.is_continuous:
            return f"A better with probability {z:.2f}"
        return self.names[int(np.argmin(np.abs(np.asarray(self.levels) - z)))]

    @classmethod
    def custom(cls, levels: tuple[float, ...], names: tuple[str, ...] | None = None) -> OrdinalScale:
        """A user-given scale; names default to the levels themselves."""
        names = names or tuple(f"{level:g}" for level in levels)
        return cls(name=f"custom{len(levels)}", levels=tuple(float(x) for x in levels), names=names)

    @classmethod
    def get(cls, name: str) -> OrdinalScale:
        try:
            return BUILTIN_SCALES[name]
        except KeyError:
            raise InvalidLabelError(
                f"unknown scale {name!r}; built-ins are {sorted(BUILTIN_SCALES)}"
            ) from None


BINARY = OrdinalScale("binary", (0.0, 1.0), ("B better", "A better"))
TERNARY = OrdinalScale("ternary", (0.0, 0.5, 1.0), ("B better", "tie", "A better"))
FIVE = OrdinalScale(
    "five",
    (0.0, 0.2, 0.5, 0.8, 1.0),
    ("B much better", "B slightly better", "tie", "A slightly better", "A much better"),
)
ORACLE = OrdinalScale("oracle", (), ())
BUILTIN_SCALES = {s.name: s for s in (BINARY, TERNARY, FIVE, ORACLE)}

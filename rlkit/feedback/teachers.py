"""Simulated teachers: labels from true segment returns, with B-Pref's kinds of irrationality."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from rlkit.config import StrictModel
from rlkit.data.segments import SegmentPairs, segment_returns
from rlkit.errors import ConfigError, InvalidDataError
from rlkit.feedback.scale import OrdinalScale


class TeacherConfig(StrictModel):
    """B-Pref's teacher grid plus the ordinal scale.

    The teacher draws ``p = sigmoid(beta * (G_A - G_B))`` from the true segment returns, rounds it
    onto the scale (``OrdinalScale.quantize``, so E[z] = p), then applies ``equal_threshold``,
    ``mistake_rate`` and ``skip_threshold`` in that order.

    Attributes:
        scale: the name of a built-in ordinal scale (``OrdinalScale.get``).
        beta: rationality, > 0; ``inf`` gives a perfectly rational teacher. ``"auto"`` (the
            commands' default) is fitted on sample pairs so that beta * (G_A - G_B) has std
            ``auto_beta_std`` (``rlkit.factories.builders.make_teacher``); ``SimulatedTeacher``
            needs it resolved.
        auto_beta_std: the std of ``beta * (G_A - G_B)`` an ``"auto"`` beta is fitted to, > 0.
        gamma: the returns' discount, in (0, 1]; ``gamma < 1`` is the myopic teacher that weighs
            later steps more.
        mistake_rate: flip the label (z -> 1 - z) with this probability, in [0, 1].
        skip_threshold: skip (NaN) when both segment returns are below it (None: never skip).
        equal_threshold: label a tie (0.5) when ``|G_A - G_B|`` is below it, >= 0: B-Pref's
            deterministic "equal" teacher, which breaks unbiasedness (E[z] != p); leave it 0 for
            the ordinal setting.
    """

    scale: str = "five"
    beta: float | Literal["auto"] = 1.0
    auto_beta_std: float = Field(2.0, gt=0)
    gamma: float = 1.0
    mistake_rate: float = 0.0
    skip_threshold: float | None = None
    equal_threshold: float = 0.0

    @model_validator(mode="after")
    def _ranges(self) -> TeacherConfig:
        if self.beta != "auto" and not self.beta > 0:
            raise ConfigError(f"beta must be > 0, got {self.beta}")
        if not 0.0 < self.gamma <= 1.0:
            raise ConfigError(f"gamma must lie in (0, 1], got {self.gamma}")
        if not 0.0 <= self.mistake_rate <= 1.0:
            raise ConfigError(f"mistake_rate must lie in [0, 1], got {self.mistake_rate}")
        if self.equal_threshold < 0:
            raise ConfigError(f"equal_threshold must be >= 0, got {self.equal_threshold}")
        OrdinalScale.get(self.scale)
        return self


class SimulatedTeacher:
    """A ``Teacher`` that knows the true reward. Every random choice comes from ``rng``.

    Args:
        config: how it labels; its ``beta`` must be a number (not ``"auto"``).
        rng: draws the rounding onto the scale and the mistakes.
        name: the teacher's name.

    Raises:
        ConfigError: when ``config.beta`` is ``"auto"``.
    """

    def __init__(
        self, config: TeacherConfig, rng: np.random.Generator, name: str = "simulated"
    ) -> None:
        if config.beta == "auto":
            raise ConfigError("TeacherConfig.beta is 'auto': fit it first "
                              "(rlkit.factories.builders.make_teacher)")
        self.config = config
        self.beta: float = config.beta  # a fitted number: "auto" was refused above
        self.scale = OrdinalScale.get(config.scale)
        self.rng = rng
        self.name = name

    def returns(self, pairs: SegmentPairs) -> tuple[np.ndarray, np.ndarray]:
        """True (optionally myopic) returns of the left and right segments."""
        gamma = self.config.gamma  # from the rewards alone: no observation (or frame) is gathered
        return (segment_returns(pairs.store, pairs.left, gamma),
                segment_returns(pairs.store, pairs.right, gamma))

    def oracle_probability(self, pairs: SegmentPairs) -> np.ndarray:
        """``P(left > right) = sigmoid(beta * (G_A - G_B))``."""
        g_left, g_right = self.returns(pairs)
        return _oracle_probability(g_left - g_right, self.beta)

    def label(self, pairs: SegmentPairs) -> np.ndarray:
        return self.label_with_oracle(pairs)[0]

    def label_with_oracle(self, pairs: SegmentPairs) -> tuple[np.ndarray, np.ndarray]:
        """Labels and the oracle probabilities they were drawn from (for diagnostics and metrics)."""
        config = self.config
        g_left, g_right = self.returns(pairs)
        p = _oracle_probability(g_left - g_right, self.beta)
        z = self.scale.quantize(p, self.rng).astype(np.float64)
        if config.equal_threshold > 0:
            z = np.where(np.abs(g_left - g_right) < config.equal_threshold, 0.5, z)
        if config.mistake_rate > 0:
            z = np.where(self.rng.random(len(z)) < config.mistake_rate, 1.0 - z, z)
        if config.skip_threshold is not None:
            z = np.where(np.maximum(g_left, g_right) < config.skip_threshold, np.nan, z)
        return z.astype(np.float32), p


def _oracle_probability(return_gap: np.ndarray, beta: float) -> np.ndarray:
    if np.isinf(beta):
        return 0.5 + 0.5 * np.sign(return_gap)
    scaled = np.clip(beta * return_gap, -500.0, 500.0)
    return 1.0 / (1.0 + np.exp(-scaled))


def beta_for_spread(return_gaps: np.ndarray, target_std: float = 2.0) -> float:
    """A ``beta`` that makes ``beta * (G_A - G_B)`` have standard deviation ``target_std``.

    Returns differ in scale by orders of magnitude between tasks; a fixed beta makes one task's
    teacher almost deterministic and another's almost random. Fit it on sample pairs instead.
    The spread is these pairs' own (population sd, ddof 0): a property of the batch that sets the
    scale, not an estimate over seeds.

    Args:
        return_gaps: ``G_A - G_B`` of sample pairs, any shape.
        target_std: the standard deviation wanted for ``beta * (G_A - G_B)``.

    Returns:
        ``target_std / std(return_gaps)``.

    Raises:
        InvalidDataError: when every gap is equal.
    """
    spread = float(np.std(return_gaps))
    if spread == 0.0:
        raise InvalidDataError("all return gaps are equal; no beta can spread them")
    return target_std / spread

"""Which candidate pairs to ask a teacher about: uniform, ensemble disagreement, or entropy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from rlkit.data.segments import SegmentPairs
from rlkit.errors import ConfigError
from rlkit.reward.metrics import predict_step_rewards
from rlkit.types import RewardFn


class QuerySelector(Protocol):
    def select(self, candidates: SegmentPairs, n: int, rng: np.random.Generator) -> np.ndarray:
        """Indices of the ``n`` candidates to query."""
        ...


def preference_probabilities(members: Sequence[RewardFn], pairs: SegmentPairs) -> np.ndarray:
    """``P(left > right)`` under each member: shape ``(n_members, n_pairs)``."""
    left, right = pairs.gather()
    deltas = np.stack([predict_step_rewards(m, left).sum(axis=1)
                       - predict_step_rewards(m, right).sum(axis=1) for m in members])
    return 1.0 / (1.0 + np.exp(-np.clip(deltas, -500, 500)))


def _top(scores: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """The ``n`` highest scores; ties broken at random so equal scores are not order-biased."""
    order = np.lexsort((rng.random(len(scores)), -scores))
    return np.sort(order[: min(n, len(scores))])


class UniformSelector:
    def select(self, candidates: SegmentPairs, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.sort(rng.choice(len(candidates), size=min(n, len(candidates)), replace=False))


class DisagreementSelector:
    """Pairs on which ensemble members disagree most (std of their preference probabilities)."""

    def __init__(self, members: Sequence[RewardFn]) -> None:
        if len(members) < 2:
            raise ConfigError("disagreement needs an ensemble of at least two members")
        self.members = members

    def select(self, candidates: SegmentPairs, n: int, rng: np.random.Generator) -> np.ndarray:
        return _top(preference_probabilities(self.members, candidates).std(axis=0), n, rng)


class EntropySelector:
    """Pairs whose predicted preference is closest to a coin flip (highest binary entropy)."""

    def __init__(self, members: Sequence[RewardFn]) -> None:
        self.members = members

    def select(self, candidates: SegmentPairs, n: int, rng: np.random.Generator) -> np.ndarray:
        p = preference_probabilities(self.members, candidates).mean(axis=0)
        p = np.clip(p, 1e-12, 1 - 1e-12)
        return _top(-(p * np.log(p) + (1 - p) * np.log(1 - p)), n, rng)


def make_selector(name: str, members: Sequence[RewardFn] = ()) -> QuerySelector:
    if name == "uniform":
        return UniformSelector()
    if name == "disagreement":
        return DisagreementSelector(members)
    if name == "entropy":
        return EntropySelector(members)
    raise ConfigError(f"unknown query selection {name!r}; choose uniform, disagreement or entropy")

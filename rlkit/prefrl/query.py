"""Which candidate pairs to ask a teacher about: uniform, ensemble disagreement, or entropy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, cast

import numpy as np
import torch

from rlkit.data.segments import SegmentPairs
from rlkit.errors import ConfigError
from rlkit.reward.ensemble import RewardEnsemble
from rlkit.reward.metrics import predict_step_rewards
from rlkit.reward.nets import INPUT_NAMES, RewardNet, TorchRewardFn, numpy_to_tensors
from rlkit.types import RewardFn

_BATCH_FIELDS = ("obs", "acts", "next_obs", "dones")  # SegmentBatch's arrays, by INPUT_NAMES


class QuerySelector(Protocol):
    def select(self, candidates: SegmentPairs, n: int, rng: np.random.Generator) -> np.ndarray:
        """Indices of the ``n`` candidates to query."""
        ...


Members = RewardEnsemble | RewardNet | Sequence[RewardFn]


def preference_probabilities(members: Members, pairs: SegmentPairs,
                             chunk_pairs: int = 1024) -> np.ndarray:
    """``P(left > right)`` under each member: shape ``(n_members, n_pairs)``.

    A torch model (an ensemble, a net, or ``TorchRewardFn``s over nets, e.g. an ensemble's
    members) is scored in one batched pass per chunk: every member, both sides of every pair and
    every step in one ``member_rewards`` call. Other reward functions are called one by one.

    Args:
        members: the reward model(s) whose preferences are asked for.
        pairs: the candidate pairs.
        chunk_pairs: pairs per batched pass; it bounds the activations' memory (K members x
            2 sides x chunk_pairs x segment length rows of the widest layer: ~315 MB for 3
            members 256 wide on 50-step segments).

    Returns:
        The ``(n_members, n_pairs)`` probabilities.
    """
    model = _as_model(members)
    if model is None:
        left, right = pairs.gather()
        deltas = np.stack([predict_step_rewards(m, left).sum(axis=1)
                           - predict_step_rewards(m, right).sum(axis=1)
                           for m in cast(Sequence[RewardFn], members)])
    else:
        deltas = np.concatenate([
            _member_deltas(model, pairs.subset(np.arange(start, min(start + chunk_pairs,
                                                                    len(pairs)))))
            for start in range(0, len(pairs), chunk_pairs)
        ], axis=1)
    return 1.0 / (1.0 + np.exp(-np.clip(deltas, -500, 500)))


def _as_model(members: Members) -> RewardEnsemble | RewardNet | None:
    """The torch model behind ``members``, or None when they are other reward functions."""
    if isinstance(members, (RewardEnsemble, RewardNet)):
        return members
    nets = [m.module for m in members if isinstance(m, TorchRewardFn)]
    if not members or len(nets) != len(members) or not all(isinstance(n, RewardNet) for n in nets):
        return None
    return cast(RewardNet, nets[0]) if len(nets) == 1 else RewardEnsemble(
        [cast(RewardNet, net) for net in nets])


def _member_deltas(model: RewardEnsemble | RewardNet, pairs: SegmentPairs) -> np.ndarray:
    """Each member's R(left) - R(right) of ``pairs``: ``(K, n)``, pads weighing nothing."""
    left, right = pairs.gather()
    reads = set(model.spec.inputs)
    arrays = [np.stack([getattr(left, name), getattr(right, name)]) if input_name in reads
              else None for input_name, name in zip(INPUT_NAMES, _BATCH_FIELDS, strict=True)]
    mask = torch.as_tensor(np.stack([left.mask, right.mask]))
    with torch.inference_mode():
        tensors = numpy_to_tensors(model, *arrays)
        if isinstance(model, RewardEnsemble):
            rewards = model.member_rewards(*tensors)  # (K, 2, n, L)
        else:
            rewards = model(*tensors)[None]
        returns = (rewards.to(torch.float64).cpu() * mask).sum(dim=-1)
    return (returns[:, 0] - returns[:, 1]).numpy()


def _top(scores: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """The ``n`` highest scores; ties broken at random so equal scores are not order-biased."""
    order = np.lexsort((rng.random(len(scores)), -scores))
    return np.sort(order[: min(n, len(scores))])


class UniformSelector:
    def select(self, candidates: SegmentPairs, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.sort(rng.choice(len(candidates), size=min(n, len(candidates)), replace=False))


class DisagreementSelector:
    """Pairs on which ensemble members disagree most (std of their preference probabilities)."""

    def __init__(self, members: Members) -> None:
        self.members = _as_model(members) or members
        if _count(self.members) < 2:
            raise ConfigError("disagreement needs an ensemble of at least two members")

    def select(self, candidates: SegmentPairs, n: int, rng: np.random.Generator) -> np.ndarray:
        return _top(preference_probabilities(self.members, candidates).std(axis=0), n, rng)


class EntropySelector:
    """Pairs whose predicted preference is closest to a coin flip (highest binary entropy)."""

    def __init__(self, members: Members) -> None:
        self.members = _as_model(members) or members

    def select(self, candidates: SegmentPairs, n: int, rng: np.random.Generator) -> np.ndarray:
        p = preference_probabilities(self.members, candidates).mean(axis=0)
        p = np.clip(p, 1e-12, 1 - 1e-12)
        return _top(-(p * np.log(p) + (1 - p) * np.log(1 - p)), n, rng)


def _count(members: Members) -> int:
    return 1 if isinstance(members, RewardNet) else len(members)


def make_selector(name: str, members: Members = ()) -> QuerySelector:
    """The selector ``name`` over ``members`` (a reward model or its members' reward functions;
    torch models are scored in batched passes).

    Args:
        name: ``"uniform"``, ``"disagreement"`` or ``"entropy"``.
        members: a ``RewardEnsemble``, a ``RewardNet`` or a sequence of reward functions; unused
            by ``"uniform"``.

    Returns:
        The selector.

    Raises:
        ConfigError: on an unknown name, or ``"disagreement"`` with fewer than two members.
    """
    if name == "uniform":
        return UniformSelector()
    if name == "disagreement":
        return DisagreementSelector(members)
    if name == "entropy":
        return EntropySelector(members)
    raise ConfigError(f"unknown query selection {name!r}; choose uniform, disagreement or entropy")

"""Which candidate pairs to ask a teacher about: uniform, ensemble disagreement, or entropy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, cast

import numpy as np
import torch

from rlkit.data.segments import SegmentPairs
from rlkit.data.store import TrajectoryStore
from rlkit.errors import ConfigError
from rlkit.reward.ensemble import RewardEnsemble
from rlkit.reward.nets import INPUT_NAMES, RewardNet
from rlkit.reward.numpy_rewards import TorchRewardFn, numpy_to_tensors
from rlkit.types import RewardFn

_BATCH_FIELDS = ("obs", "acts", "next_obs", "dones")  # SegmentBatch's arrays, by INPUT_NAMES


class QuerySelector(Protocol):
    """Picks which candidate pairs a teacher is asked about."""

    def select(self, candidates: SegmentPairs, n: int, rng: np.random.Generator) -> np.ndarray:
        """Indices of the ``n`` candidates to query."""
        ...


Members = RewardEnsemble | RewardNet | Sequence[RewardFn]


def preference_probabilities(members: Members, pairs: SegmentPairs,
                             chunk_steps: int = 4096) -> np.ndarray:
    """``P(left > right)`` under each member: shape ``(n_members, n_pairs)``.

    Candidate segments overlap (thousands of windows drawn from the same trajectories), so each
    distinct step they cover is scored once, ``chunk_steps`` at a time, and the segments' returns
    are summed from those step rewards. A torch model (an ensemble, a net, or ``TorchRewardFn``s
    over nets, e.g. an ensemble's members) scores every member in one batched pass per chunk;
    other reward functions are called one by one on each chunk.

    Args:
        members: the reward model(s) whose preferences are asked for.
        pairs: the candidate pairs.
        chunk_steps: distinct steps per forward pass; it bounds the activations' memory
            (members x chunk_steps rows of the widest layer: 12 MB for 3 members 256 wide).

    Returns:
        The ``(n_members, n_pairs)`` probabilities.

    Raises:
        ConfigError: when ``chunk_steps`` is below 1.
    """
    if chunk_steps < 1:
        raise ConfigError(f"chunk_steps must be >= 1, got {chunk_steps}")
    model = _as_model(members)
    deltas = segment_return_deltas(members if model is None else model, pairs, chunk_steps)
    return 1.0 / (1.0 + np.exp(-np.clip(deltas, -500, 500)))


def segment_return_deltas(members: Members, pairs: SegmentPairs,
                          chunk_steps: int = 4096) -> np.ndarray:
    """Each member's ``R(left) - R(right)`` of ``pairs``, summed in float64: ``(K, n_pairs)``.

    Args:
        members: a ``RewardEnsemble``, a ``RewardNet`` or a sequence of reward functions.
        pairs: the pairs.
        chunk_steps: distinct steps per reward call.

    Returns:
        The ``(K, n_pairs)`` return differences (K = 1 for a single net).
    """
    n = len(pairs)
    segments = np.concatenate([pairs.left, pairs.right])
    starts = np.concatenate([[0], np.cumsum(pairs.store.lengths)[:-1]]).astype(np.int64)
    width = int(segments[:, 2].max()) if n else 0
    offsets = np.arange(width, dtype=np.int64)
    mask = offsets[None, :] < segments[:, 2:3]
    step_ids = starts[segments[:, 0]][:, None] + segments[:, 1:2] + offsets[None, :]
    unique, inverse = np.unique(step_ids[mask], return_inverse=True)
    rewards = _step_rewards(members, pairs.store, starts, unique, chunk_steps)  # (K, U)
    per_step = np.zeros((len(rewards), 2 * n, width))
    per_step[:, mask] = rewards[:, inverse.ravel()]
    returns = per_step.sum(axis=-1)
    return returns[:, :n] - returns[:, n:]


def _step_rewards(members: Members, store: TrajectoryStore, starts: np.ndarray,
                  step_ids: np.ndarray, chunk_steps: int) -> np.ndarray:
    """Every member's reward of the store's steps ``step_ids`` (flat, ``starts`` each
    trajectory's first): ``(K, len(step_ids))`` float64."""
    trajs = np.searchsorted(starts, step_ids, side="right") - 1
    within = step_ids - starts[trajs]
    chunks = []
    for first in range(0, len(step_ids), chunk_steps):
        rows = slice(first, first + chunk_steps)
        steps = store.gather_steps(trajs[rows], within[rows], np.ones(len(within[rows]), np.int64))
        arrays = [steps[name][:, 0] for name in _BATCH_FIELDS]
        chunks.append(_member_step_rewards(members, arrays))
    if not chunks:
        return np.zeros((_count(members), 0))
    return np.concatenate(chunks, axis=1)


def _member_step_rewards(members: Members, arrays: list[np.ndarray]) -> np.ndarray:
    """``(K, n)`` float64 rewards of ``n`` steps (``obs, acts, next_obs, dones`` arrays)."""
    if isinstance(members, (RewardEnsemble, RewardNet)):
        reads = set(members.spec.inputs)
        given = [array if name in reads else None
                 for name, array in zip(INPUT_NAMES, arrays, strict=True)]
        with torch.inference_mode():
            tensors = numpy_to_tensors(members, *given)
            if isinstance(members, RewardEnsemble):
                rewards = members.member_rewards(*tensors)
            else:
                rewards = members(*tensors)[None]
            return rewards.to(torch.float64).cpu().numpy()
    return np.stack([np.asarray(m(*arrays), np.float64).reshape(len(arrays[0]))
                     for m in members])


def _as_model(members: Members) -> RewardEnsemble | RewardNet | None:
    """The torch model behind ``members``, or None when they are other reward functions."""
    if isinstance(members, (RewardEnsemble, RewardNet)):
        return members
    nets = [m.module for m in members if isinstance(m, TorchRewardFn)]
    if not members or len(nets) != len(members) or not all(isinstance(n, RewardNet) for n in nets):
        return None
    return cast(RewardNet, nets[0]) if len(nets) == 1 else RewardEnsemble(
        [cast(RewardNet, net) for net in nets])


def _top(scores: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """The ``n`` highest scores; ties broken at random so equal scores are not order-biased."""
    order = np.lexsort((rng.random(len(scores)), -scores))
    return np.sort(order[: min(n, len(scores))])


class UniformSelector:
    """Pairs drawn uniformly at random, without replacement."""

    def select(self, candidates: SegmentPairs, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.sort(rng.choice(len(candidates), size=min(n, len(candidates)), replace=False))


class DisagreementSelector:
    """Pairs on which ensemble members disagree most (std of their preference probabilities).

    Args:
        members: a ``RewardEnsemble`` or reward functions of at least two members (torch nets
            are scored in batched passes).

    Raises:
        ConfigError: when there are fewer than two members.
    """

    def __init__(self, members: Members) -> None:
        self.members = _as_model(members) or members
        if _count(self.members) < 2:
            raise ConfigError("disagreement needs an ensemble of at least two members")

    def select(self, candidates: SegmentPairs, n: int, rng: np.random.Generator) -> np.ndarray:
        return _top(preference_probabilities(self.members, candidates).std(axis=0), n, rng)


class EntropySelector:
    """Pairs whose predicted preference is closest to a coin flip (highest binary entropy).

    The prediction is the members' mean ``P(left > right)``.

    Args:
        members: a reward net, a ``RewardEnsemble`` or reward functions (torch nets are scored
            in batched passes).
    """

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

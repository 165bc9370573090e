"""Reward models and the trajectories they learn from, for tests of training: MLP nets and
ensembles over (obs 4, act 2) with a linear true reward, and CNN nets over frame stacks whose
reward is a patch's brightness."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from rlkit.data import SegmentPairs, Trajectory, TrajectoryStore, sample_segments
from rlkit.reward import RewardEnsemble, RewardNet, RewardNetSpec, build_reward_net

TRUE_WEIGHTS = np.array([1.0, -0.5, 0.8, 0.0, 0.6, -1.0], np.float32)  # over (obs 4, act 2)
STACK = spaces.Box(0, 255, (9, 16, 16), np.uint8)  # 3 stacked 16 x 16 RGB frames, channel-first
ACTIONS = spaces.Box(-1, 1, (2,), np.float32)


def linear_store() -> TrajectoryStore:
    """12 random trajectories of 60 steps whose true reward is linear in (obs, act): TRUE_WEIGHTS.

    Returns:
        The store (seeded: the same every call).
    """
    rng = np.random.default_rng(0)
    store = TrajectoryStore()
    for _ in range(12):
        obs = rng.normal(size=(61, 4)).astype(np.float32)
        acts = rng.uniform(-1, 1, size=(60, 2)).astype(np.float32)
        store.append(Trajectory(obs, acts, np.concatenate([obs[:-1], acts], 1) @ TRUE_WEIGHTS))
    return store


def small_net(seed: int = 0, hidden: tuple[int, ...] = (32,)) -> RewardNet:
    """An MLP reward net over (obs 4, act 2).

    Args:
        seed: seeds its initial weights.
        hidden: its hidden layer widths.

    Returns:
        The net.
    """
    return RewardNet(RewardNetSpec("mlp", (4,), (2,), hidden=hidden), seed=seed)


def ensemble(hidden: tuple[tuple[int, ...], ...] = ((16, 16),) * 3) -> RewardEnsemble:
    """An ensemble of MLP reward nets over (obs 4, act 2), member ``i`` seeded ``i``.

    Args:
        hidden: each member's hidden layer widths (one entry per member).

    Returns:
        The ensemble.
    """
    return RewardEnsemble([RewardNet(RewardNetSpec("mlp", (4,), (2,), hidden=h), seed=i)
                           for i, h in enumerate(hidden)])


def mixed_length_pairs(store: TrajectoryStore, n: int, seed: int) -> SegmentPairs:
    """Half the pairs compare 5-step segments, half 10-step ones (padded in a batch).

    Args:
        store: where the segments come from.
        n: how many pairs (even).
        seed: seeds the sampling.

    Returns:
        The pairs, the 5-step ones first.
    """
    rng = np.random.default_rng(seed)
    left, right = ([sample_segments(store, n // 2, length, rng) for length in (5, 10)]
                   for _ in range(2))
    return SegmentPairs(store, np.concatenate(left), np.concatenate(right))


def region_store(n_trajectories: int, rng: np.random.Generator) -> TrajectoryStore:
    """Frame stacks ``(9, 16, 16)`` of noise frames with a 4x4 patch of random brightness; the
    reward of a step is the brightness of the patch in the newest frame of its observation.

    Args:
        n_trajectories: how many trajectories (20 steps each).
        rng: where the frames, brightnesses and actions come from.

    Returns:
        The store.
    """
    store = TrajectoryStore()
    for _ in range(n_trajectories):
        frames = rng.integers(0, 100, size=(23, 3, 16, 16), dtype=np.uint8)
        frames[:, :, 2:6, 2:6] = rng.integers(0, 256, size=(23, 1, 1, 1), dtype=np.uint8)
        stacks = np.stack([frames[t:t + 3].reshape(9, 16, 16) for t in range(21)])
        rewards = stacks[:-1, -3:, 2:6, 2:6].mean((1, 2, 3)) / 255.0
        store.append(Trajectory(stacks, rng.uniform(-1, 1, (20, 2)).astype(np.float32), rewards))
    return store


def conv_net(seed: int = 0, encoder: str = "compact") -> RewardNet:
    """A CNN reward net over STACK observations only.

    Args:
        seed: seeds its initial weights.
        encoder: ``compact`` (two conv layers) or another encoder name (four conv layers).

    Returns:
        The net.
    """
    channels = (8, 16) if encoder == "compact" else (16, 16, 16, 16)
    return build_reward_net(STACK, ACTIONS, inputs=("obs",), hidden=(32,), channels=channels,
                            encoder=encoder, seed=seed)

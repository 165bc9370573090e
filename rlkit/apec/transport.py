"""The optimal-transport distance of a rollout to the demonstrations, as APEC's reference
computes it (apec_mjc/utils/replay_buffer.py:433-471): a cosine cost between states, an entropic
Sinkhorn plan, in the reference's units (``OT_SCALE``). ``rlkit.apec.pairs`` filters pairs by it.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from rlkit.extras import extra

with extra("apec"):
    import ot

from rlkit.apec.pair_config import OT_SCALE
from rlkit.data.absorbing import is_absorbing
from rlkit.data.store import TrajectoryStore
from rlkit.data.trajectory import Trajectory
from rlkit.errors import InvalidDataError

__all__ = ["COSINE_EPS", "block_mean", "demo_ot_distances", "real_states", "reference_ot_distance"]

COSINE_EPS = 1e-4
"""Added to every state before the cosine cost, as the reference (replay_buffer.py:19,462)."""


def real_states(trajectory: Trajectory, absorbing_flag: bool = False, downsample: int = 1) -> np.ndarray:
    """The states an action was taken in, flattened; with ``absorbing_flag`` (the last entry of
    a fixed-horizon observation, ``envs.fixed_horizon``) the absorbing ones and the flag dropped,
    as the reference's rollouts end at termination (utils/epsilon_utils.py:179-199).

    Pixel observations (channel-first stacks ``(C, H, W)``) flatten whole, raw uint8 values, as
    the reference's pixel pipeline does (apec_dmc/src/data_scripts/make_pref_dataset.py:45-51,
    ``reshape_traj``); ``downsample`` > 1 first averages each channel over ``downsample`` x
    ``downsample`` blocks (``block_mean``), a cheaper cost matrix."""
    obs = trajectory.obs[:-1]
    if downsample > 1:
        obs = block_mean(obs, downsample)
    states = obs.reshape(len(trajectory), -1).astype(np.float64)
    if absorbing_flag:
        states = states[~is_absorbing(states), :-1]
    return states


def block_mean(frames: np.ndarray, factor: int) -> np.ndarray:
    """Channel-first frames averaged over ``factor`` x ``factor`` pixel blocks.

    Args:
        frames: ``(n, C, H, W)`` observations.
        factor: the block side; ``H`` and ``W`` must be multiples of it.

    Returns:
        ``(n, C, H // factor, W // factor)`` float64 block means.

    Raises:
        InvalidDataError: when the observations are not ``(n, C, H, W)`` or their sides are not
            multiples of ``factor``.
    """
    if frames.ndim != 4 or frames.shape[2] % factor or frames.shape[3] % factor:
        raise InvalidDataError(f"ot_downsample={factor} needs (n, C, H, W) frames whose sides are "
                               f"multiples of it, got shape {frames.shape}")
    n, c, h, w = frames.shape
    blocks = frames.reshape(n, c, h // factor, factor, w // factor, factor)
    return blocks.mean(axis=(3, 5), dtype=np.float64)


def reference_ot_distance(states: np.ndarray, demo_states: np.ndarray, reg: float = 0.01,
                          iterations: int = 100) -> float:
    """The reference's ``ot_distance * 1000`` (apec_mjc/utils/replay_buffer.py:433-470): cosine
    cost C on states + 1e-4, P = ``ot.sinkhorn`` with uniform weights, ``mean_i (P C^T)_ii * 1000``
    = ``<P, C> * 1000 / n`` for ``n`` states (``<P, C>`` itself for n = 1000).

    Args:
        states: a rollout's real states, ``(n, d)`` (``real_states``).
        demo_states: one demo's real states, ``(m, d)``.
        reg: Sinkhorn's entropic regularisation (the reference's 0.01).
        iterations: Sinkhorn's iteration cap (the reference's 100; it often stops short of
            convergence, as the reference's does, and the warning is silenced).

    Returns:
        The distance, in the reference's units (``OT_SCALE`` = 1000 times the mean).

    Raises:
        InvalidDataError: when either side has no state.
    """
    if len(states) == 0 or len(demo_states) == 0:
        raise InvalidDataError("an OT distance needs at least one real state on each side")
    x, y = states + COSINE_EPS, demo_states + COSINE_EPS
    norms = np.linalg.norm(x, axis=1)[:, None] * np.linalg.norm(y, axis=1)[None, :]
    cost = 1.0 - (x @ y.T) / norms
    a = np.full(len(x), 1.0 / len(x))
    b = np.full(len(y), 1.0 / len(y))
    with warnings.catch_warnings():  # 100 iterations often stop short of convergence, as there
        warnings.simplefilter("ignore", UserWarning)
        plan = ot.sinkhorn(a, b, cost, reg, numItermax=iterations).astype(np.float32)
    return float(np.mean(np.sum(plan * cost, axis=1)) * OT_SCALE)


def demo_ot_distances(
    store: TrajectoryStore, demos: Sequence[Trajectory], reg: float = 0.01, iterations: int = 100,
    absorbing_flag: bool = False, downsample: int = 1,
) -> np.ndarray:
    """Each trajectory's ``reference_ot_distance`` to the demos, averaged over the demos as the
    reference does (replay_buffer.py:467-471); one solve per (trajectory, demo), so pair
    selection never recomputes a distance (the reference solves per candidate pair).

    Args:
        store: the rollouts.
        demos: the demonstrations; their observations shaped like the store's.
        reg: Sinkhorn's entropic regularisation (``PairConfig.ot_reg``).
        iterations: Sinkhorn's iteration cap (``PairConfig.ot_iterations``).
        absorbing_flag: the observations end in the fixed-horizon absorbing flag
            (``envs.fixed_horizon``): absorbing states and the flag are left out on both sides.
        downsample: pixel observations averaged over blocks this wide first (1: as they are,
            the reference's choice; see ``real_states``).

    Returns:
        Each trajectory's mean distance to the demos, float64, shape ``(len(store),)``.

    Raises:
        InvalidDataError: when ``demos`` is empty, their observations are shaped unlike the
            store's, a trajectory or demo has no real state, or ``downsample`` does not divide
            the frames' sides.
    """
    if not demos:
        raise InvalidDataError("demos is empty: the OT filter needs demonstrations")
    for k, demo in enumerate(demos):
        if demo.obs.shape[1:] != store.obs_shape:
            raise InvalidDataError(
                f"demos[{k}].obs rows have shape {demo.obs.shape[1:]}, the rollouts' have "
                f"{store.obs_shape}"
            )
    demo_states = [real_states(d, absorbing_flag, downsample) for d in demos]
    distances = np.empty(len(store))
    for k, trajectory in enumerate(store):
        states = real_states(trajectory, absorbing_flag, downsample)
        distances[k] = np.mean([reference_ot_distance(states, d, reg, iterations) for d in demo_states])
    return distances

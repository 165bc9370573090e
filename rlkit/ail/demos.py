"""Demonstrations as ``Trajectory`` lists: from an ``.npz`` file, from a policy, or given; checked
against the env before any training, so a mismatch fails here and not deep inside torch."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv

from rlkit.data import Trajectory, TrajectoryStore, collect_trajectories
from rlkit.data.rollout import ActionFn, Predictor
from rlkit.errors import InvalidDataError
from rlkit.reward.nets import action_shape, observation_shape


def load_demos(path: str | os.PathLike[str]) -> list[Trajectory]:
    """Every trajectory of a ``TrajectoryStore`` file.

    Args:
        path: an ``.npz`` that ``save_demos`` (or ``TrajectoryStore.save``) wrote.

    Returns:
        The trajectories, in the file's order.

    Raises:
        FileFormatError: when the file is missing, damaged or not a trajectory store.
    """
    return list(TrajectoryStore.load(path))


def save_demos(demos: Sequence[Trajectory], path: str | os.PathLike[str], frame_stack: int = 1) -> Path:
    """Write demos as one ``.npz`` (atomic, no pickle).

    Args:
        demos: the demonstrations to write.
        path: the file (``.npz`` is added).
        frame_stack: frames per observation of stacked pixel demos (each frame is written once);
            1 for observations stored as they come.

    Returns:
        The path written.

    Raises:
        InvalidDataError: when ``demos`` is empty.
    """
    if not demos:
        raise InvalidDataError("demos is empty: nothing to save")
    store = TrajectoryStore(frame_stack=frame_stack)
    store.extend(demos)
    return store.save(path)


def demos_from_policy(venv: VecEnv, policy: Predictor | ActionFn, n_episodes: int,
                      rng: np.random.Generator, deterministic: bool = True,
                      seed: int | None = None) -> list[Trajectory]:
    """``n_episodes`` whole episodes of an SB3 model/policy or a callable on a VecEnv.

    Args:
        venv: the env to roll out in; it is reset.
        policy: an SB3 model or policy (``predict``), or a callable from a batch of observations
            to a batch of actions.
        n_episodes: how many finished episodes to keep (the first to finish).
        rng: passed to the collector, which draws from it only for random actions (never with a
            given policy).
        deterministic: passed to ``predict`` (a callable ignores it).
        seed: seeds ``venv`` before the reset (``None``: not reseeded).

    Returns:
        ``n_episodes`` trajectories, in the order they finished.

    Raises:
        InvalidDataError: when ``n_episodes`` < 1, on dict observations or a non-finite reward.
    """
    if n_episodes < 1:
        raise InvalidDataError(f"n_episodes must be >= 1, got {n_episodes}")
    trajectories = collect_trajectories(venv, policy, rng, n_episodes=n_episodes,
                                        deterministic=deterministic, seed=seed)
    return trajectories[:n_episodes]


def check_demos(demos: Sequence[Trajectory], observation_space: spaces.Space,
                action_space: spaces.Space) -> None:
    """Raise InvalidDataError unless the demos are non-empty and shaped like the env's spaces.

    Args:
        demos: the demonstrations.
        observation_space: the env's observation space (a Box).
        action_space: the env's action space (Box, or Discrete starting at 0).

    Raises:
        InvalidDataError: when ``demos`` is empty, a demo's observation or action rows do not have
            the spaces' shapes, a discrete action is outside ``0..n - 1``, or a space is of a
            kind reward nets do not support.
    """
    if not demos:
        raise InvalidDataError("demos is empty: adversarial imitation needs demonstrations")
    obs_shape = observation_shape(observation_space)
    act_shape, n_actions = action_shape(action_space)
    for i, demo in enumerate(demos):
        if demo.obs.shape[1:] != obs_shape:
            raise InvalidDataError(f"demos[{i}].obs rows have shape {demo.obs.shape[1:]}, "
                                   f"the env's observation_space has {obs_shape}")
        if demo.acts.shape[1:] != act_shape:
            raise InvalidDataError(f"demos[{i}].acts rows have shape {demo.acts.shape[1:]}, "
                                   f"the env's action_space has {act_shape}")
        if n_actions is not None and ((demo.acts < 0) | (demo.acts >= n_actions)).any():
            raise InvalidDataError(f"demos[{i}].acts has actions outside 0..{n_actions - 1}")

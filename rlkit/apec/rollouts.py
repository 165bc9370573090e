"""Rollouts of every AIL checkpoint into one store, tagged with the checkpoint they came from.

APEC's labels come from the checkpoint index alone, so each trajectory must carry it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import numpy as np
import torch
from stable_baselines3.common.vec_env import VecEnv

from rlkit.ail.checkpoints import CheckpointStore
from rlkit.apec.pair_config import RolloutConfig
from rlkit.data.absorbing import is_absorbing
from rlkit.data.rollout import ActionFn, Predictor, collect_trajectories
from rlkit.data.store import TrajectoryStore
from rlkit.data.trajectory import Trajectory
from rlkit.errors import InvalidDataError
from rlkit.types import TaskMap

DEFAULT_ROLLOUTS = RolloutConfig()
T = TypeVar("T")
R = TypeVar("R")


def policy_rollouts(
    policies: Iterable[tuple[int, Predictor | ActionFn]],
    venv: VecEnv,
    rng: np.random.Generator,
    config: RolloutConfig = DEFAULT_ROLLOUTS,
) -> tuple[TrajectoryStore, np.ndarray]:
    """Roll out each ``(index, policy)``; returns the store and each trajectory's index.

    ``policies`` may be a lazy iterable, so only one checkpoint's policy is in memory at a time.
    Episodes are taken in the order they finish; with a fixed horizon (APEC's setting) that
    order carries no bias toward short episodes.

    Args:
        policies: ``(index, policy)`` pairs: the label each trajectory carries, and an SB3
            model/policy or a callable from a batch of observations to a batch of actions.
        venv: the env to roll out in; reseeded with ``config.seed + k`` for the k-th policy.
        rng: passed to the collector (it draws only random actions, never with a given policy).
        config: ``per_checkpoint`` finished episodes per policy, ``deterministic`` actions or
            sampled ones, and the base ``seed``.

    Returns:
        The store of every trajectory, and each trajectory's index (int64, one per trajectory, in
        store order).

    Raises:
        InvalidDataError: when ``policies`` is empty.
    """
    store = TrajectoryStore()
    indices: list[int] = []
    for k, (index, policy) in enumerate(policies):
        trajectories = collect_trajectories(
            venv, policy, rng, n_episodes=config.per_checkpoint,
            deterministic=config.deterministic, seed=config.seed + k,
        )[: config.per_checkpoint]
        store.extend(trajectories)
        indices.extend([index] * len(trajectories))
    if not indices:
        raise InvalidDataError("policies is empty: no checkpoint to roll out")
    return store, np.asarray(indices, dtype=np.int64)


def checkpoint_rollouts(
    checkpoints: CheckpointStore,
    venv: VecEnv,
    rng: np.random.Generator,
    config: RolloutConfig = DEFAULT_ROLLOUTS,
    rounds: Sequence[int] | None = None,
) -> tuple[TrajectoryStore, np.ndarray]:
    """Rollouts of every stored round (or the given ``rounds``); indices are the AIL round numbers.

    Args:
        checkpoints: the AIL run's checkpoint store; one round's generator is loaded at a time.
        venv: the env to roll out in (see ``policy_rollouts``).
        rng: passed to the collector (see ``policy_rollouts``).
        config: episodes per checkpoint, deterministic or not, and the base seed.
        rounds: the rounds to roll out, in order (``None``: every saved round). ``max_checkpoints``
            is not applied here: the caller picks the rounds.

    Returns:
        The store, and each trajectory's AIL round (int64, one per trajectory).

    Raises:
        InvalidDataError: when there is no round to roll out.
        FileFormatError: when a round's checkpoint is missing or damaged.
    """
    rounds = list(checkpoints.rounds() if rounds is None else rounds)
    if not rounds:
        raise InvalidDataError(f"checkpoints: no saved rounds under {checkpoints.root}")
    lazy = ((r, checkpoints.load(r).generator) for r in rounds)
    return policy_rollouts(lazy, venv, rng, config)


# --- rollouts as independent tasks -------------------------------------------------------------
# Each task loads its own policy from disk, builds its own env and seeds everything it samples
# from (config seed, policy index) alone, so the result does not depend on where the tasks run or
# in which order: one process (``sequential_map``), a process pool or Ray (``rlkit.scale.tasks``).

PolicyLoader = Callable[[], "Predictor | ActionFn | None"]
VenvFactory = Callable[[int], VecEnv]


def sequential_map(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """The default ``TaskMap``: every item in this process, in order.

    Args:
        fn: the task function.
        items: its inputs.

    Returns:
        ``[fn(item) for item in items]``.
    """
    return [fn(item) for item in items]


@dataclass(frozen=True)
class RolloutTask:
    """One policy's rollouts: ``load()`` gives the policy (``None``: random actions),
    ``make_venv(seed)`` the env; ``index`` labels the trajectories and, with ``seed``, seeds them.
    Every field must pickle (top-level functions, ``functools.partial`` of them)."""

    index: int
    load: PolicyLoader
    make_venv: VenvFactory
    episodes: int
    deterministic: bool = False
    seed: int = 0


def task_seeds(seed: int, index: int) -> tuple[int, int, int]:
    """The env seed, the action generator's seed and torch's seed of the task ``(seed, index)``.

    Args:
        seed: the base seed (the run's, offset per stage).
        index: the policy's index (an AIL round, a demonstrator checkpoint's number).

    Returns:
        Three independent seeds drawn from ``SeedSequence([seed, index])``.
    """
    env, actions, torch_seed = np.random.SeedSequence([seed, index]).generate_state(3)
    return int(env), int(actions), int(torch_seed)


def run_rollout_task(task: RolloutTask) -> list[Trajectory]:
    """Roll one task's policy out; torch's global RNG (SB3's sampled actions) is seeded for the task
    and restored afterwards, so tasks in one process do not disturb each other or the caller.

    Args:
        task: what to roll out (see ``RolloutTask``).

    Returns:
        ``task.episodes`` finished episodes, in the order they finished.
    """
    env_seed, action_seed, torch_seed = task_seeds(task.seed, task.index)
    with torch.random.fork_rng(devices=[]):  # loading a model draws from it too (its init)
        torch.manual_seed(torch_seed)
        policy = task.load()
        venv = task.make_venv(env_seed)
        try:
            return collect_trajectories(
                venv, policy, np.random.default_rng(action_seed), n_episodes=task.episodes,
                deterministic=task.deterministic, seed=env_seed)[: task.episodes]
        finally:
            venv.close()


def empty_store(frame_stack: int = 1) -> TrajectoryStore:
    """A store for trajectories whose observations stack ``frame_stack`` frames (each frame kept
    once; 1: vector observations, every row as it is).

    Args:
        frame_stack: frames per observation (``envs.pixels.StackFrames``' k).

    Returns:
        The empty store.
    """
    return TrajectoryStore(frame_stack=frame_stack)


def rollout_tasks(tasks: Sequence[RolloutTask], task_map: TaskMap = sequential_map,
                  frame_stack: int = 1) -> tuple[TrajectoryStore, np.ndarray]:
    """Run every task through ``task_map`` and gather the trajectories in task order.

    Args:
        tasks: the rollouts to run.
        task_map: how to run them (``sequential_map``, or a pool's or Ray's map); the result is
            the same whichever runs them.
        frame_stack: frames per observation of a pixel task (the store keeps each frame once).

    Returns:
        The store of every trajectory and each one's task ``index`` (int64, in store order).

    Raises:
        InvalidDataError: when ``tasks`` is empty.
    """
    if not tasks:
        raise InvalidDataError("tasks is empty: no policy to roll out")
    store, indices = empty_store(frame_stack), []
    for task, trajectories in zip(tasks, task_map(run_rollout_task, list(tasks)), strict=True):
        store.extend(trajectories)
        indices.extend([task.index] * len(trajectories))
    return store, np.asarray(indices, dtype=np.int64)


def load_generator(root: str, round_index: int) -> Predictor:
    """The generator of one saved AIL round (a ``RolloutTask.load`` through ``functools.partial``).

    Args:
        root: the ``CheckpointStore``'s folder.
        round_index: the round.

    Returns:
        The round's generator (an SB3 model).
    """
    generator: Predictor = CheckpointStore(root).load(round_index).generator
    return generator


def random_policy() -> None:
    """The ``RolloutTask.load`` of random actions.

    Returns:
        ``None``, which the collector takes as uniform random actions.
    """
    return None


def checkpoint_tasks(checkpoints: CheckpointStore, rounds: Sequence[int], make_venv: VenvFactory,
                     config: RolloutConfig = DEFAULT_ROLLOUTS) -> list[RolloutTask]:
    """One ``RolloutTask`` per round: it loads that round's generator from disk itself.

    Args:
        checkpoints: the AIL run's checkpoint store.
        rounds: the rounds, in order (their numbers label the trajectories).
        make_venv: a picklable env factory (seed -> ``VecEnv``).
        config: episodes per checkpoint, deterministic or not, and the base seed.

    Returns:
        The tasks, in ``rounds`` order.
    """
    return [RolloutTask(int(r), partial(load_generator, str(checkpoints.root), int(r)), make_venv,
                        config.per_checkpoint, config.deterministic, config.seed) for r in rounds]


def real_part(trajectory: Trajectory) -> Trajectory:
    """A trajectory played in ``envs.fixed_horizon.FixedHorizon`` (the last observation entry
    flags the absorbing state) cut where its task terminated: the transitions into real states, as
    the same episode played with ``pad=False`` holds them; one that never terminated is returned
    whole. (Here, not in ``envs``: the envs package sits below ``rlkit.data``.)

    Args:
        trajectory: a padded trajectory of a vector task.

    Returns:
        Its real part, ``terminal`` when it was cut.
    """
    absorbing = np.flatnonzero(is_absorbing(trajectory.obs[1:]))
    if not len(absorbing):
        return trajectory
    n = int(absorbing[0])  # transitions before the first one into an absorbing state
    if n == 0:
        raise InvalidDataError("a trajectory that starts in an absorbing state has no real part")
    return Trajectory(obs=trajectory.obs[: n + 1], acts=trajectory.acts[:n], rews=trajectory.rews[:n],
                      terminal=True)

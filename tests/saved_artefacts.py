"""One saved artefact of each plain kind (an agent, a reward model, trajectories, a preference
dataset), each with the files it wrote, the headers among them, and how it is loaded back."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

from rlkit.data import Trajectory, TrajectoryStore, sample_pairs
from rlkit.feedback import PreferenceDataset

Made = tuple[list[Path], list[Path], Callable[[], object]]  # files written, headers among them, load


def trajectories(n: int = 4, length: int = 12) -> list[Trajectory]:
    """Trajectories of normal noise: obs of 3 features, actions of 2, noise rewards.

    Args:
        n: how many.
        length: steps in each.

    Returns:
        The trajectories (the same ones on each call).
    """
    rng = np.random.default_rng(0)
    return [Trajectory(obs=rng.normal(size=(length + 1, 3)).astype(np.float32),
                       acts=rng.normal(size=(length, 2)).astype(np.float32),
                       rews=rng.normal(size=length).astype(np.float32), terminal=False)
            for _ in range(n)]


def make_agent(root: Path) -> Made:
    """Save an untrained CartPole PPO agent under ``root``.

    Args:
        root: the folder it is saved in.

    Returns:
        The files written, the headers among them, and a loader of the agent.
    """
    from rlkit.factories.algorithms import ALGORITHMS
    from rlkit.persistence.agents import load_agent, save_agent

    agent = PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=1, seed=0), n_steps=16, batch_size=16,
                seed=0)
    path = save_agent(agent, root / "agent")
    return [path, root / "agent.json"], [root / "agent.json"], lambda: load_agent(ALGORITHMS, path)


def make_reward_model(root: Path) -> Made:
    """Save an untrained reward net (obs of 3, actions of 2) in ``root``.

    Args:
        root: the folder it is saved in.

    Returns:
        The files written, the headers among them, and a loader of the model.
    """
    from rlkit.reward import build_reward_net, load_reward_model, save_reward_model

    box = spaces.Box(-1, 1, (3,), np.float32)
    save_reward_model(build_reward_net(box, spaces.Box(-1, 1, (2,), np.float32), seed=0), root)
    return ([root / "model.safetensors", root / "model.json"], [root / "model.json"],
            lambda: load_reward_model(root))


def make_trajectories(root: Path) -> Made:
    """Save a store of :func:`trajectories` under ``root``.

    Args:
        root: the folder it is saved in.

    Returns:
        The file written, no headers, and a loader of the store.
    """
    store = TrajectoryStore()
    store.extend(trajectories())
    path = store.save(root / "trajectories")
    return [path], [], lambda: TrajectoryStore.load(path)


def make_preferences(root: Path) -> Made:
    """Save six labelled pairs of :func:`trajectories` under ``root``.

    Args:
        root: the folder it is saved in.

    Returns:
        The files written, the header among them, and a loader of the dataset.
    """
    store = TrajectoryStore()
    store.extend(trajectories())
    dataset = PreferenceDataset(store)
    dataset.append(sample_pairs(store, 6, 5, np.random.default_rng(1)), np.ones(6), source="t")
    npz, meta = dataset.save(root / "prefs")
    return [npz, meta], [meta], lambda: PreferenceDataset.load(root / "prefs")

"""InvertedPendulum steps recorded with their MuJoCo states, and pairs of them asked of people whose
videos render behind a gate (what a page shows while the render worker is busy)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
from stable_baselines3.common.env_util import make_vec_env

from rlkit.data import SegmentPairs, Trajectory, TrajectoryStore, collect_trajectories
from rlkit.data.sim_state import RecordStates
from rlkit.human import HumanTeacher, HumanTeacherConfig, LabelStore
from rlkit.human.render import MujocoRenderer

os.environ.setdefault("MUJOCO_GL", "egl")  # headless software rendering (see STACK_NOTES)
ENV = "InvertedPendulum-v5"


def pendulum_trajectories(n_steps: int = 60, length: int = 8) -> list[Trajectory]:
    """Random InvertedPendulum steps with their MuJoCo states, cut into pieces of ``length``.

    Args:
        n_steps: steps collected (over two envs).
        length: steps in each piece; shorter remainders are dropped.

    Returns:
        The pieces.
    """
    venv = make_vec_env(ENV, n_envs=2, seed=0, wrapper_class=RecordStates)
    trajectories = collect_trajectories(venv, None, np.random.default_rng(0), n_steps=n_steps,
                                        max_length=length)
    return [t for t in trajectories if len(t) == length]


class GatedRenderer(MujocoRenderer):
    """Renders only once ``gate`` is set: the state a page sees while the worker is busy."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__(ENV)
        self.gate = gate

    def __call__(self, states: np.ndarray) -> np.ndarray:
        assert self.gate.wait(60)
        return super().__call__(states)


def mujoco_pairs(tmp_path: Path, gate: threading.Event) -> tuple[HumanTeacher, SegmentPairs, np.ndarray]:
    """Two InvertedPendulum pairs asked of people, their videos rendering behind ``gate``.

    Args:
        tmp_path: the run directory (label store and media).
        gate: the renderer waits for it before each video.

    Returns:
        The teacher that asked, the pairs, and their query ids.
    """
    trajectories = pendulum_trajectories()
    store = TrajectoryStore()
    store.extend(trajectories)
    pairs = SegmentPairs(store, np.array([[0, 0, 6], [2, 1, 6]]), np.array([[1, 2, 6], [0, 0, 6]]))
    teacher = HumanTeacher(LabelStore(tmp_path), HumanTeacherConfig(wait=False, fps=5),
                           media_dir=tmp_path / "media", renderer=GatedRenderer(gate))
    teacher.label(pairs)
    return teacher, pairs, teacher.store.add_queries(pairs)

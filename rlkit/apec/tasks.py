"""Which tasks APEC runs from pixels, and their envs: uint8 frames stacked channel-first.

A pixel task's observation is ``envs.pixels.StackFrames``' ``(k * 3, H, W)`` uint8 stack; every
network that reads it (discriminator, generator, reward model, D-REX's BC policy) divides by 255
itself, and every ``TrajectoryStore`` of its trajectories is built with ``frame_stack=k`` so each
frame is stored once.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from envs.dmc import DMC_ENV_IDS
from envs.pixels import PIXEL_ENV_IDS, make_pixel_env


def pixel_task_ids() -> tuple[str, ...]:
    """The ids of the tasks observed as frames.

    Returns:
        The CPU-drawn pixel tasks (``envs.pixels``) and the DMControl ones (``envs.dmc``).
    """
    return PIXEL_ENV_IDS + DMC_ENV_IDS


def is_pixel_task(env_id: str) -> bool:
    """Is ``env_id`` a task observed as frames?

    Args:
        env_id: a gymnasium id.

    Returns:
        True for the ids of ``pixel_task_ids``.
    """
    return env_id in pixel_task_ids()


def make_pixel_task(env_id: str, frame_stack: int, **kwargs: Any) -> gym.Env[Any, Any]:
    """A pixel task's env with its frames stacked channel-first.

    Args:
        env_id: one of ``pixel_task_ids()``.
        frame_stack: frames per observation.
        **kwargs: passed to ``gymnasium.make`` (``size``, ``max_episode_steps``, ...).

    Returns:
        The env; its observations are uint8 ``(frame_stack * 3, H, W)``.
    """
    return make_pixel_env(env_id, frame_stack, **kwargs)

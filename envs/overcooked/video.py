"""Episodes as GIF or MP4 files, for people to watch (M3HF shows rollouts to its human)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import imageio.v2 as imageio
import numpy as np

from envs.overcooked.parallel import OvercookedParallelEnv
from rlkit.errors import ConfigError, InvalidDataError

Policy = Callable[[dict[str, np.ndarray], dict[str, dict[str, Any]]], dict[str, int]]


def write_video(frames: Sequence[np.ndarray], path: str | Path, fps: float = 5.0) -> Path:
    """Write RGB frames to ``path``; the suffix picks the format (.gif or .mp4). Atomic.

    Args:
        frames: ``(H, W, 3)`` uint8 frames, at least one.
        path: the video file; ``.gif`` or ``.mp4`` (H.264).
        fps: frames per second.

    Returns:
        ``path``.

    Raises:
        ConfigError: when the suffix is neither.
        InvalidDataError: when there are no frames.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".gif", ".mp4"):
        raise ConfigError(f"video path must end in .gif or .mp4, got {path.name!r}")
    if not frames:
        raise InvalidDataError("no frames to write")
    partial = path.with_name(f".{path.stem}.partial{path.suffix}")
    if suffix == ".gif":
        imageio.mimwrite(partial, list(frames), duration=1000.0 / fps, loop=0)
    else:
        imageio.mimwrite(partial, list(frames), fps=fps, codec="libx264", macro_block_size=1)
    os.replace(partial, path)
    return path


def record_episode(
    env: OvercookedParallelEnv, policy: Policy, path: str | Path, fps: float = 5.0
) -> dict[str, Any]:
    """Play one episode from ``reset()`` with ``policy(obs, infos) -> actions`` and save it.

    Args:
        env: the game; it is reset.
        policy: maps the agents' observations and infos to one action per agent.
        path: the video file (``.gif`` or ``.mp4``).
        fps: frames per second of the video.

    Returns:
        A dict: ``return`` (the team's), ``steps``, ``delivered`` (whether the dish was
        delivered) and ``path`` (the video file).
    """
    obs, infos = env.reset()
    frames = [env.rgb_frame()]
    total, steps, delivered = 0.0, 0, False
    while env.agents:
        obs, rewards, terminated, _, infos = env.step(policy(obs, infos))
        frames.append(env.rgb_frame())
        total += rewards[env.possible_agents[0]]
        steps += 1
        delivered = any(terminated.values())
    return {"return": total, "steps": steps, "delivered": delivered, "path": write_video(frames, path, fps)}

"""The simulator state behind each step, recorded so people can later watch a segment as video.

Why states and not frames: a MuJoCo state is ``nq + nv`` numbers (24 for Hopper) where a 64x64
frame is 12,288 bytes, and rendering costs ~42 ms a frame here (software EGL) against ~0.1 ms a
step: recording frames during collection would slow every rollout ~400 times and store pixels of
steps nobody will ever label. The state of each step is kept instead, and only the segments that
are queried are rendered, afterwards, in a background worker (``rlkit.human.render``), which
restores each state with the env's ``set_state`` and renders it.

``RecordStates`` puts ``qpos`` and ``qvel`` after each step into ``info[STATE_KEY]``; the rollout
collector and the recorder (``rlkit.data.rollout``, ``rlkit.data.recorder``) keep it as
``Trajectory.states``: row ``t`` is the state after action ``t`` (the state behind ``obs[t + 1]``).
For any env id, ``make_vec_env(env_id, wrapper_class=record_states_if_mujoco)`` records states
where there are MuJoCo states and leaves other envs (whose segments people see as plots) alone.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from rlkit.errors import WrongTypeError

STATE_KEY = "sim_state"


def has_mujoco_state(env: gym.Env) -> bool:
    """Whether ``env`` is a MuJoCo env whose state ``mujoco_state`` can read and ``set_state`` restore."""
    unwrapped = env.unwrapped
    return hasattr(unwrapped, "set_state") and hasattr(getattr(unwrapped, "data", None), "qpos")


def mujoco_state(env: gym.Env) -> np.ndarray:
    """``qpos`` then ``qvel`` of the env's simulator, as one float64 vector."""
    data = env.unwrapped.data  # type: ignore[attr-defined]
    return np.concatenate([data.qpos, data.qvel]).astype(np.float64)


class RecordStates(gym.Wrapper[Any, Any, Any, Any]):
    """Adds the MuJoCo state after every step to ``info[STATE_KEY]``."""

    def __init__(self, env: gym.Env) -> None:
        if not has_mujoco_state(env):
            raise WrongTypeError(
                f"{env.spec.id if env.spec else type(env.unwrapped).__name__} has no MuJoCo state "
                "(unwrapped.data.qpos and set_state) to record"
            )
        super().__init__(env)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, {**info, STATE_KEY: mujoco_state(self.env)}


def record_states_if_mujoco(env: gym.Env) -> gym.Env:
    """``RecordStates(env)`` for a MuJoCo env, any other env as it is."""
    return RecordStates(env) if has_mujoco_state(env) else env


def recorded_states(states: list[np.ndarray | None]) -> list[np.ndarray] | None:
    """The states of a trajectory's steps, or None unless every step recorded one."""
    if not states or any(state is None for state in states):
        return None
    return states  # type: ignore[return-value]

"""Pixel control tasks the CPU renders fast: classic scenes drawn with numpy, for tests and for a
CPU-scale pixel experiment (issue 18).

DMControl from pixels (the APEC paper's cheetah and walker tasks) renders through MuJoCo's
software EGL here at ~42 ms per 64x64 frame; these scenes are drawn from the simulator's state
with a few vectorised numpy operations per frame (tens of microseconds; see
``benchmarks/pixel_envs.py``). Observations are ``uint8`` RGB frames, ``(size, size, 3)``, as
gymnasium's image convention (SB3 transposes them for its ``CnnPolicy``). One frame shows
positions, not velocities: stack frames (as DrQ does, three) to see motion.

- ``rlkit/PixelPendulum-v0``: gymnasium's Pendulum-v1 swing-up (its dynamics and reward), drawn as
  a rod from the pivot; 200 steps.
- ``rlkit/PixelPointMass-v0``: a point mass pushed by a 2-D force towards a target drawn in the
  frame (random per episode), reward minus the distance to it; 200 steps.

``info["state"]`` carries the low-dimensional state behind every frame, for diagnostics only (an
agent learning from pixels must not read it).

``StackFrames(env, k)`` turns any such env's frames into the channel-first stack every pixel
network in rlkit reads: ``(k * C, H, W)`` uint8, oldest frame first (``make_pixel_env`` builds a
task and stacks it in one call).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, SupportsFloat

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.envs.classic_control.pendulum import PendulumEnv

from rlkit.errors import ConfigError, InvalidDataError

__all__ = [
    "KEYPOINT_COLOURS", "PIXEL_ENV_IDS", "Canvas", "PixelPendulum", "PixelPointMass", "StackFrames",
    "make_pixel_env", "register_pixel_envs",
]

PIXEL_ENV_IDS = ("rlkit/PixelPendulum-v0", "rlkit/PixelPointMass-v0")
BACKGROUND = np.array([30, 30, 40], dtype=np.uint8)
ROD, PIVOT = (220, 120, 60), (200, 200, 200)
MASS, TARGET = (230, 200, 70), (60, 180, 90)
# The colours of the moving objects of each task, for a fixed keypoint encoder
# (``rlkit.factories.keypoints.ColourKeypoints``, policy setting ``encoder: keypoints``).
KEYPOINT_COLOURS = {
    "rlkit/PixelPendulum-v0": [list(ROD)],
    "rlkit/PixelPointMass-v0": [list(MASS), list(TARGET)],
}


class Canvas:
    """A square frame over the world square ``[-extent, extent]^2`` (y up), drawn in place.

    Args:
        size: the frame's side in pixels, >= 8.
        extent: half the side of the world square the frame shows, in world units.

    Raises:
        ConfigError: when ``size`` is below 8.
    """

    def __init__(self, size: int, extent: float) -> None:
        if size < 8:
            raise ConfigError(f"frames need at least 8x8 pixels, got size={size}")
        centres = (np.arange(size) + 0.5) / size * 2 * extent - extent
        self.x, self.y = np.meshgrid(centres, centres[::-1])  # row 0 is the top of the world
        self.size = size
        self.pixel = 2 * extent / size
        self.frame = np.empty((size, size, 3), dtype=np.uint8)

    def clear(self) -> None:
        self.frame[:] = BACKGROUND

    def disc(self, centre: np.ndarray, radius: float, colour: tuple[int, int, int]) -> None:
        """Fill the pixels within ``radius`` (at least half a pixel) of ``centre``."""
        radius = max(radius, self.pixel / 2)
        inside = (self.x - centre[0]) ** 2 + (self.y - centre[1]) ** 2 <= radius**2
        self.frame[inside] = colour

    def segment(self, start: np.ndarray, end: np.ndarray, width: float,
                colour: tuple[int, int, int]) -> None:
        """Fill the pixels within ``width / 2`` of the segment from ``start`` to ``end``."""
        direction = end - start
        length2 = float(direction @ direction)
        t = ((self.x - start[0]) * direction[0] + (self.y - start[1]) * direction[1])
        t = np.clip(t / length2, 0.0, 1.0) if length2 > 0 else np.zeros_like(self.x)
        dx = self.x - (start[0] + t * direction[0])
        dy = self.y - (start[1] + t * direction[1])
        half = max(width / 2, self.pixel / 2)
        self.frame[dx * dx + dy * dy <= half * half] = colour


def _image_space(size: int) -> spaces.Box:
    return spaces.Box(0, 255, (size, size, 3), dtype=np.uint8)


class PixelPendulum(gymnasium.Env[np.ndarray, np.ndarray]):
    """Pendulum-v1's dynamics and reward, seen as a frame: the rod (length 1) from the pivot.

    Args:
        size: the frames' side in pixels, >= 8.
        render_mode: ``"rgb_array"`` or None; ``render()`` returns the frame either way.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}

    def __init__(self, size: int = 64, render_mode: str | None = None) -> None:
        self.inner = PendulumEnv()
        self.canvas = Canvas(size, extent=1.25)
        self.observation_space = _image_space(size)
        self.action_space = self.inner.action_space
        self.render_mode = render_mode

    def _draw(self) -> np.ndarray:
        theta = float(self.inner.state[0])
        tip = np.array([np.sin(theta), np.cos(theta)])  # theta = 0 points up
        canvas = self.canvas
        canvas.clear()
        canvas.segment(np.zeros(2), tip, 0.2, ROD)
        canvas.disc(np.zeros(2), 0.08, PIVOT)
        return canvas.frame.copy()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.inner.reset(seed=int(self.np_random.integers(2**31)), options=options)  # one stream
        return self._draw(), {"state": np.array(self.inner.state, dtype=np.float64)}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        _, reward, terminated, truncated, _ = self.inner.step(action)
        return self._draw(), reward, terminated, truncated, {
            "state": np.array(self.inner.state, dtype=np.float64)}

    def render(self) -> np.ndarray:
        return self._draw()

    def episode_state(self) -> dict[str, np.ndarray] | None:
        """Pendulum-v1's state (``rlkit.persistence.env_state``); None before the first reset."""
        from rlkit.persistence.env_state import pendulum_state  # it loads SB3 and torch: not at import

        return pendulum_state(self.inner)

    def load_episode_state(self, state: Mapping[str, np.ndarray]) -> None:
        from rlkit.persistence.env_state import load_pendulum_state

        load_pendulum_state(self.inner, state)


class PixelPointMass(gymnasium.Env[np.ndarray, np.ndarray]):
    """A damped point mass in the square ``[-1, 1]^2`` pushed by a force in ``[-1, 1]^2``, to a
    target placed at random each episode. Reward: minus the distance to the target, minus
    ``0.01 |a|^2``. State: position, velocity, target.

    Args:
        size: the frames' side in pixels, >= 8.
        render_mode: ``"rgb_array"`` or None; ``render()`` returns the frame either way.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}
    dt = 0.05
    damping = 0.5
    max_speed = 2.0

    def __init__(self, size: int = 64, render_mode: str | None = None) -> None:
        self.canvas = Canvas(size, extent=1.1)
        self.observation_space = _image_space(size)
        self.action_space = spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)
        self.render_mode = render_mode
        self.state = np.zeros(6)

    def _draw(self) -> np.ndarray:
        canvas = self.canvas
        canvas.clear()
        canvas.disc(self.state[4:6], 0.15, TARGET)
        canvas.disc(self.state[0:2], 0.1, MASS)
        return canvas.frame.copy()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        position = self.np_random.uniform(-0.8, 0.8, 2)
        target = self.np_random.uniform(-0.8, 0.8, 2)
        self.state = np.concatenate([position, np.zeros(2), target])
        return self._draw(), {"state": self.state.copy()}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        force = np.clip(np.asarray(action, dtype=np.float64).reshape(2), -1.0, 1.0)
        position, velocity, target = self.state[0:2], self.state[2:4], self.state[4:6]
        velocity = np.clip(velocity + (force - self.damping * velocity) * self.dt * 4,
                           -self.max_speed, self.max_speed)
        position = position + velocity * self.dt
        hit_wall = np.abs(position) > 1.0
        position = np.clip(position, -1.0, 1.0)
        velocity = np.where(hit_wall, 0.0, velocity)
        self.state = np.concatenate([position, velocity, target])
        reward = -float(np.linalg.norm(position - target)) - 0.01 * float(force @ force)
        return self._draw(), reward, False, False, {"state": self.state.copy()}

    def render(self) -> np.ndarray:
        return self._draw()

    def episode_state(self) -> dict[str, np.ndarray]:
        """Position, velocity and target (``rlkit.persistence.env_state``)."""
        return {"state": self.state.copy()}

    def load_episode_state(self, state: Mapping[str, np.ndarray]) -> None:
        self.state = np.array(state["state"], dtype=np.float64).reshape(6)


class StackFrames(gymnasium.Wrapper[np.ndarray, Any, np.ndarray, Any],
                  gymnasium.utils.RecordConstructorArgs):
    """The last ``k`` frames of an env of uint8 ``(H, W, C)`` frames as one channel-first uint8
    observation ``(k * C, H, W)``: oldest frame first, the newest in the last ``C`` channels. On
    reset every slot holds the first frame (as DrQ does). Each observation is a fresh array.

    Args:
        env: an env whose observation space is a uint8 Box of shape ``(H, W, C)``.
        k: how many frames to stack (>= 1).
    """

    def __init__(self, env: gymnasium.Env[np.ndarray, Any], k: int = 3) -> None:
        gymnasium.utils.RecordConstructorArgs.__init__(self, k=k)  # env.spec can rebuild the stack
        gymnasium.Wrapper.__init__(self, env)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ConfigError(f"StackFrames: k must be an integer >= 1, got k={k!r}")
        space = env.observation_space
        if not (isinstance(space, spaces.Box) and space.dtype == np.uint8 and len(space.shape) == 3):
            raise ConfigError(
                f"StackFrames needs uint8 frames of shape (H, W, C); the env's observation space is "
                f"{space}")
        self.k = int(k)
        self.channels = space.shape[2]
        low, high = (np.tile(np.transpose(bound, (2, 0, 1)), (self.k, 1, 1))
                     for bound in (space.low, space.high))
        self.observation_space = spaces.Box(low, high, dtype=np.uint8)
        self._stack = np.zeros(self.observation_space.shape, dtype=np.uint8)

    def _frame(self, frame: np.ndarray) -> np.ndarray:
        return np.transpose(np.asarray(frame, dtype=np.uint8), (2, 0, 1))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        frame, info = self.env.reset(seed=seed, options=options)
        self._stack[:] = np.tile(self._frame(frame), (self.k, 1, 1))
        return self._stack.copy(), info

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        frame, reward, terminated, truncated, info = self.env.step(action)
        c = self.channels
        self._stack[:-c] = self._stack[c:].copy()
        self._stack[-c:] = self._frame(frame)
        return self._stack.copy(), reward, terminated, truncated, info

    def episode_state(self) -> dict[str, np.ndarray]:
        """The frames on the stack (``rlkit.persistence.env_state``)."""
        return {"stack": self._stack.copy()}

    def load_episode_state(self, state: Mapping[str, np.ndarray]) -> None:
        stack = np.asarray(state["stack"], dtype=np.uint8)
        if stack.shape != self._stack.shape:
            raise InvalidDataError(f"a stack of shape {stack.shape}, this one is {self._stack.shape}")
        self._stack[:] = stack


def make_pixel_env(env_id: str, frame_stack: int = 3, **kwargs: Any) -> gymnasium.Env[np.ndarray, Any]:
    """A registered pixel task with its frames stacked (channel-first; see ``StackFrames``).

    Args:
        env_id: a gymnasium id whose observations are uint8 ``(H, W, C)`` frames, e.g.
            ``"rlkit/PixelPendulum-v0"`` (the rlkit tasks are registered first).
        frame_stack: frames per observation (>= 1).
        **kwargs: passed to ``gymnasium.make`` (``size``, ``max_episode_steps``, ...).

    Returns:
        The wrapped env.
    """
    register_pixel_envs()
    return StackFrames(gymnasium.make(env_id, **kwargs), frame_stack)


def register_pixel_envs() -> tuple[str, ...]:
    """Add the pixel tasks to gymnasium's registry (idempotent; ``import envs`` calls it).

    Returns:
        The ids registered: ``rlkit/PixelPendulum-v0`` and ``rlkit/PixelPointMass-v0``.
    """
    for env_id in PIXEL_ENV_IDS:
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=f"envs.pixels:{env_id[6:-3]}",
                               max_episode_steps=200)
    return PIXEL_ENV_IDS

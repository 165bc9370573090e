"""DMControl tasks from pixels, the APEC paper's ``cheetah_run``, ``walker_walk`` and ``walker_run``
(issue 18): ``dm_control``'s suite through ``shimmy``'s Gymnasium wrapper, rendered headless.

Settings follow the reference (APEC's ``apec_dmc/src/suite/dmc.py``, which is DrQ-v2's):

- observations: one uint8 RGB frame ``(size, size, 3)``, channel-last like ``envs.pixels``;
  ``size`` 84 by default (the reference's ``height=84, width=84``); stack frames with
  ``envs.pixels.StackFrames`` (the reference stacks 3);
- camera 0 (2 for quadruped, as the reference);
- action repeat 2: an action is applied for 2 control steps and their rewards summed; the frame is
  rendered once, after the last of them (the reference renders outside its repeat wrapper);
- actions: float32 in ``[-1, 1]``, mapped linearly onto the task's bounds (for cheetah and walker
  those are ``[-1, 1]`` already);
- episodes: the suite's 1,000 control steps, 500 agent steps with the repeat of 2 (registered as
  ``max_episode_steps=500``; with another ``action_repeat`` pass ``max_episode_steps`` too);
- seeding: ``reset(seed=s)`` reseeds the task's random state, so one seed gives the same frames.

``info["state"]`` holds the task's low-dimensional observation behind each frame (flattened), for
diagnostics only: an agent learning from pixels must not read it.

Rendering: ``dm_control`` picks its OpenGL backend from ``MUJOCO_GL`` when it is first imported.
This module sets ``MUJOCO_GL=egl`` (headless) when it is unset, just before it imports
``dm_control`` (the first env made); a value already set is kept. Software EGL (Mesa's llvmpipe)
takes ~40-110 ms a frame on a busy 2-core machine, 64x64 and 84x84 alike (``benchmarks/
pixel_envs.py --dmc``): use the numpy tasks of ``envs.pixels`` for CPU-scale runs.
Missing Python packages raise ``MissingExtraError`` (``pip install 'rlkit[dmc]'``); a renderer
that cannot start raises ``ConfigError`` naming the system packages.
"""

from __future__ import annotations

import os
from typing import Any, SupportsFloat

import gymnasium
import numpy as np
from gymnasium import spaces

from rlkit.errors import ConfigError, InvalidDataError
from rlkit.extras import extra

#: rlkit id -> (dm_control domain, task).
DMC_TASKS: dict[str, tuple[str, str]] = {
    "rlkit/dmc-cheetah-run-pixels-v0": ("cheetah", "run"),
    "rlkit/dmc-walker-walk-pixels-v0": ("walker", "walk"),
    "rlkit/dmc-walker-run-pixels-v0": ("walker", "run"),
}
DMC_ENV_IDS = tuple(DMC_TASKS)
#: Debian/Ubuntu packages of a headless EGL renderer (glvnd's loader and Mesa's llvmpipe driver).
EGL_PACKAGES = ("libegl1", "libopengl0", "libegl-mesa0", "libgl1-mesa-dri")
#: domain -> camera id, as the reference zooms in on the quadruped; 0 for every other domain.
CAMERAS = {"quadruped": 2}
EPISODE_STEPS = 1_000  # control steps of a suite episode (cheetah and walker)
ACTION_REPEAT = 2


def _fit_dm_control_to_mujoco() -> None:
    """Drop the entries of ``dm_control``'s table of MjModel/MjData arrays that this MuJoCo lacks.

    dm_control 1.0.50 (the newest) names the arrays of MuJoCo 3.x; MuJoCo 4 removed a few flex
    arrays (``flex_vertedge``, ``flexvert_J``, ...), and building any ``Physics`` then fails on the
    first one. The suite's cheetah and walker have no flexes; where the table and MuJoCo agree this
    changes nothing.
    """
    import mujoco
    from dm_control.mujoco.wrapper.mjbindings import sizes

    model = mujoco.MjModel.from_xml_string("<mujoco/>")
    for struct, instance in (("mjmodel", model), ("mjdata", mujoco.MjData(model))):
        table = sizes.array_sizes[struct]
        for field in [name for name in table if not hasattr(instance, name)]:
            del table[field]


def _load_suite() -> tuple[Any, type]:
    """``dm_control.suite`` and shimmy's wrapper class, with ``MUJOCO_GL`` set first."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    with extra("dmc", "the DMControl pixel tasks"):
        try:
            import dm_control._render  # noqa: F401  (starts the OpenGL backend MUJOCO_GL names)
        except ModuleNotFoundError:
            raise
        except (ImportError, AttributeError, RuntimeError) as error:
            # PyOpenGL without libEGL fails with an AttributeError on a None library
            backend = os.environ["MUJOCO_GL"]
            raise ConfigError(
                f"MuJoCo's renderer could not start with MUJOCO_GL={backend} ({error}). The "
                f"DMControl pixel tasks render headless through EGL: on Debian/Ubuntu install "
                f"{' '.join(EGL_PACKAGES)} (apt-get install), or set MUJOCO_GL=osmesa and install "
                f"libosmesa6") from error
        from dm_control import suite
        from shimmy.dm_control_compatibility import DmControlCompatibilityV0
    _fit_dm_control_to_mujoco()
    return suite, DmControlCompatibilityV0


def _flat(observation: dict[str, np.ndarray]) -> np.ndarray:
    return np.concatenate([np.ravel(value) for value in observation.values()]).astype(np.float64)


class DMCPixels(gymnasium.Env[np.ndarray, np.ndarray]):
    """A ``dm_control`` suite task seen through one rendered frame per (repeated) action.

    Args:
        domain: the suite domain, e.g. ``"cheetah"``.
        task: the domain's task, e.g. ``"run"``.
        size: frame height and width in pixels (84 as the reference).
        action_repeat: control steps per action (2 as the reference for cheetah and walker).
        camera_id: the camera; ``None`` picks the reference's (2 for quadruped, else 0).
        render_mode: ``"rgb_array"`` (``render()`` returns the latest frame) or ``None``.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 50}  # per instance: 1 / (dt * repeat)

    def __init__(self, domain: str, task: str, size: int = 84, action_repeat: int = ACTION_REPEAT,
                 camera_id: int | None = None, render_mode: str | None = None) -> None:
        for name, value in (("size", size), ("action_repeat", action_repeat)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ConfigError(f"DMCPixels: {name} must be a positive integer, got {value!r}")
        if size < 8:
            raise ConfigError(f"DMCPixels: frames need at least 8x8 pixels, got size={size}")
        if render_mode not in (None, "rgb_array"):
            raise ConfigError(f"DMCPixels: render_mode must be 'rgb_array' or None, got {render_mode!r}")
        suite, wrapper = _load_suite()
        if (domain, task) not in suite.ALL_TASKS:
            raise ConfigError(f"DMCPixels: no dm_control suite task {domain}_{task}; known: "
                              f"{sorted(f'{d}_{t}' for d, t in suite.ALL_TASKS)}")
        dm_env = suite.load(domain, task, visualize_reward=False)
        limit = dm_env.physics.model.vis.global_
        if size > min(limit.offwidth, limit.offheight):
            raise ConfigError(f"DMCPixels: size={size} is above {domain}'s offscreen buffer "
                              f"({limit.offwidth}x{limit.offheight})")
        self.camera_id = CAMERAS.get(domain, 0) if camera_id is None else int(camera_id)
        self.inner = wrapper(dm_env, render_mode="rgb_array",
                             render_kwargs={"height": size, "width": size, "camera_id": self.camera_id})
        bounds = self.inner.action_space
        self._low, self._high = bounds.low.astype(np.float64), bounds.high.astype(np.float64)
        self.action_space = spaces.Box(-1.0, 1.0, bounds.shape, dtype=np.float32)
        self.observation_space = spaces.Box(0, 255, (size, size, 3), dtype=np.uint8)
        self.action_repeat = int(action_repeat)
        self.render_mode = render_mode
        self.metadata = {"render_modes": ["rgb_array"],
                         "render_fps": round(1 / (self.inner.dt * self.action_repeat))}
        self._frame = np.zeros(self.observation_space.shape, dtype=np.uint8)

    def _render(self) -> np.ndarray:
        self._frame = np.ascontiguousarray(self.inner.render(), dtype=np.uint8)
        return self._frame.copy()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        observation, _ = self.inner.reset(seed=seed)
        return self._render(), {"state": _flat(observation)}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        action = np.asarray(action, dtype=np.float64)
        if action.shape != self.action_space.shape:
            raise InvalidDataError(f"DMCPixels: action of shape {action.shape}, expected "
                                   f"{self.action_space.shape}")
        control = self._low + (np.clip(action, -1.0, 1.0) + 1.0) / 2.0 * (self._high - self._low)
        observation, first_reward, terminated, truncated, _ = self.inner.step(control)
        reward = float(first_reward)
        for _ in range(self.action_repeat - 1):
            if terminated or truncated:
                break
            observation, step_reward, terminated, truncated, _ = self.inner.step(control)
            reward += float(step_reward)
        return self._render(), reward, terminated, truncated, {"state": _flat(observation)}

    def render(self) -> np.ndarray | None:
        """The latest frame (``render_mode="rgb_array"``), or ``None``."""
        return self._frame.copy() if self.render_mode == "rgb_array" else None

    def close(self) -> None:
        self.inner.close()


def register_dmc_envs() -> tuple[str, ...]:
    """Add the DMControl pixel tasks to gymnasium's registry (idempotent, and cheap: nothing of
    ``dm_control`` is imported until an env is made).

    Returns:
        Their ids, ``rlkit/dmc-<domain>-<task>-pixels-v0``.
    """
    for env_id, (domain, task) in DMC_TASKS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point="envs.dmc:DMCPixels",
                               max_episode_steps=EPISODE_STEPS // ACTION_REPEAT,
                               kwargs={"domain": domain, "task": task})
    return DMC_ENV_IDS

"""Rendering queried segments as the env sees them, in a background thread, ahead of the annotator.

Two renderers, each with what it renders from (``inputs``) and the frames it makes from that:

- ``MujocoRenderer``: a MuJoCo env's recorded simulator states (``Trajectory.states``);
- ``ObservationRenderer``: an env whose observation determines what its ``render()`` draws
  (gymnasium's classic control: Pendulum, CartPole, MountainCar, Acrobot; a custom env with a
  ``state_from_observation(obs)`` method, or one that keeps its observation as ``self.state``),
  from the segment's own observations and actions, so nothing extra is recorded while training.

Any other env's segments are shown as plots of their observations (``rlkit.human.media``).

A MuJoCo frame costs ~42 ms at 64x64 here (software EGL, ``MUJOCO_GL=egl``): a 50-step segment
takes seconds, far too long for a web request or for the trainer to wait on before it can ask. So
``HumanTeacher`` writes each query at once with the plot of its segments, and hands the segments'
simulator states (``Trajectory.states``, see ``rlkit.data.sim_state`` for why states and not
frames) to a ``RenderQueue``: one daemon thread that renders them in the order asked (the first pair
first) and writes each video atomically. The page shows the plot and a "rendering" note until the
video is there, then plays it (``rlkit.human.media.shown_media``). A trainer killed mid-render loses
only unfinished videos, which the resumed run's repeated batch queues again.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from rlkit.data.segments import segment_states
from rlkit.data.store import TrajectoryStore
from rlkit.errors import ConfigError, InvalidDataError
from rlkit.human.media import failed_mark, write_webm

log = logging.getLogger(__name__)


class StateRenderer(Protocol):
    """Turns what a segment keeps (``inputs``) into its video's frames, in the render worker."""

    observation_names: tuple[str, ...] | None  # the plot legend's names; None: obs[0], obs[1]...

    def inputs(self, store: TrajectoryStore, segment: np.ndarray) -> np.ndarray | None:
        """One row a step of what rendering the segment needs, or None if its trajectory lacks it."""

    def __call__(self, inputs: np.ndarray, /) -> np.ndarray:
        """``(length, ...)`` inputs -> ``(length, height, width, 3)`` uint8 frames."""


class MujocoRenderer:
    """Frames of a MuJoCo gymnasium env at recorded states (``qpos`` then ``qvel`` per row).

    The env is made on the first call, in the thread that calls (an EGL context belongs to the
    thread that made it), so give one renderer to one ``RenderQueue``.
    """

    def __init__(self, env_id: str, width: int = 64, height: int = 64, **make_kwargs: Any) -> None:
        if width < 1 or height < 1:
            raise InvalidDataError(f"frame size must be positive, got {width}x{height}")
        self.env_id = env_id
        self.make_kwargs = {"render_mode": "rgb_array", "width": width, "height": height, **make_kwargs}
        self.observation_names: tuple[str, ...] | None = None
        self._env: Any = None

    def inputs(self, store: TrajectoryStore, segment: np.ndarray) -> np.ndarray | None:
        """The simulator states after each of the segment's steps (None if none were recorded)."""
        return segment_states(store, segment)

    def __call__(self, states: np.ndarray) -> np.ndarray:
        import gymnasium

        if self._env is None:
            self._env = gymnasium.make(self.env_id, **self.make_kwargs)
            self._env.reset(seed=0)
        sim = self._env.unwrapped
        nq, nv = sim.model.nq, sim.model.nv
        if states.ndim != 2 or states.shape[1] != nq + nv:
            raise InvalidDataError(
                f"{self.env_id} states have nq + nv = {nq + nv} numbers a step, got shape {states.shape}"
            )
        frames = []
        for state in states:
            sim.set_state(state[:nq], state[nq:])
            frames.append(self._env.render())
        return np.stack(frames)

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None


def _angle_state(obs: np.ndarray) -> np.ndarray:
    """Pendulum's (cos θ, sin θ, θ̇) -> its state (θ, θ̇)."""
    return np.array([np.arctan2(obs[1], obs[0]), obs[2]])


def _acrobot_state(obs: np.ndarray) -> np.ndarray:
    """Acrobot's (cos θ1, sin θ1, cos θ2, sin θ2, θ̇1, θ̇2) -> its state (θ1, θ2, θ̇1, θ̇2)."""
    return np.array([np.arctan2(obs[1], obs[0]), np.arctan2(obs[3], obs[2]), obs[4], obs[5]])


def _same(obs: np.ndarray) -> np.ndarray:
    return np.asarray(obs, dtype=np.float64)


# Classic control env class -> (its state from an observation, the observation's dimensions as
# gymnasium's docs name them). Their render() draws ``unwrapped.state`` (Pendulum's also the last
# torque, ``last_u``), so setting the state from a recorded observation redraws that step exactly.
_CLASSIC: dict[str, tuple[Callable[[np.ndarray], np.ndarray], tuple[str, ...]]] = {
    "PendulumEnv": (_angle_state, ("cos θ", "sin θ", "angular velocity θ̇")),
    "CartPoleEnv": (_same, ("cart position", "cart velocity", "pole angle", "pole angular velocity")),
    "MountainCarEnv": (_same, ("car position", "car velocity")),
    "Continuous_MountainCarEnv": (_same, ("car position", "car velocity")),
    "AcrobotEnv": (_acrobot_state, ("cos θ1", "sin θ1", "cos θ2", "sin θ2", "angular velocity θ̇1",
                                    "angular velocity θ̇2")),
}


def _classic(env: Any) -> tuple[Callable[[np.ndarray], np.ndarray], tuple[str, ...]] | None:
    for cls in type(env).__mro__:  # a subclass of a classic control env draws as its parent does
        if cls.__name__ in _CLASSIC and cls.__module__.startswith("gymnasium.envs.classic_control"):
            return _CLASSIC[cls.__name__]
    return None


def _state_is_observation(env: Any, steps: int = 5) -> bool:
    """Whether ``env`` keeps exactly its observation as ``unwrapped.state``, checked on it over a
    reset and a few random steps (it is stepped: pass a probe)."""
    obs, _ = env.reset(seed=0)
    env.action_space.seed(0)
    for step in range(steps + 1):
        state = getattr(env.unwrapped, "state", None)
        try:
            state = np.asarray(state, dtype=np.float64).ravel()
            seen = np.asarray(obs, dtype=np.float64).ravel()
        except (TypeError, ValueError):  # no state, or one that is not numbers
            return False
        if state.shape != seen.shape or not np.allclose(state, seen, atol=1e-5):
            return False
        if step < steps:
            obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                obs, _ = env.reset()
    return True


def drawing(env: Any) -> str | None:
    """How ``env``'s state is set from an observation so that ``render()`` draws that step:
    ``"classic"`` (a classic control env), ``"own"`` (its ``state_from_observation``), ``"same"``
    (its ``state`` is its observation, checked by stepping it: pass a probe), or None (it cannot be
    drawn from observations, or has no rgb_array rendering)."""
    unwrapped = env.unwrapped
    if "rgb_array" not in getattr(unwrapped, "metadata", {}).get("render_modes", []):
        return None
    if _classic(unwrapped) is not None:
        return "classic"
    if callable(getattr(unwrapped, "state_from_observation", None)):
        return "own"
    return "same" if _state_is_observation(env) else None


def renders_from_observation(env: Any) -> bool:
    """Whether ``env`` can draw any step from its observation (see ``ObservationRenderer``); a
    probe, since it may be stepped."""
    return drawing(env) is not None


def observation_names(env: Any) -> tuple[str, ...] | None:
    """The names of the observation's dimensions where they are known (classic control, or an
    env's own ``observation_names``), else None."""
    unwrapped = env.unwrapped
    own = getattr(unwrapped, "observation_names", None)
    if own is not None:
        return tuple(str(name) for name in own)
    known = _classic(unwrapped)
    return None if known is None else known[1]


class ObservationRenderer:
    """Frames of an env that draws ``unwrapped.state`` and whose observation determines that state:
    gymnasium's classic control envs, a custom env with ``state_from_observation(obs)`` (returning
    what its ``render()`` reads from ``self.state``), or one whose ``state`` is its observation.

    Each step's input row is the observation after the step, then the action (Pendulum draws its
    torque). Frames are scaled to ``height`` rows (width in proportion, both even, as VP8 needs).
    The env is made on the first call, in the worker's thread.
    """

    def __init__(self, env_id: str, height: int = 256, **make_kwargs: Any) -> None:
        if height < 2:
            raise InvalidDataError(f"frame height must be at least 2, got {height}")
        self.env_id = env_id
        self.height = height
        self.make_kwargs = {"render_mode": "rgb_array", **make_kwargs}
        self._env: Any = None
        import gymnasium

        probe = gymnasium.make(env_id, **self.make_kwargs)
        try:
            how = drawing(probe)
            if how is None:
                raise InvalidDataError(
                    f"{env_id} cannot be drawn from its observations: it needs rgb_array rendering and "
                    "to be a classic control env, to define state_from_observation(obs), or to keep "
                    "its observation as self.state")
            self._how = how
            probe.reset(seed=0)
            try:  # now, not in the worker: a missing drawing library is named before training
                probe.render()
            except gymnasium.error.DependencyNotInstalled as error:
                raise ConfigError(f"{env_id} cannot render the segments people label: {error}") from None
            self.observation_names = observation_names(probe)
            self.obs_size = int(np.prod(probe.observation_space.shape or ()))
        finally:
            probe.close()

    def inputs(self, store: TrajectoryStore, segment: np.ndarray) -> np.ndarray:
        """Per step: the observation after it, then its action."""
        traj, start, length = (int(x) for x in segment)
        trajectory = store[traj]
        after = trajectory.obs[start + 1 : start + length + 1].reshape(length, -1)
        acts = trajectory.acts[start : start + length].reshape(length, -1)
        return np.concatenate([after, acts], axis=1).astype(np.float64)

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        import gymnasium
        from PIL import Image

        if rows.ndim != 2 or rows.shape[1] < self.obs_size:
            raise InvalidDataError(f"{self.env_id} renders rows of {self.obs_size} observation numbers "
                                   f"and the action, got shape {rows.shape}")
        if self._env is None:
            self._env = gymnasium.make(self.env_id, **self.make_kwargs)
            self._env.reset(seed=0)
        env = self._env.unwrapped
        known = _classic(env)
        state_of: Callable[[np.ndarray], Any] = _same
        if self._how == "classic" and known is not None:
            state_of = known[0]
        elif self._how == "own":
            state_of = env.state_from_observation
        frames = []
        for row in rows:
            env.state = state_of(row[: self.obs_size])
            if hasattr(env, "last_u") and rows.shape[1] > self.obs_size:
                env.last_u = float(row[self.obs_size])
            frame = np.asarray(self._env.render(), dtype=np.uint8)
            height = self.height - self.height % 2
            width = max(2, round(frame.shape[1] * height / frame.shape[0] / 2) * 2)
            scaled = Image.fromarray(frame).resize((width, height), Image.Resampling.BILINEAR)
            frames.append(np.asarray(scaled))
        return np.stack(frames)

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None


class RenderQueue:
    """One background thread that renders queued segments in order and writes their videos.

    ``submit`` returns at once; ``wait`` blocks until everything submitted is written (or failed:
    a failure is logged, named in ``failed`` and marked beside the video's name (``failed_mark``),
    so the page stops waiting and shows the plot).
    """

    def __init__(self, renderer: StateRenderer, fps: float = 10.0) -> None:
        self.renderer = renderer
        self.fps = fps
        self.failed: list[str] = []
        self._jobs: deque[tuple[Path, np.ndarray]] = deque()
        self._queued: set[Path] = set()  # submitted and not yet done: asked twice, rendered once
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closing = False

    def submit(self, path: Path, states: np.ndarray) -> None:
        """Render ``states`` into the video ``path`` in the background (once, however often asked)."""
        with self._changed:
            if self._closing:
                raise InvalidDataError("this render queue is closed")
            if path in self._queued:
                return
            self._queued.add(path)
            self._jobs.append((path, np.array(states)))
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="rlkit-render", daemon=True)
                self._thread.start()
            self._changed.notify_all()

    @property
    def pending(self) -> int:
        """Videos submitted and not yet written (or failed)."""
        with self._changed:
            return len(self._queued)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until every submitted video is done; False if ``timeout_s`` passed first."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._queued, timeout_s)

    def close(self) -> None:
        """Stop after the video being rendered; the rest are dropped (a resumed run asks again)."""
        with self._changed:
            self._closing = True
            self._jobs.clear()
            self._changed.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _work(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._jobs or self._closing)
                if self._closing:
                    self._queued.clear()
                    self._changed.notify_all()
                    return
                path, states = self._jobs.popleft()
            try:
                write_webm(np.asarray(self.renderer(states), dtype=np.uint8), path, self.fps)
            except Exception:  # a worker that died here would leave every later video unrendered
                log.exception("could not render %s; the page shows its plot", path.name)
                self.failed.append(path.name)
                failed_mark(path).touch()
            with self._changed:
                self._queued.discard(path)
                self._changed.notify_all()

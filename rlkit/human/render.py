"""Rendering queried segments as the env sees them, in a background thread, ahead of the annotator.

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
from typing import Any

import numpy as np

from rlkit.errors import InvalidDataError
from rlkit.human.media import failed_mark, write_webm

log = logging.getLogger(__name__)

# (length, state size) simulator states -> (length, height, width, 3) uint8 frames.
StateRenderer = Callable[[np.ndarray], np.ndarray]


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
        self._env: Any = None

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

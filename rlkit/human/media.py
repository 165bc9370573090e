"""Segment videos for people to compare: one short looping WebM per segment, named by its index.

What a segment looks like, best first:

- a MuJoCo segment whose trajectory kept its simulator states (``Trajectory.states``, recorded by
  ``rlkit.data.sim_state.RecordStates``) is rendered as the env sees it, by a background worker
  (``rlkit.human.render.RenderQueue``, ~42 ms a 64x64 frame here), into ``segment_name``;
- image observations are the video (``segment_name``, written at once);
- a segment of an env drawn from its observations (classic control such as Pendulum) is rendered
  by the same worker from the segment's observations (``rlkit.human.render.ObservationRenderer``);
- anything else is a plot of the segment's observations — every dimension a coloured line on the
  store-wide range, revealed step by step behind a cursor — in ``plot_name``, with a JSON beside
  it (``legend_name``) that names each line and its range for the page's legend and axes. The plot
  is also what the page shows while a segment's video is still rendering (``shown_media``).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import imageio_ffmpeg
import numpy as np

from rlkit.data.segments import SegmentPairs, gather
from rlkit.data.store import TrajectoryStore
from rlkit.errors import StateError
from rlkit.persistence.atomic import atomic_write_json

if TYPE_CHECKING:
    from rlkit.human.render import RenderQueue

HEIGHT, WIDTH = 96, 160
_PALETTE = np.array([[31, 119, 180], [255, 127, 14], [44, 160, 44], [214, 39, 40], [148, 103, 189],
                     [140, 86, 75], [227, 119, 194], [127, 127, 127], [188, 189, 34], [23, 190, 207]],
                    dtype=np.uint8)


_PLOT_SUFFIX = ".plot.webm"
_VIDEO_NAME = r"seg-\d+-\d+-\d+\.webm"


def segment_name(segment: np.ndarray) -> str:
    """The segment's video: rendered frames or its image observations."""
    traj, start, length = (int(x) for x in segment)
    return f"seg-{traj}-{start}-{length}.webm"


def plot_name(segment: np.ndarray) -> str:
    """The plot of the segment's observations (the fallback, and the picture while it renders)."""
    return segment_name(segment).removesuffix(".webm") + _PLOT_SUFFIX


def legend_name(plot: str) -> str:
    """The JSON beside a plot that names its lines and their ranges (the page draws the legend)."""
    return plot.removesuffix(".webm") + ".json"


def plot_legend(low: np.ndarray, high: np.ndarray, length: int,
                names: tuple[str, ...] | None = None) -> dict[str, Any]:
    """What the page shows beside a plot: each line's name (``obs[i]`` unless the env names its
    dimensions), colour and the range its height spans (the store's), and the steps on the x axis."""
    dims = len(low)
    labels = list(names) if names is not None and len(names) == dims else [f"obs[{i}]" for i in range(dims)]
    colours = ["#" + bytes(_PALETTE[i % len(_PALETTE)]).hex() for i in range(dims)]
    return {"names": labels, "colours": colours, "low": [float(x) for x in low],
            "high": [float(x) for x in high], "steps": int(length)}


def failed_mark(video: Path) -> Path:
    """The empty file the render worker leaves when it could not render ``video``."""
    return video.with_name(video.name + ".failed")


def shown_media(media_dir: Path, name: str) -> tuple[str, bool]:
    """What the page shows for a query's media ``name`` now, and whether its video is still rendering.

    A written file (or a name that is no segment video: an older run's, a caller's own) is shown
    as it is. A segment video not written yet (the worker renders it) is stood in for by the
    segment's plot, for good if its render failed; ``("", True)`` while not even the plot is there.
    """
    if re.fullmatch(_VIDEO_NAME, name) is None or (media_dir / name).is_file():
        return name, False
    plot = name.removesuffix(".webm") + _PLOT_SUFFIX
    return (plot if (media_dir / plot).is_file() else ""), not failed_mark(media_dir / name).exists()


def observation_bounds(store: TrajectoryStore) -> tuple[np.ndarray, np.ndarray]:
    """Per-dimension min and max over the whole store, so both segments share one y axis."""
    obs = store.frames  # each observation (or pixel frame) once
    obs = obs.reshape(len(obs), -1)
    return obs.min(axis=0), obs.max(axis=0)


def plot_frames(obs: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """``(L, D)`` observations as ``(L, HEIGHT, WIDTH, 3)`` uint8 frames of a growing line plot."""
    length = len(obs)
    scaled = (obs.reshape(length, -1) - low) / np.maximum(high - low, 1e-8)
    heights = (1.0 - np.clip(scaled, 0, 1)) * (HEIGHT - 5) + 2  # (L, D) pixel rows
    columns = np.linspace(2, WIDTH - 3, length).round().astype(int)
    x = np.arange(WIDTH)
    # The line through every pixel column, then each column joined to the previous one by a
    # vertical run: a connected line drawn without looping over pixels.
    curve = np.stack([np.interp(x, columns, heights[:, d]) for d in range(heights.shape[1])], axis=1)
    curve = curve.round().astype(int)  # (W, D)
    previous = np.vstack([curve[:1], curve[:-1]])
    y = np.arange(HEIGHT)[:, None, None]
    hit = (y >= np.minimum(previous, curve)[None]) & (y <= np.maximum(previous, curve)[None])  # (H, W, D)
    image = np.full((HEIGHT, WIDTH, 3), 255, dtype=np.uint8)
    for dim in range(curve.shape[1]):  # dimensions past the palette reuse its colours
        image[hit[:, :, dim]] = _PALETTE[dim % len(_PALETTE)]
    frames = np.repeat(image[None], length, axis=0)
    future = x[None, :] > columns[:, None]  # (L, W): not yet reached at step t
    frames[future[:, None, :, None].repeat(HEIGHT, axis=1).repeat(3, axis=3)] = 235
    frames[np.arange(length), :, columns] = (0, 0, 0)
    return frames


def write_webm(frames: np.ndarray, path: Path, fps: float) -> None:
    """Atomic: a crash leaves no half-written video behind a name the page would load."""
    partial = path.with_name(f".{path.stem}.partial.webm")
    length, height, width, _ = frames.shape
    # Raw frames straight into the ffmpeg that ships inside imageio-ffmpeg: no polling wrapper.
    command = [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-y", "-f", "rawvideo",
               "-pix_fmt", "rgb24", "-s", f"{width}x{height}", "-r", f"{fps:g}", "-i", "-",
               "-c:v", "libvpx", "-b:v", "400k", "-deadline", "realtime", "-cpu-used", "8",
               "-pix_fmt", "yuv420p", "-an", str(partial)]
    result = subprocess.run(command, input=np.ascontiguousarray(frames).tobytes(), capture_output=True)
    if result.returncode != 0:
        partial.unlink(missing_ok=True)
        raise StateError(f"ffmpeg could not write {path.name}: {result.stderr.decode()[-500:]}")
    os.replace(partial, path)


def render_pairs(
    pairs: SegmentPairs, media_dir: str | os.PathLike[str], *, fps: float = 10.0,
    renders: RenderQueue | None = None,
) -> tuple[list[str], list[str]]:
    """Media for each distinct segment (files already there are kept); returns (left, right) names.

    Plots and image-observation videos are written here (a few ms each); with ``renders``, each
    segment with simulator states also goes to the worker, in pair order (the first pair first),
    and its name is the video's, which the page shows once it is written.
    """
    media = Path(media_dir)
    media.mkdir(parents=True, exist_ok=True)
    segments = np.concatenate([pairs.left, pairs.right], axis=1).reshape(-1, 3)  # A0, B0, A1, B1...
    _, first = np.unique(segments, axis=0, return_index=True)
    low, high = observation_bounds(pairs.store)
    names: dict[tuple[int, ...], str] = {}
    for segment in segments[np.sort(first)]:
        obs = gather(pairs.store, segment[None]).obs[0]
        image = obs.ndim == 4 and obs.shape[-1] == 3  # image observations: the video itself
        path = media / (segment_name(segment) if image else plot_name(segment))
        if not path.exists():
            write_webm(np.asarray(obs if image else plot_frames(obs, low, high), dtype=np.uint8), path, fps)
        if not image and not (media / legend_name(path.name)).exists():
            dims = None if renders is None else renders.renderer.observation_names
            atomic_write_json(media / legend_name(path.name), plot_legend(low, high, len(obs), dims))
        names[tuple(segment)] = path.name
        found = None if image or renders is None else renders.renderer.inputs(pairs.store, segment)
        if renders is not None and found is not None:
            video = media / segment_name(segment)
            if not video.exists():
                renders.submit(video, found)
            names[tuple(segment)] = video.name
    return [names[tuple(s)] for s in pairs.left], [names[tuple(s)] for s in pairs.right]

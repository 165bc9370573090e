"""Segment videos for people to compare: one short looping WebM per segment, named by its index.

Stored trajectories keep observations, not simulator states, so a MuJoCo segment cannot in
general be re-rendered afterwards. The default picture is therefore a plot of the segment's
observations — every dimension a coloured line on the store-wide range, revealed step by step
behind a cursor — which works for any vector observation; image observations are shown as they
are. A caller with real renders (frames recorded during collection) passes ``frames=``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import imageio_ffmpeg
import numpy as np

from rlkit.data.segments import SegmentPairs, gather
from rlkit.data.store import TrajectoryStore
from rlkit.errors import StateError

FrameFn = Callable[[TrajectoryStore, np.ndarray], np.ndarray]  # (traj, start, length) -> (L, H, W, 3)
HEIGHT, WIDTH = 96, 160
_PALETTE = np.array([[31, 119, 180], [255, 127, 14], [44, 160, 44], [214, 39, 40], [148, 103, 189],
                     [140, 86, 75], [227, 119, 194], [127, 127, 127], [188, 189, 34], [23, 190, 207]],
                    dtype=np.uint8)


def segment_name(segment: np.ndarray) -> str:
    traj, start, length = (int(x) for x in segment)
    return f"seg-{traj}-{start}-{length}.webm"


def observation_bounds(store: TrajectoryStore) -> tuple[np.ndarray, np.ndarray]:
    """Per-dimension min and max over the whole store, so both segments share one y axis."""
    obs = store.arrays()["obs"]
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


def observation_frames(store: TrajectoryStore) -> FrameFn:
    """A segment's own frames for RGB image observations; otherwise a line plot of its
    observations, on the per-dimension bounds of the whole ``store``."""
    low, high = observation_bounds(store)

    def render(store: TrajectoryStore, segment: np.ndarray) -> np.ndarray:
        obs = gather(store, segment[None]).obs[0]
        return obs if obs.ndim == 4 and obs.shape[-1] == 3 else plot_frames(obs, low, high)

    return render


def render_pairs(
    pairs: SegmentPairs, media_dir: str | os.PathLike[str], *, fps: float = 10.0,
    frames: FrameFn | None = None,
) -> tuple[list[str], list[str]]:
    """Write one video per distinct segment (kept if already there); returns (left, right) names."""
    media = Path(media_dir)
    media.mkdir(parents=True, exist_ok=True)
    segments = np.unique(np.concatenate([pairs.left, pairs.right]), axis=0)
    render = frames if frames is not None else observation_frames(pairs.store)
    for segment in segments:
        path = media / segment_name(segment)
        if path.exists():
            continue
        picture = render(pairs.store, segment)
        write_webm(np.asarray(picture, dtype=np.uint8), path, fps)
    return [segment_name(s) for s in pairs.left], [segment_name(s) for s in pairs.right]

"""A labelled pair of segments as media in the run's dashboards (W&B, TensorBoard, media.jsonl).

Segments whose observations are images (uint8 ``(L, H, W)``, ``(L, H, W, 1)`` or ``(L, H, W, 3)``)
become one video of the two side by side; other observations of up to ``MAX_PLOTTED`` numbers a
step become a picture of both segments' dimensions over their steps, each segment in its own
panel on one y range, with a legend and named axes; larger ones (stacked frames) are left out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np

from rlkit.errors import InvalidDataError
from rlkit.logging.base import Logger, PathLike, media_path
from rlkit.persistence import atomic_open

GAP_PX = 4  # white columns between the two segments of a video
MAX_LEGEND = 10  # observations of more dimensions are drawn without a legend
MAX_PLOTTED = 64  # observations of more numbers are not drawn


def log_segment_pair(logger: Logger, name: str, left: np.ndarray, right: np.ndarray, step: int,
                     media_dir: PathLike, *, label: float | None = None, fps: int = 10
                     ) -> Literal["video", "image", "none"]:
    """Log one pair's observations: a video (image observations) or a picture (others).

    Args:
        logger: where it goes (``log_video`` or ``log_image``).
        name: the media's name (``prefrl/query``).
        left: the left segment's observations, ``(L, ...)``.
        right: the right segment's observations, the same shape.
        step: the step it belongs to.
        media_dir: where the picture (and a video's GIF) is written.
        label: the pair's label, shown in the picture's title (1 = left better, NaN = skipped).
        fps: frames per second of a video.

    Returns:
        What was logged: ``"video"``, ``"image"`` (the picture in ``media_dir``) or ``"none"``.

    Raises:
        InvalidDataError: when the two segments' observations differ in shape.
    """
    if left.shape != right.shape:
        raise InvalidDataError(f"{name}: the segments' observations have shapes {left.shape} and "
                               f"{right.shape}; a pair's segments have the same")
    if left.dtype == np.uint8 and (left.ndim == 3 or (left.ndim == 4 and left.shape[-1] in (1, 3))):
        gap = np.full((*left.shape[:2], GAP_PX, *left.shape[3:]), 255, dtype=np.uint8)
        logger.log_video(name, np.concatenate([left, gap, right], axis=2), step, fps)
        return "video"
    if len(left) == 0 or left[0].size > MAX_PLOTTED:
        return "none"
    path = media_path(media_dir, name, step, ".png")
    path.parent.mkdir(parents=True, exist_ok=True)
    _plot_pair(left, right, label, path)
    logger.log_image(name, path, step)
    return "image"


def _plot_pair(left: np.ndarray, right: np.ndarray, label: float | None, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    length = len(left)
    flat = [np.asarray(obs, dtype=np.float64).reshape(length, -1) for obs in (left, right)]
    low, high = min(f.min() for f in flat), max(f.max() for f in flat)
    margin = 0.05 * (high - low) or 1.0
    figure, axes = plt.subplots(1, 2, figsize=(8, 3), sharey=True, constrained_layout=True)
    for axis, side, obs in zip(axes, ("left", "right"), flat, strict=True):
        for dim in range(obs.shape[1]):
            axis.plot(np.arange(length), obs[:, dim], label=f"obs[{dim}]")
        axis.set_title(f"{side} segment")
        axis.set_xlabel("step in segment")
        axis.set_ylim(low - margin, high + margin)
    axes[0].set_ylabel("observation")
    if flat[0].shape[1] <= MAX_LEGEND:
        axes[1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small")
    if label is not None:
        said = "skipped" if not np.isfinite(label) else f"{label:.2f} (1 = left better)"
        figure.suptitle(f"label {said}")
    with atomic_open(path, "wb") as handle:
        figure.savefig(handle, format="png", dpi=80)
    plt.close(figure)

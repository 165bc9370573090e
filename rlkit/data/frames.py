"""Frame stacks kept as frames: a trajectory of stacked observations ``(T + 1, k * C, ...)`` holds
each frame once, ``(T + k, C, ...)``, and its stacks are read back as an exact strided view.

A channel-first stack of ``k`` consecutive frames of a C-contiguous frame array ``(N, C, H, W)`` is
the bytes of ``frames[i : i + k]`` read as ``(k * C, H, W)``; so every window of ``k`` frames is one
row of a read-only ``as_strided`` view with the frames' own strides (no copy).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from rlkit.errors import InvalidDataError

__all__ = ["frames_of_stacks", "stacked_view"]


def frames_of_stacks(obs: np.ndarray, k: int) -> np.ndarray:
    """The frames behind stacked observations: the first observation's ``k`` frames, then the newest
    frame of each following one.

    Args:
        obs: ``(T + 1, k * C, ...)`` stacks, oldest frame first, where each stack is the previous
            one shifted by one frame (``obs[t + 1][:-C] == obs[t][C:]``), as ``StackFrames`` makes.
        k: frames per stack.

    Returns:
        A new C-contiguous array ``(T + k, C, ...)``.

    Raises:
        InvalidDataError: when ``obs`` is not ``k`` stacked frames per row, or two consecutive
            stacks do not overlap (naming the first such step).
    """
    if obs.ndim < 2 or obs.shape[1] % k:
        raise InvalidDataError(
            f"obs of shape {obs.shape} are not stacks of {k} frames: a stack is (k * C, ...) with "
            f"its first axis a multiple of k = {k}")
    channels = obs.shape[1] // k
    if k > 1 and len(obs) > 1:
        same = (obs[1:, :-channels] == obs[:-1, channels:]).reshape(len(obs) - 1, -1).all(axis=1)
        if not same.all():
            t = int(np.flatnonzero(~same)[0])
            raise InvalidDataError(
                f"obs are not stacks of {k} frames: at step {t}, obs[{t + 1}]'s oldest "
                f"{(k - 1) * channels} channels differ from obs[{t}]'s newest (a stack must shift "
                "by one frame a step, as StackFrames makes them)")
    first = obs[0].reshape(k, channels, *obs.shape[2:])
    return np.ascontiguousarray(np.concatenate([first, obs[1:, -channels:]]))


def stacked_view(frames: np.ndarray, k: int) -> np.ndarray:
    """Every window of ``k`` consecutive frames as one stack: row ``i`` is ``frames[i : i + k]``
    read as ``(k * C, ...)``; a read-only view (no copy).

    Args:
        frames: a C-contiguous array ``(N, C, ...)`` with ``N >= k``.
        k: frames per stack.

    Returns:
        A read-only ``(N - k + 1, k * C, ...)`` view of ``frames``.
    """
    if not frames.flags.c_contiguous or frames.ndim < 2 or len(frames) < k:
        raise InvalidDataError(f"frames of shape {frames.shape} cannot be read as stacks of {k}: "
                               "they must be C-contiguous (N >= k, C, ...)")
    return as_strided(frames, shape=(len(frames) - k + 1, k * frames.shape[1], *frames.shape[2:]),
                      strides=frames.strides, writeable=False)

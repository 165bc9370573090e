"""An SB3 replay buffer's filled rows as ``.npz`` arrays (no pickle), tagged ``rlkit.replay``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

from rlkit.errors import FileFormatError
from rlkit.persistence.arrays import load_npz, save_npz
from rlkit.persistence.formats import check_npz_header, npz_header

if TYPE_CHECKING:
    from stable_baselines3.common.buffers import ReplayBuffer

REPLAY_FILE = "replay.npz"
KIND = "rlkit.replay"
_REPLAY_ARRAYS = ("observations", "next_observations", "actions", "rewards", "dones", "timeouts")


def save_replay(buffer: ReplayBuffer, path: str | os.PathLike[str]) -> None:
    """The filled part of an SB3 replay buffer as ``.npz`` arrays plus its position (atomic)."""
    filled = buffer.buffer_size if buffer.full else buffer.pos
    arrays = {name: getattr(buffer, name)[:filled] for name in _REPLAY_ARRAYS
              if getattr(buffer, name, None) is not None}
    arrays["pos"], arrays["full"] = np.array(buffer.pos), np.array(buffer.full)
    arrays["_header"] = npz_header(KIND)
    save_npz(path, arrays)


def load_replay(buffer: ReplayBuffer, path: str | os.PathLike[str]) -> None:
    """Fill ``buffer`` (same size and spaces as the saved one) back from ``save_replay``'s file.
    A file from before the format header is read as before; a foreign header is refused."""
    arrays = load_npz(path)
    check_npz_header(arrays, KIND, path, required=False)
    for name in ("pos", "full"):
        if name not in arrays or arrays[name].shape != ():
            raise FileFormatError(f"{path}: not a replay buffer (no scalar {name!r})")
    pos, full = int(arrays["pos"]), bool(arrays["full"])
    if not 0 <= pos <= buffer.buffer_size:
        raise FileFormatError(f"{path}: position {pos} outside the buffer's {buffer.buffer_size} rows")
    for name in _REPLAY_ARRAYS:
        target = getattr(buffer, name, None)
        if target is None or name not in arrays:
            continue
        saved = arrays[name]
        if saved.shape[1:] != target.shape[1:] or len(saved) > len(target):
            raise FileFormatError(f"{path}: {name} has shape {saved.shape}, the buffer holds "
                                  f"{target.shape}")
        target[: len(saved)] = saved
    buffer.pos, buffer.full = pos, full

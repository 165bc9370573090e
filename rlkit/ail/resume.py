"""What an AIL run needs beyond its checkpoints to resume where it stopped.

A checkpoint holds the generator (SB3's zip: policy and its optimisers) and the discriminator's
nets. Resuming also needs the discriminator's optimiser, the trainer's RNGs and, for an
off-policy generator, its replay buffer. The buffer is large, so only the latest one is kept, in
``<checkpoints>/resume/replay.npz`` (plain arrays, no pickle), written atomically.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.buffers import ReplayBuffer

from rlkit.errors import FileFormatError
from rlkit.persistence import atomic_write_bytes

TRAINER_STATE_FILE = "trainer_state.pt"
REPLAY_FILE = "replay.npz"
_REPLAY_ARRAYS = ("observations", "next_observations", "actions", "rewards", "dones", "timeouts")


def trainer_state(optimizer: torch.optim.Optimizer, rng: np.random.Generator,
                  torch_rng: torch.Generator) -> dict[str, Any]:
    return {"optimizer": optimizer.state_dict(), "numpy_rng": rng.bit_generator.state,
            "torch_rng": torch_rng.get_state()}


def save_trainer_state(state: dict[str, Any], directory: Path) -> None:
    atomic_write_bytes(directory / TRAINER_STATE_FILE, lambda handle: torch.save(state, handle))


def restore_trainer_state(directory: Path, optimizer: torch.optim.Optimizer, rng: np.random.Generator,
                          torch_rng: torch.Generator) -> None:
    path = directory / TRAINER_STATE_FILE
    try:
        state = torch.load(path, weights_only=True)
        optimizer.load_state_dict(state["optimizer"])
        rng.bit_generator.state = state["numpy_rng"]
        torch_rng.set_state(state["torch_rng"])
    except FileNotFoundError:
        raise FileFormatError(f"{path}: missing; this checkpoint cannot resume a run") from None
    except Exception as error:  # torch's unpickler and the state setters raise their own kinds
        raise FileFormatError(f"{path}: damaged ({error})") from None


def save_replay(buffer: ReplayBuffer, path: str | os.PathLike[str]) -> None:
    """The filled part of an SB3 replay buffer as ``.npz`` arrays plus its position."""
    filled = buffer.buffer_size if buffer.full else buffer.pos
    arrays = {name: getattr(buffer, name)[:filled] for name in _REPLAY_ARRAYS
              if getattr(buffer, name, None) is not None}
    arrays["pos"], arrays["full"] = np.array(buffer.pos), np.array(buffer.full)
    atomic_write_bytes(path, lambda handle: np.savez(handle, **arrays))


def load_replay(buffer: ReplayBuffer, path: str | os.PathLike[str]) -> None:
    """Fill ``buffer`` (same size and spaces as the saved one) back from ``save_replay``'s file."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError) as error:
        raise FileFormatError(f"{path}: not a readable replay buffer ({error})") from None
    for name in _REPLAY_ARRAYS:
        target = getattr(buffer, name, None)
        if target is None or name not in arrays:
            continue
        saved = arrays[name]
        if saved.shape[1:] != target.shape[1:] or len(saved) > len(target):
            raise FileFormatError(f"{path}: {name} has shape {saved.shape}, the buffer holds "
                                  f"{target.shape}")
        target[: len(saved)] = saved
    buffer.pos, buffer.full = int(arrays["pos"]), bool(arrays["full"])

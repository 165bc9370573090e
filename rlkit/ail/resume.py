"""What an AIL run needs beyond its checkpoints to resume where it stopped.

A checkpoint holds the generator (SB3's zip: policy and its optimisers) and the discriminator's
nets. Resuming also needs the discriminator's optimiser and the trainer's RNGs (``trainer_state.pt``
in the checkpoint, covered by its checksum) and, for an off-policy generator, its replay buffer.
The buffer is large, so only the latest one is kept, in ``<checkpoints>/resume/replay.npz``
(``rlkit.persistence.replay``: plain arrays, no pickle, written atomically).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from rlkit.errors import FileFormatError
from rlkit.persistence import atomic_write_bytes
from rlkit.persistence.replay import REPLAY_FILE, load_replay, save_replay
from rlkit.persistence.rng import numpy_rng_state, restore_numpy_rng, restore_torch_rng, torch_rng_state

__all__ = ["REPLAY_FILE", "TRAINER_STATE_FILE", "load_replay", "restore_trainer_state", "save_replay",
           "save_trainer_state", "trainer_state"]

TRAINER_STATE_FILE = "trainer_state.pt"


def trainer_state(optimizer: torch.optim.Optimizer, rng: np.random.Generator,
                  torch_rng: torch.Generator) -> dict[str, Any]:
    return {"optimizer": optimizer.state_dict(), "numpy_rng": numpy_rng_state(rng),
            "torch_rng": torch_rng_state(torch_rng)}


def save_trainer_state(state: dict[str, Any], directory: Path) -> None:
    atomic_write_bytes(directory / TRAINER_STATE_FILE, lambda handle: torch.save(state, handle))


def restore_trainer_state(directory: Path, optimizer: torch.optim.Optimizer, rng: np.random.Generator,
                          torch_rng: torch.Generator) -> None:
    path = directory / TRAINER_STATE_FILE
    try:
        # saved on any device; the optimiser moves its state to its parameters' device
        state = torch.load(path, map_location="cpu", weights_only=True)
        optimizer.load_state_dict(state["optimizer"])
        restore_numpy_rng(rng, state["numpy_rng"], path)
        restore_torch_rng(state["torch_rng"], torch_rng, path)
    except FileNotFoundError:
        raise FileFormatError(f"{path}: missing; this checkpoint cannot resume a run") from None
    except Exception as error:  # torch's unpickler and the state setters raise their own kinds
        raise FileFormatError(f"{path}: damaged ({error})") from None

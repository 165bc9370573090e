"""What an AIL run needs beyond its checkpoints to resume where it stopped.

A checkpoint holds the generator (SB3's zip: policy and its optimisers) and the discriminator's
nets. Resuming also needs the discriminator's optimiser and the RNGs (``trainer_state.pt`` in the
checkpoint, covered by its checksum): the trainer's own, and those the generator's ``learn`` draws
from (torch's, the generator's own such as ``DrQSAC``'s augmentation, numpy's global one, Python's,
the action space's, each env's). The rest is large and kept only for the latest checkpoint, in
``<checkpoints>/resume/``, a folder replaced whole (``rlkit.persistence.atomic_dir``) after the
checkpoint it belongs to is written:

- ``replay.npz``: an off-policy generator's replay buffer (``rlkit.persistence.replay``);
- ``episode.npz``: the round it belongs to and, where every env layer can hand its state over,
  the episode in progress (``rlkit.factories.run_state.episode_state``: the env, the reward
  wrapper with the agent-transition buffer it feeds, the agent's last observation).

A run resumed from there goes on bit-identically: the rounds after ``resume/``'s are trained again
exactly as they were. Without ``resume/`` (a run killed between a checkpoint and its folder) or
with an env whose state cannot be kept, a run resumes from the latest checkpoint with a new
episode, equal in rounds and steps but not in numbers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.buffers import ReplayBuffer

from rlkit.errors import FileFormatError
from rlkit.factories.run_state import learn_rngs, own_rngs, restore_learn_rngs, restore_own_rngs
from rlkit.persistence import atomic_dir, atomic_write_bytes
from rlkit.persistence.arrays import load_npz, save_npz
from rlkit.persistence.replay import REPLAY_FILE, load_replay, save_replay
from rlkit.persistence.rng import (
    check_torch_rng_state,
    numpy_rng_state,
    python_random_state_from_json,
    random_state_from_json,
    restore_numpy_rng,
    restore_torch_rng,
    torch_rng_state,
)

__all__ = ["EPISODE_FILE", "REPLAY_FILE", "TRAINER_STATE_FILE", "load_replay", "restore_generator_rngs",
           "read_resume_folder", "restore_trainer_state", "save_resume_folder",
           "save_trainer_state", "trainer_state"]

TRAINER_STATE_FILE = "trainer_state.pt"
EPISODE_FILE = "episode.npz"
ROUND = "round"  # in EPISODE_FILE: the checkpoint the folder belongs to


def trainer_state(optimizer: torch.optim.Optimizer, rng: np.random.Generator,
                  torch_rng: torch.Generator, generator: BaseAlgorithm) -> dict[str, Any]:
    """The discriminator's optimiser, the trainer's RNGs and the RNGs the generator's ``learn``
    draws from."""
    return {"optimizer": optimizer.state_dict(), "numpy_rng": numpy_rng_state(rng),
            "torch_rng": torch_rng_state(torch_rng),
            "learn_rngs": {"torch": torch_rng_state(), "own": own_rngs(generator), **learn_rngs(generator)}}


def save_trainer_state(state: dict[str, Any], directory: Path) -> None:
    atomic_write_bytes(directory / TRAINER_STATE_FILE, lambda handle: torch.save(state, handle))


def restore_trainer_state(directory: Path, optimizer: torch.optim.Optimizer, rng: np.random.Generator,
                          torch_rng: torch.Generator) -> dict[str, Any]:
    """Put the optimiser and the trainer's RNGs back; returns the generator's RNGs for
    ``restore_generator_rngs``."""
    path = directory / TRAINER_STATE_FILE
    try:
        # saved on any device; the optimiser moves its state to its parameters' device
        state = torch.load(path, map_location="cpu", weights_only=True)
        optimizer.load_state_dict(state["optimizer"])
        restore_numpy_rng(rng, state["numpy_rng"], path)
        restore_torch_rng(state["torch_rng"], torch_rng, path)
        generator_rngs = state["learn_rngs"]  # checked before anything of the generator is touched
        for state_of in (generator_rngs["torch"], *generator_rngs["own"].values()):
            check_torch_rng_state(state_of, path)
        random_state_from_json(generator_rngs["numpy_global"], path)
        python_random_state_from_json(generator_rngs["python"], path)
    except FileNotFoundError:
        raise FileFormatError(f"{path}: missing; this checkpoint cannot resume a run") from None
    except Exception as error:  # torch's unpickler and the state setters raise their own kinds
        raise FileFormatError(f"{path}: damaged ({error})") from None
    return generator_rngs


def restore_generator_rngs(generator: BaseAlgorithm, rngs: dict[str, Any], where: Path) -> None:
    """The RNGs the generator's ``learn`` draws from, as ``trainer_state`` kept them."""
    restore_torch_rng(rngs["torch"], where=where)
    restore_own_rngs(generator, rngs["own"], where)
    restore_learn_rngs(generator, rngs, where)


def save_resume_folder(directory: Path, round_index: int, replay: ReplayBuffer | None,
                       episode: dict[str, np.ndarray] | None) -> None:
    """``resume/`` for checkpoint ``round_index``, replaced whole: the replay buffer (if any) and
    ``episode.npz`` (the round; the episode in progress when it could be kept)."""
    with atomic_dir(directory) as staging:
        if replay is not None:
            save_replay(replay, staging / REPLAY_FILE)
        save_npz(staging / EPISODE_FILE, {ROUND: np.asarray(round_index), **(episode or {})})


def read_resume_folder(directory: Path) -> tuple[int | None, dict[str, np.ndarray] | None]:
    """The checkpoint ``resume/`` belongs to and its episode in progress, from one read of
    ``episode.npz`` (round None: there is no such folder; episode None: it could not be kept)."""
    path = directory / EPISODE_FILE
    if not path.is_file():
        return None, None
    arrays = load_npz(path)
    round_index = arrays.pop(ROUND, None)
    if round_index is None or round_index.shape != () or not np.issubdtype(round_index.dtype, np.integer):
        raise FileFormatError(f"{path}: no round it belongs to (an integer {ROUND!r})")
    return int(round_index), arrays or None

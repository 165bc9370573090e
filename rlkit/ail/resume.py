"""What an AIL run needs beyond its checkpoints to resume where it stopped.

A checkpoint holds the generator (SB3's zip: policy and its optimisers) and the discriminator's
nets. Resuming also needs the discriminator's optimiser and the RNGs (``trainer_state.pt`` in the
checkpoint, covered by its checksum): the trainer's own, and those the generator's ``learn`` draws
from (``rlkit.persistence.sb3_state``: torch's, the generator's own such as ``DrQSAC``'s
augmentation, numpy's global one, Python's, the action space's, each env's). The rest is large and
kept only for the latest checkpoint, in ``<checkpoints>/resume/``, a resume point (format
``rlkit.ail.resume``) staged whole and renamed into place (``rlkit.persistence.atomic_dir``) after
the checkpoint it belongs to is written:

- ``replay.npz``: an off-policy generator's replay buffer (``rlkit.persistence.replay``);
- ``episode.npz``: where every env layer can hand its state over, the episode in progress
  (``rlkit.persistence.sb3_state.episode_state``: the env, the reward wrapper with the
  agent-transition buffer it feeds, the agent's last observation);
- ``point.json``, committed last through ``rlkit.persistence.run_state`` (command ``resumable``):
  the round it belongs to, the trainer's config but its device and rounds, and both files' SHA-256, so a
  damaged one is refused by name and a run with other settings is refused naming them.

A run resumed from there goes on bit-identically: the rounds after ``resume/``'s are trained again
exactly as they were. Without ``resume/`` (a run killed between its first checkpoint and that
folder) or with an env whose state cannot be kept, a run resumes from the latest checkpoint with a
new episode, equal in rounds and steps but not in numbers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from pydantic import BaseModel
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.buffers import ReplayBuffer

from rlkit.errors import FileFormatError
from rlkit.persistence import atomic_dir, atomic_write_bytes
from rlkit.persistence.arrays import load_npz, save_npz
from rlkit.persistence.formats import payload_files
from rlkit.persistence.replay import REPLAY_FILE, load_replay, save_replay
from rlkit.persistence.rng import numpy_rng_state, restore_numpy_rng, restore_torch_rng, torch_rng_state
from rlkit.persistence.run_state import commit, read_point
from rlkit.persistence.sb3_state import (
    check_learn_rngs,
    check_rng_tensors,
    learn_rngs,
    restore_learn_rngs,
    restore_rng_tensors,
    rng_tensors,
)

__all__ = ["EPISODE_FILE", "KIND", "POINT_FILE", "REPLAY_FILE", "TRAINER_STATE_FILE", "load_replay",
           "point_config", "read_resume_folder", "restore_generator_rngs", "restore_trainer_state",
           "save_resume_folder", "save_trainer_state", "trainer_state"]

KIND = "rlkit.ail.resume"
TRAINER_STATE_FILE = "trainer_state.pt"
EPISODE_FILE = "episode.npz"
POINT_FILE = "point.json"
_FIELDS: dict[str, type | tuple[type, ...]] = {"round": int, "replay": bool, "episode": bool}


def point_config(config: BaseModel, generator: BaseAlgorithm) -> dict[str, Any]:
    """What an AIL resume point must have been saved with to go on: the trainer's config but its
    device and rounds (a run may resume on another device, and go on for more rounds), and the
    generator's algorithm.

    Args:
        config: the trainer's ``AILConfig``.
        generator: its generator (fresh or trained: only its class counts).

    Returns:
        JSON data, the point's config.
    """
    return {"ail": config.model_dump(mode="json", exclude={"device", "rounds"}),
            "generator": type(generator).__name__}


def trainer_state(optimizer: torch.optim.Optimizer, rng: np.random.Generator,
                  torch_rng: torch.Generator, generator: BaseAlgorithm) -> dict[str, Any]:
    """The discriminator's optimiser, the trainer's RNGs and the RNGs the generator's ``learn``
    draws from (``sb3_state.rng_tensors`` and ``learn_rngs``)."""
    return {"optimizer": optimizer.state_dict(), "numpy_rng": numpy_rng_state(rng),
            "torch_rng": torch_rng_state(torch_rng),
            "learn_rngs": {**rng_tensors(generator), **learn_rngs(generator)}}


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
        check_rng_tensors(generator_rngs, path)
        check_learn_rngs(generator_rngs, path)
    except FileNotFoundError:
        raise FileFormatError(f"{path}: missing; this checkpoint cannot resume a run") from None
    except Exception as error:  # torch's unpickler and the state setters raise their own kinds
        raise FileFormatError(f"{path}: damaged ({error})") from None
    return generator_rngs


def restore_generator_rngs(generator: BaseAlgorithm, rngs: dict[str, Any], where: Path) -> None:
    """The RNGs the generator's ``learn`` draws from, as ``trainer_state`` kept them."""
    restore_rng_tensors(generator, rngs, where)
    restore_learn_rngs(generator, rngs, where)


def save_resume_folder(directory: Path, round_index: int, replay: ReplayBuffer | None,
                       episode: dict[str, np.ndarray] | None, config: dict[str, Any]) -> None:
    """``resume/`` for checkpoint ``round_index``, replaced whole: the replay buffer (if any), the
    episode in progress (where it could be kept) and ``point.json`` last.

    Args:
        directory: the ``resume/`` folder.
        round_index: the checkpoint it belongs to.
        replay: an off-policy generator's replay buffer (None: on-policy).
        episode: ``sb3_state.episode_state`` of the generator (None: it could not be kept).
        config: ``point_config`` of the trainer.
    """
    with atomic_dir(directory) as staging:
        if replay is not None:
            save_replay(replay, staging / REPLAY_FILE)
        if episode is not None:
            save_npz(staging / EPISODE_FILE, episode)
        commit(staging / POINT_FILE, KIND, "resumable", config,
               {"round": round_index, "replay": replay is not None, "episode": episode is not None},
               covers=payload_files(staging))


def read_resume_folder(directory: Path, config: dict[str, Any],
                       ) -> tuple[int | None, dict[str, np.ndarray] | None]:
    """The checkpoint ``resume/`` belongs to and its episode in progress, every file checked
    against ``point.json`` (round None: there is no such folder; episode None: it could not be kept).

    Args:
        directory: the ``resume/`` folder.
        config: ``point_config`` of the trainer that goes on.

    Returns:
        (round, episode arrays).

    Raises:
        FileFormatError: a folder without its ``point.json``, or a file of it missing or damaged.
        ConfigError: the run was saved with other settings, each named.
    """
    if not directory.is_dir():
        return None, None
    path = directory / POINT_FILE
    if not path.is_file():
        raise FileFormatError(f"{path}: missing (not an AIL resume point of this rlkit); remove "
                              f"{directory} to resume from the latest checkpoint with a new episode")
    point = read_point(path, KIND, "resumable", config, _FIELDS)
    episode = load_npz(directory / EPISODE_FILE) if point.state["episode"] else None
    return point.state["round"], episode

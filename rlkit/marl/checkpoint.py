"""Save and resume a ``MultiAgentPPO`` run: every policy, its optimizer and the RNG states.

A checkpoint is a directory: ``policies.pt`` (state dicts only, loaded with ``weights_only=True``)
and ``meta.json`` (format ``rlkit.marl.checkpoint``: config, counters, numpy RNG state, spaces, and
the SHA-256 of ``policies.pt``, so a damaged file is refused by name, never loaded), committed and
read through ``rlkit.persistence.run_state`` as a part of an M3HF run's point (no command of its
own: the run is rebuilt from the saved config). It is staged
beside its target and renamed into place (``rlkit.persistence.atomic_dir``), so a crash leaves the
old checkpoint or the new one. Resuming restores the RNG states too: a resumed run takes the same
actions as the run that never stopped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from rlkit.devices import Device
from rlkit.errors import FileFormatError, IncompatibleModelError
from rlkit.logging import Logger
from rlkit.marl.config import MarlConfig
from rlkit.marl.ppo import MultiAgentPPO
from rlkit.marl.rows import AgentRows
from rlkit.persistence import atomic_dir, atomic_write_bytes, tag
from rlkit.persistence.rng import check_torch_rng_state, random_state_from_json, random_state_to_json
from rlkit.persistence.run_state import Point, commit, read_point

KIND = "rlkit.marl.checkpoint"
FORMAT = tag(KIND)
META_FILE = "meta.json"
POLICIES_FILE = "policies.pt"
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "num_timesteps": int, "n_updates": list, "numpy_rng": list, "episodes": dict, "agent_names": list,
    "observation_shape": list, "n_actions": int}


def save_checkpoint(trainer: MultiAgentPPO, path: str | Path) -> Path:
    """Write ``trainer``'s state to the directory ``path`` (replaced whole if it exists).

    Args:
        trainer: the run to save: its policies, optimizers, counters, recent-episode statistics
            and RNG states.
        path: the checkpoint directory.

    Returns:
        The directory written.
    """
    target = Path(path)
    with atomic_dir(target) as staging:
        tensors: dict[str, Any] = {"torch_rng": trainer._torch_rng}
        for index, model in enumerate(trainer.models):
            tensors[f"policy_{index}"] = model.policy.state_dict()
            tensors[f"optimizer_{index}"] = model.policy.optimizer.state_dict()
        atomic_write_bytes(staging / POLICIES_FILE, lambda handle: torch.save(tensors, handle))
        commit(
            staging / META_FILE, KIND, None, trainer.config.model_dump(mode="json"),
            {
                "num_timesteps": trainer.num_timesteps,
                "n_updates": [model._n_updates for model in trainer.models],
                "numpy_rng": random_state_to_json(trainer._numpy_rng),
                "episodes": {  # the recent-episode statistics, so logged means continue unchanged
                    "original": list(trainer._episode_original),
                    "shaped": [r.tolist() for r in trainer._episode_shaped],
                    "length": list(trainer._episode_length),
                },
                "agent_names": list(trainer.env.agent_names),
                "observation_shape": list(trainer.env.observation_space.shape),
                "n_actions": int(trainer.env.action_space.n),
            },
            covers=[staging / POLICIES_FILE],
        )
    return target


def load_checkpoint(path: str | Path, env: AgentRows, logger: Logger | None = None,
                    device: Device | None = None) -> MultiAgentPPO:
    """A trainer on ``env`` in the state ``save_checkpoint`` wrote; the env must match the saved one.

    Args:
        path: a directory ``save_checkpoint`` wrote.
        env: the rows to train on; same agent names, observation shape and action count as saved.
        logger: where the resumed trainer logs (``None``: nowhere).
        device: where its policies run (``MarlConfig.device``); ``None``: the saved config's. The
            tensors are read to the CPU and moved there; the RNGs drawn from are CPU ones.

    Returns:
        The trainer, its config (with ``device`` when given), weights, optimizers, counters and
        RNG states restored.

    Raises:
        IncompatibleModelError: when ``env``'s agents, observation shape or action count differ
            from the saved ones.
        FileFormatError: when a file is missing, damaged or of another format, or the saved
            config, weights or counters do not fit together.
    """
    folder = Path(path)
    point = _read_meta(folder)
    meta = point.state
    found = {
        "agent_names": list(env.agent_names),
        "observation_shape": list(env.observation_space.shape),
        "n_actions": int(env.action_space.n),
    }
    for key, value in found.items():
        if meta[key] != value:
            raise IncompatibleModelError(f"checkpoint {str(folder)!r} has {key}={meta[key]}, the env {value}")
    meta_path, policies = folder / META_FILE, folder / POLICIES_FILE
    try:
        config = MarlConfig(**point.config)
    except (TypeError, ValueError) as error:  # pydantic's ValidationError is a ValueError
        raise FileFormatError(f"{meta_path}: bad config ({error})") from None
    if device is not None:
        config = config.replace(device=device)
    numpy_rng = random_state_from_json(meta["numpy_rng"], meta_path)
    try:
        tensors = torch.load(policies, map_location="cpu", weights_only=True)
    except Exception as error:  # torch's restricted unpickler raises its own kinds
        raise FileFormatError(f"{policies}: damaged ({error})") from None
    trainer = MultiAgentPPO(env, config, logger)
    try:
        for index, model in enumerate(trainer.models):
            model.policy.load_state_dict(tensors[f"policy_{index}"])
            model.policy.optimizer.load_state_dict(tensors[f"optimizer_{index}"])
            model._n_updates = int(meta["n_updates"][index])
        episodes = meta["episodes"]
        trainer._episode_original.extend(float(r) for r in episodes["original"])
        trainer._episode_shaped.extend(np.asarray(r, dtype=np.float64) for r in episodes["shaped"])
        trainer._episode_length.extend(int(n) for n in episodes["length"])
    except (IndexError, KeyError, RuntimeError, TypeError, ValueError) as error:
        raise FileFormatError(f"{folder}: policies or counters do not fit the config "
                              f"({type(error).__name__}: {error})") from None
    trainer.num_timesteps = int(meta["num_timesteps"])
    trainer._torch_rng = check_torch_rng_state(tensors.get("torch_rng"), policies)
    trainer._numpy_rng = numpy_rng
    return trainer


def _read_meta(folder: Path) -> Point:
    if not (folder / META_FILE).is_file() or not (folder / POLICIES_FILE).is_file():
        raise FileFormatError(
            f"{str(folder)!r} is not a rlkit.marl checkpoint (meta.json or policies.pt missing)"
        )
    return read_point(folder / META_FILE, KIND, None, None, _FIELDS)

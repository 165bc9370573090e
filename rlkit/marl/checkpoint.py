"""Save and resume a ``MultiAgentPPO`` run: every policy, its optimizer and the RNG states.

A checkpoint is a directory: ``policies.pt`` (state dicts only, loaded with ``weights_only=True``)
and ``meta.json`` (config, counters, numpy RNG state, spaces). It is written beside its target and
renamed into place, so a crash leaves the old checkpoint or the new one. Resuming restores the
RNG states too: a resumed run takes the same actions as the run that never stopped.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rlkit.errors import FileFormatError, IncompatibleModelError
from rlkit.logging import Logger
from rlkit.marl.config import MarlConfig
from rlkit.marl.ppo import MultiAgentPPO
from rlkit.marl.rows import AgentRows
from rlkit.persistence import atomic_open, atomic_write_json

FORMAT = "rlkit.marl.checkpoint/1"


def save_checkpoint(trainer: MultiAgentPPO, path: str | Path) -> Path:
    """Write ``trainer``'s state to the directory ``path`` (replaced whole if it exists)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        tensors: dict[str, Any] = {"torch_rng": trainer._torch_rng}
        for index, model in enumerate(trainer.models):
            tensors[f"policy_{index}"] = model.policy.state_dict()
            tensors[f"optimizer_{index}"] = model.policy.optimizer.state_dict()
        with atomic_open(staging / "policies.pt", "wb") as handle:
            torch.save(tensors, handle)
        name, keys, pos, has_gauss, cached = trainer._numpy_rng
        atomic_write_json(
            staging / "meta.json",
            {
                "format": FORMAT,
                "config": trainer.config.model_dump(mode="json"),
                "num_timesteps": trainer.num_timesteps,
                "n_updates": [model._n_updates for model in trainer.models],
                "numpy_rng": [name, np.asarray(keys).tolist(), int(pos), int(has_gauss), float(cached)],
                "episodes": {  # the recent-episode statistics, so logged means continue unchanged
                    "original": list(trainer._episode_original),
                    "shaped": [r.tolist() for r in trainer._episode_shaped],
                    "length": list(trainer._episode_length),
                },
                "agent_names": list(trainer.env.agent_names),
                "observation_shape": list(trainer.env.observation_space.shape),
                "n_actions": int(trainer.env.action_space.n),
            },
        )
        old = target.with_name(f".{target.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        if target.exists():
            target.rename(old)
        staging.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def load_checkpoint(path: str | Path, env: AgentRows, logger: Logger | None = None) -> MultiAgentPPO:
    """A trainer on ``env`` in the state ``save_checkpoint`` wrote; the env must match the saved one."""
    folder = Path(path)
    meta = _read_meta(folder)
    found = {
        "agent_names": list(env.agent_names),
        "observation_shape": list(env.observation_space.shape),
        "n_actions": int(env.action_space.n),
    }
    for key, value in found.items():
        if meta[key] != value:
            raise IncompatibleModelError(f"checkpoint {str(folder)!r} has {key}={meta[key]}, the env {value}")
    trainer = MultiAgentPPO(env, MarlConfig(**meta["config"]), logger)
    tensors = torch.load(folder / "policies.pt", map_location="cpu", weights_only=True)
    for index, model in enumerate(trainer.models):
        model.policy.load_state_dict(tensors[f"policy_{index}"])
        model.policy.optimizer.load_state_dict(tensors[f"optimizer_{index}"])
        model._n_updates = int(meta["n_updates"][index])
    trainer.num_timesteps = int(meta["num_timesteps"])
    episodes = meta["episodes"]
    trainer._episode_original.extend(episodes["original"])
    trainer._episode_shaped.extend(np.asarray(r) for r in episodes["shaped"])
    trainer._episode_length.extend(episodes["length"])
    trainer._torch_rng = tensors["torch_rng"]
    name, keys, pos, has_gauss, cached = meta["numpy_rng"]
    trainer._numpy_rng = (name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached)
    return trainer


def _read_meta(folder: Path) -> dict[str, Any]:
    meta_path = folder / "meta.json"
    if not meta_path.is_file() or not (folder / "policies.pt").is_file():
        raise FileFormatError(
            f"{str(folder)!r} is not a rlkit.marl checkpoint (meta.json or policies.pt missing)"
        )
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as error:
        raise FileFormatError(f"{str(meta_path)!r} is not valid JSON: {error}") from error
    if meta.get("format") != FORMAT:
        raise FileFormatError(f"{str(meta_path)!r} has format {meta.get('format')!r}, expected {FORMAT!r}")
    return meta

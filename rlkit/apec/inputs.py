"""A task's APEC inputs as data: its demonstrations and its demonstrator's checkpoints (actors only).

The demonstrator (SAC on the true reward, hours of CPU) is deterministic: the same config and seed
give the same checkpoints. What the later stages need of it, the demos and the actors the held-out
set rolls out, is small, so it is kept as versioned data (as the reference ships its demos as
``expert_data/*_expert.pkl``), and a run on a fresh machine starts from it instead of retraining.

A folder of inputs holds ``inputs.json`` (format ``rlkit.apec-inputs``: the task, the settings
that made them, the actor's spaces and network, each checkpoint's step and score, the SHA-256 of
every file), ``demos.npz`` and ``demos.json`` exactly as the demos stage wrote them, and
``demonstrator/step_<n>.safetensors`` per checkpoint: the actor's weights in float32, so a
rollout of a stored actor equals one of the full checkpoint. ``load_actor`` rebuilds an SB3
policy that acts with them (its critic is not kept).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from stable_baselines3.common.policies import BasePolicy

from rlkit.apec.demonstrator import (
    checkpoint_step,
    demonstrator_checkpoints,
    load_demonstrator,
    read_demo_report,
)
from rlkit.data import Trajectory
from rlkit.errors import FileFormatError, InvalidDataError
from rlkit.persistence.agents import space_from_json, space_to_json
from rlkit.persistence.formats import read_header, write_header

KIND = "rlkit.apec-inputs"
MANIFEST = "inputs.json"
ACTORS = "demonstrator"
_FIELDS = {"task": str, "algo": str, "observation_space": dict, "action_space": dict, "net_arch": list,
           "checkpoints": list, "settings": dict}


@dataclass(frozen=True)
class Inputs:
    """A loaded folder of inputs: its manifest, and the demos (loaded on ``demos()``)."""

    folder: Path
    manifest: dict[str, Any]

    @property
    def steps(self) -> list[int]:
        """The demonstrator's checkpoint steps, in order."""
        return [int(entry["step"]) for entry in self.manifest["checkpoints"]]

    def demos(self) -> list[Trajectory]:
        from rlkit.ail.demos import load_demos

        return load_demos(self.folder / "demos.npz")

    def actor(self, step: int) -> BasePolicy:
        """The checkpoint at ``step``, for acting (``load_actor``)."""
        return load_actor(self, step)


def export_inputs(task: str, demos_dir: str | os.PathLike[str], out: str | os.PathLike[str],
                  settings: dict[str, Any]) -> Path:
    """Write a finished demos stage's inputs into ``out`` (created; files there are replaced).

    Args:
        task: the env id the demonstrator trained on.
        demos_dir: the stage's folder: ``demos.npz``, ``demos.json``, ``demonstrator/step_*.zip``.
        out: the inputs folder to write.
        settings: the demos settings that made them (recorded, and compared by ``regenerate``).

    Returns:
        The manifest's path.
    """
    source, folder = Path(demos_dir), Path(out)
    checkpoints = demonstrator_checkpoints(source / "demonstrator")
    if not checkpoints or not (source / "demos.npz").is_file():
        raise InvalidDataError(f"{source}: not a finished demos stage (demos.npz and "
                               "demonstrator/step_*.zip)")
    from rlkit.factories.algorithms import ALGORITHMS

    report = read_demo_report(source)
    (folder / ACTORS).mkdir(parents=True, exist_ok=True)
    written, entries, spec = [], [], None
    for path in checkpoints:
        model = load_demonstrator(ALGORITHMS[settings.get("algo", "sac")], path)
        actor = getattr(model.policy, "actor", None)
        if actor is None:
            raise InvalidDataError(f"{path}: a {type(model).__name__} checkpoint has no separate actor to "
                                   "keep; APEC's demonstrators are SAC (demos.algo=sac)")
        target = folder / ACTORS / f"{path.stem}.safetensors"
        save_file({k: v.detach().contiguous() for k, v in actor.state_dict().items()}, str(target))
        written.append(target)
        entries.append({"step": checkpoint_step(path), "file": target.relative_to(folder).as_posix(),
                        "score": report.checkpoint_returns.get(path.name)})
        spec = {"algo": type(model).__name__, "observation_space": space_to_json(model.observation_space),
                "action_space": space_to_json(model.action_space),
                "net_arch": list(getattr(model.policy, "net_arch"))}  # noqa: B009 (not on BasePolicy)
    for name in ("demos.npz", "demos.json"):
        shutil.copyfile(source / name, folder / name)
        written.append(folder / name)
    assert spec is not None
    write_header(folder / MANIFEST, KIND, {"task": task, **spec, "checkpoints": entries, "settings": settings,
                                           "demo_checkpoint_step": report.checkpoint_step,
                                           "demo_returns": report.demo_returns},
                 covers=written)
    return folder / MANIFEST


def load_inputs(folder: str | os.PathLike[str]) -> Inputs:
    """A folder ``export_inputs`` wrote, every file's checksum verified.

    Args:
        folder: the inputs folder.

    Returns:
        Its manifest, with the demos and actors loaded on demand.

    Raises:
        FileFormatError: naming the file when one is missing, damaged or of another format.
    """
    root = Path(folder)
    manifest = read_header(root / MANIFEST, KIND, _FIELDS)
    for entry in manifest["checkpoints"]:
        if not (isinstance(entry, dict) and isinstance(entry.get("step"), int)
                and isinstance(entry.get("file"), str)):
            raise FileFormatError(f"{root / MANIFEST}: bad checkpoint entry {entry!r}")
    return Inputs(root, manifest)


def load_actor(inputs: Inputs, step: int) -> BasePolicy:
    """An SB3 policy of the manifest's algorithm acting with the stored actor of ``step``.

    Args:
        inputs: the loaded inputs.
        step: one of ``inputs.steps``.

    Returns:
        The policy (on the CPU, in eval mode); its ``predict`` acts as the checkpoint did.
    """
    entry = next((e for e in inputs.manifest["checkpoints"] if e["step"] == step), None)
    if entry is None:
        raise InvalidDataError(f"{inputs.folder}: no demonstrator checkpoint at step {step} "
                               f"(there are {inputs.steps})")
    from rlkit.factories.algorithms import ALGORITHMS

    manifest, where = inputs.manifest, inputs.folder / MANIFEST
    by_name = {cls.__name__: cls for cls in ALGORITHMS.values()}
    algo = by_name.get(manifest["algo"])
    if algo is None:
        raise FileFormatError(f"{where}: algorithm {manifest['algo']!r} is not one of {sorted(by_name)}")
    policy_class = algo.policy_aliases["MlpPolicy"]
    policy = policy_class(space_from_json(manifest["observation_space"], where),
                          space_from_json(manifest["action_space"], where),
                          lambda _: 0.0, net_arch=manifest["net_arch"])
    path = inputs.folder / entry["file"]
    try:
        weights = load_file(str(path))
        getattr(policy, "actor").load_state_dict(weights)  # noqa: B009 (an off-policy policy's)
    except (OSError, RuntimeError, ValueError) as error:
        raise FileFormatError(f"{path}: not the actor of {manifest['algo']} {manifest['net_arch']} "
                              f"({error})") from None
    policy.set_training_mode(False)
    return policy.to(torch.device("cpu"))

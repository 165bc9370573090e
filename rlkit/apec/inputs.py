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

A task's held-out set (``rlkit.runners.apec.run_heldout``: rollouts of a separate AIL run's
checkpoints, of the demonstrator's but the demo's own, of random actions) is added later, when
built: ``heldout.npz`` (observations and actions in float16, the precision the set is built at
(``float16_store``), the true rewards in float32, lengths, terminal flags, each trajectory's
source), named in the manifest's ``heldout`` entry with the settings that made it.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from stable_baselines3.common.policies import BasePolicy

from rlkit.apec.demonstrator import (
    checkpoint_step,
    demonstrator_checkpoints,
    load_demonstrator,
    read_demo_report,
)
from rlkit.data import Trajectory, TrajectoryStore
from rlkit.errors import ConfigError, FileFormatError, InvalidDataError
from rlkit.persistence.agents import space_from_json, space_to_json
from rlkit.persistence.arrays import load_npz, save_npz
from rlkit.persistence.formats import check_npz_header, npz_header, read_header, write_header
from rlkit.persistence.resume_config import ABSENT, changed_paths

KIND = "rlkit.apec-inputs"
MANIFEST = "inputs.json"
ACTORS = "demonstrator"
HELDOUT_FILE = "heldout.npz"
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


def demonstrator_policies(demos_dir: str | os.PathLike[str], algo: str) -> list[tuple[int, partial[Any]]]:
    """The demonstrator's checkpoints a held-out set rolls out: every one but the demo's own.

    ``demos_dir`` is a demos stage's folder (``demonstrator/step_*.zip``, ``demos.json``) or a
    folder of inputs (``inputs.json``, the actors): the same checkpoints either way, each with its
    index among all of them (which seeds its rollouts, so leaving one out moves no other's seeds).

    Args:
        demos_dir: the folder.
        algo: the demonstrator's algorithm (``demos.algo``) for a stage's SB3 checkpoints.

    Returns:
        ``(index, loader)`` pairs; a loader is picklable and gives a policy for acting. Empty when
        the demos were given without a demonstrator.
    """
    folder = Path(demos_dir)
    if (folder / MANIFEST).is_file():
        inputs = load_inputs(folder)
        skip = inputs.manifest["demo_checkpoint_step"]
        return [(k, partial(_stored_actor, str(folder), step))
                for k, step in enumerate(inputs.steps) if step != skip]
    checkpoints = demonstrator_checkpoints(folder / ACTORS)
    if not checkpoints:
        return []
    from rlkit.factories.algorithms import ALGORITHMS

    demo = read_demo_report(folder).checkpoint
    return [(k, partial(load_demonstrator, ALGORITHMS[algo], path))
            for k, path in enumerate(checkpoints) if path.name != Path(demo).name]


def _stored_actor(folder: str, step: int) -> BasePolicy:
    return load_actor(load_inputs(folder), step)


def float16_store(store: TrajectoryStore) -> TrajectoryStore:
    """``store`` with its float observations and actions rounded to float16 (kept as float32): the
    precision of a held-out set committed as data, so a set built here and one read back from the
    data are the same arrays. Rewards (the true returns) stay as they are; uint8 frames too.

    Args:
        store: the trajectories.

    Returns:
        A new store.
    """
    arrays = dict(store.arrays())
    for name in ("obs", "acts"):
        if name in arrays and arrays[name].dtype.kind == "f":
            arrays[name] = arrays[name].astype(np.float16).astype(np.float32)
    return TrajectoryStore.from_arrays(arrays, origin="a held-out store")


def export_heldout(folder: str | os.PathLike[str], heldout_dir: str | os.PathLike[str],
                   settings: dict[str, Any]) -> Path:
    """Add a built held-out set (``store.npz`` and ``sources.npz`` of ``run_heldout``) to a folder of
    inputs: ``heldout.npz``, and the manifest rewritten to name it (and cover it).

    Args:
        folder: the inputs folder (``export_inputs``'s).
        heldout_dir: the held-out stage's folder.
        settings: what made the set (recorded, and compared by ``regenerate``).

    Returns:
        The manifest's path.

    Raises:
        InvalidDataError: the set is not a vector task's at float16 precision (``float16_store``).
    """
    root, source = Path(folder), Path(heldout_dir)
    manifest = load_inputs(root).manifest
    store = TrajectoryStore.load(source / "store.npz")
    arrays = store.arrays()
    if "obs" not in arrays or "states" in arrays or arrays["obs"].dtype.kind != "f":
        raise InvalidDataError(f"{source}: only a vector task's held-out set (float observations, no "
                               "simulator states) is kept as data")
    kept = {name: arrays[name].astype(np.float16) for name in ("obs", "acts")}
    if any(not np.array_equal(kept[name].astype(arrays[name].dtype), arrays[name]) for name in kept):
        raise InvalidDataError(f"{source}/store.npz: not at float16 precision (float16_store); "
                               "built before the held-out set was rounded, so build it again")
    sources = np.asarray(load_npz(source / "sources.npz")["source"], dtype=np.int64)
    if len(sources) != len(store):
        raise InvalidDataError(f"{source}: {len(sources)} sources for {len(store)} trajectories")
    save_npz(root / HELDOUT_FILE, {"_header": npz_header(KIND), **kept, "rews": arrays["rews"],
                                   "lengths": arrays["lengths"], "terminal": arrays["terminal"],
                                   "source": sources})
    counts = {str(k): int(n) for k, n in zip(*np.unique(sources, return_counts=True), strict=True)}
    data = {k: v for k, v in manifest.items() if k not in ("format", "sha256", "header_sha256")}
    data["heldout"] = {"file": HELDOUT_FILE, "settings": settings, "trajectories": len(store),
                       "sources": counts}
    covered = [root / name for name in manifest["sha256"] if name != HELDOUT_FILE] + [root / HELDOUT_FILE]
    write_header(root / MANIFEST, KIND, data, covers=covered)
    return root / MANIFEST


def load_heldout(inputs: Inputs) -> tuple[TrajectoryStore, np.ndarray]:
    """The held-out set ``export_heldout`` added to ``inputs`` (its checksum verified on load).

    Args:
        inputs: the loaded inputs.

    Returns:
        The store (observations and actions as float32) and each trajectory's source.

    Raises:
        InvalidDataError: the folder has no held-out set.
        FileFormatError: naming the file when it is damaged or not of this format.
    """
    entry = inputs.manifest.get("heldout")
    if not isinstance(entry, dict):
        raise InvalidDataError(f"{inputs.folder}: no held-out set (python experiments/apec_data.py "
                               "export-heldout adds one)")
    path = inputs.folder / HELDOUT_FILE
    arrays = load_npz(path)
    check_npz_header(arrays, KIND, path)
    try:
        store = TrajectoryStore.from_arrays(
            {"obs": arrays["obs"].astype(np.float32), "acts": arrays["acts"].astype(np.float32),
             "rews": arrays["rews"], "lengths": arrays["lengths"], "terminal": arrays["terminal"]},
            origin=str(path))
        sources = np.asarray(arrays["source"], dtype=np.int64)
    except KeyError as missing:
        raise FileFormatError(f"{path}: missing array {missing}") from None
    if not len(store) == len(sources) == entry.get("trajectories"):
        raise FileFormatError(f"{path}: {len(store)} trajectories and {len(sources)} sources; the "
                              f"manifest says {entry.get('trajectories')}")
    return store, sources


def refuse_other_settings(recorded: Any, settings: Any, what: str, where: Path) -> None:
    """Refuse inputs made with other settings than a run's, naming each that differs.

    Args:
        recorded: the settings the inputs record (JSON data).
        settings: the run's (JSON data); ``device`` entries are not compared (where a net
            trains does not change what the CPU-pinned stages make).
        what: what the inputs are, for the message (``"demos"``, ``"held-out set"``).
        where: the manifest, for the message.

    Raises:
        ConfigError: listing each differing setting with both values.
    """
    found = [(path, None if a is ABSENT else a, None if b is ABSENT else b)
             for path, a, b in changed_paths(recorded, settings) if path.rsplit(".", 1)[-1] != "device"]
    if found:
        shown = "; ".join(f"{path}: {a!r} there, {b!r} here" for path, a, b in found[:8])
        raise ConfigError(f"{where}: its {what} were made with other settings than this run's ({shown}); "
                          "set inputs: null to make them again, or run with the settings they record")


def install_demos(inputs: Inputs, demos_dir: str | os.PathLike[str]) -> list[Trajectory]:
    """Copy the inputs into a run's demos folder, which then reads as a folder of inputs
    (``load_inputs``, ``demonstrator_policies``); ``demos.npz``, which marks the demos stage done,
    is written last.

    Args:
        inputs: the loaded inputs.
        demos_dir: the run's demos folder (created).

    Returns:
        The demos.
    """
    target = Path(demos_dir)
    names = [*inputs.manifest["sha256"], MANIFEST]
    for name in sorted(names, key=lambda n: n == "demos.npz"):
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        staged = target / f"{name}.part"
        shutil.copyfile(inputs.folder / name, staged)
        os.replace(staged, target / name)
    return inputs.demos()


def install_heldout(inputs: Inputs, heldout_dir: str | os.PathLike[str]) -> None:
    """Write the inputs' held-out set into a run's held-out folder as ``run_heldout`` reads it
    (``store.npz``, then ``sources.npz``: ``run_heldout`` builds none when the store is there).

    Args:
        inputs: the loaded inputs (with a held-out set).
        heldout_dir: the folder (created).
    """
    store, sources = load_heldout(inputs)
    target = Path(heldout_dir)
    target.mkdir(parents=True, exist_ok=True)
    save_npz(target / "sources.npz", {"source": sources})
    store.save(target / "store.npz")

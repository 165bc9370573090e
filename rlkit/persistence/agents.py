"""SB3 agents saved in SB3's own ``.zip`` and loaded back without unpickling anything.

SB3's zip keeps a few fields cloudpickled (the spaces, the policy class, schedules, buffer
classes), and ``PPO.load`` unpickles them: loading a shared checkpoint can run any code it
holds. ``save_agent`` writes the zip plus ``<name>.json`` with those fields as plain data, and
``load_agent`` hands them to SB3 as ``custom_objects``, so SB3 unpickles nothing (its tensors
are read with ``weights_only``). A zip holding any other pickled field is refused. The zip stays
a normal SB3 file: ``PPO.load`` still opens it. The ``.json`` (format ``rlkit.sb3-agent``) holds
the zip's SHA-256 and its own, so a damaged file is refused by name, and so is one without them.
The zip is read once, from a regular file within ``MAX_BYTES["zip"]``, and SB3 loads those bytes.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from rlkit.errors import FileFormatError, InvalidDataError
from rlkit.persistence.formats import read_header, tag, verify_checksums, write_header
from rlkit.persistence.reading import read_regular

KIND = "rlkit.sb3-agent"
FORMAT = tag(KIND)
_FIELDS = {"algo": str, "policy": str, "observation_space": dict, "action_space": dict}
# What save_agent leaves out of the zip: the state of a run in progress, which SB3 would pickle; a
# loaded agent starts from a fresh env reset anyway (SB3 discards the last observation on load).
UNSAVED_ATTRIBUTES = ("_last_obs", "_last_original_obs", "_last_episode_starts", "ep_info_buffer",
                      "ep_success_buffer")


def save_agent(agent: BaseAlgorithm, path: str | os.PathLike[str]) -> Path:
    """``<path>.zip`` (SB3) and ``<path>.json`` (what SB3 would pickle, as data); returns the zip."""
    zip_path = Path(path).with_suffix(".zip")
    policy = next((name for name, cls in agent.policy_aliases.items() if cls is type(agent.policy)), None)
    if policy is None:
        raise InvalidDataError(f"{type(agent.policy).__name__} is not one of {type(agent).__name__}'s "
                               f"named policies {sorted(agent.policy_aliases)}")
    plain: dict[str, Any] = {
        "algo": type(agent).__name__, "policy": policy,
        "observation_space": space_to_json(agent.observation_space),
        "action_space": space_to_json(agent.action_space),
    }
    if hasattr(agent, "clip_range"):  # PPO: a constant schedule is all rlkit builds
        plain["clip_range"] = _constant(agent.clip_range, "clip_range")
    if hasattr(agent, "train_freq"):  # off-policy
        plain["train_freq"] = [agent.train_freq.frequency, agent.train_freq.unit.value]
    agent.save(zip_path, exclude=list(UNSAVED_ATTRIBUTES))
    write_header(zip_path.with_suffix(".json"), KIND, plain, covers=[zip_path])  # with the zip's SHA-256
    return zip_path


def load_agent(
    algorithms: dict[str, type[BaseAlgorithm]], path: str | os.PathLike[str], env: VecEnv | None = None,
    device: str = "cpu",
) -> BaseAlgorithm:
    """The agent ``save_agent`` wrote. Without ``env`` it is for acting only: an off-policy agent
    gets no replay buffer worth the name (one slot), instead of the millions it trained with."""
    zip_path = Path(path).with_suffix(".zip")
    json_path = zip_path.with_suffix(".json")
    plain = read_header(json_path, KIND, _FIELDS, verify=False)
    by_name = {cls.__name__: cls for cls in algorithms.values()}
    algo = by_name.get(plain["algo"])
    if algo is None:
        raise FileFormatError(f"{zip_path}: algorithm {plain['algo']!r} is not one of {sorted(by_name)}")
    if plain["policy"] not in algo.policy_aliases:
        raise FileFormatError(f"{json_path}: policy {plain['policy']!r} is not one of "
                              f"{plain['algo']}'s {sorted(algo.policy_aliases)}")
    given: dict[str, Any] = {
        "observation_space": space_from_json(plain["observation_space"], json_path),
        "action_space": space_from_json(plain["action_space"], json_path),
        "policy_class": algo.policy_aliases[plain["policy"]],
        "lr_schedule": None,  # rebuilt from the stored learning rate by SB3's _setup_model
        "rollout_buffer_class": None, "replay_buffer_class": None,  # None: SB3's default for the spaces
    }
    if "clip_range" in plain:
        if not isinstance(plain["clip_range"], int | float) or isinstance(plain["clip_range"], bool):
            raise FileFormatError(f"{json_path}: clip_range is {plain['clip_range']!r}, expected a number")
        given["clip_range"] = plain["clip_range"]
    if "train_freq" in plain:
        freq = plain["train_freq"]
        if not (isinstance(freq, list) and len(freq) == 2 and isinstance(freq[0], int)
                and freq[1] in ("step", "episode")):
            raise FileFormatError(f"{json_path}: train_freq is {freq!r}, expected [n, 'step' or 'episode']")
        given["train_freq"] = tuple(freq)
    raw = _read_zip(zip_path)
    pickled = _pickled_fields(raw, zip_path)
    unknown = sorted(pickled - set(given))
    if unknown:
        raise FileFormatError(f"{zip_path}: holds pickled {unknown}; rlkit loads no pickled code")
    verify_checksums(json_path, plain)  # after the pickle check, which names what SB3's own save adds
    extra: dict[str, Any] = {"buffer_size": 1} if env is None and "train_freq" in plain else {}
    try:
        return algo.load(io.BytesIO(raw), env=env, device=device,
                         custom_objects={key: given[key] for key in pickled}, **extra)
    except Exception as error:  # zipfile, torch and SB3 each raise their own kinds
        raise FileFormatError(f"{zip_path}: cannot be loaded ({error})") from None


def space_to_json(space: spaces.Space) -> dict[str, Any]:
    if isinstance(space, spaces.Box):
        return {"type": "Box", "low": space.low.tolist(), "high": space.high.tolist(),
                "dtype": str(space.dtype)}
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    raise InvalidDataError(f"cannot write a {type(space).__name__} space as data (Box and Discrete only)")


def space_from_json(data: dict[str, Any], where: str | os.PathLike[str] = "space") -> spaces.Space:
    """The space ``space_to_json`` wrote; anything else is a FileFormatError naming ``where``."""
    kind = data.get("type") if isinstance(data, dict) else None
    try:
        if kind == "Box":
            dtype = np.dtype(data["dtype"])
            return spaces.Box(np.asarray(data["low"], dtype), np.asarray(data["high"], dtype), dtype=dtype)
        if kind == "Discrete":
            return spaces.Discrete(int(data["n"]), start=int(data["start"]))
    except (KeyError, TypeError, ValueError, OverflowError) as error:
        raise FileFormatError(f"{where}: bad {kind} space ({type(error).__name__}: {error})") from None
    raise FileFormatError(f"{where}: unknown space {kind!r}")


def _constant(schedule: Any, name: str) -> float:
    first, last = float(schedule(1.0)), float(schedule(0.0))
    if first != last:
        raise InvalidDataError(f"{name} is a schedule ({first} -> {last}); only a constant is saved as data")
    return first


def _read_zip(zip_path: Path) -> bytes:
    try:
        return read_regular(zip_path, "zip")
    except FileNotFoundError:
        raise FileFormatError(f"{zip_path}: no such file") from None
    except OSError as error:
        raise FileFormatError(f"{zip_path}: cannot be read ({error})") from None


def _pickled_fields(raw: bytes, zip_path: Path) -> set[str]:
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            data = json.loads(archive.read("data"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as error:
        raise FileFormatError(f"{zip_path}: not an SB3 agent file ({error})") from None
    return {key for key, value in data.items() if isinstance(value, dict) and ":serialized:" in value}

"""An SB3 replay buffer's filled rows as ``.npz`` arrays (no pickle), tagged ``rlkit.replay``: one
file (``save_replay``), or chunk files of which a save writes only those that changed since the
last (``save_replay_chunks``), so saving it every round costs the new rows, not the buffer."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rlkit.errors import FileFormatError
from rlkit.persistence.arrays import load_npz, save_npz
from rlkit.persistence.formats import check_npz_header, npz_header, sha256_file

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
    """Fill ``buffer`` (same size and spaces as the saved one) back from ``save_replay``'s file;
    a file without its format header, or of another kind or version, is refused."""
    arrays = load_npz(path)
    check_npz_header(arrays, KIND, path)
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


# -- chunked: written a piece at a time, for a file that is saved again and again ----------------
CHUNK_BYTES = 1 << 20  # about this much of the buffer's rows per chunk file
_ROW_ARRAYS = tuple(name for name in _REPLAY_ARRAYS if name != "rewards")


def chunk_rows(buffer: ReplayBuffer, arrays: tuple[str, ...] = _ROW_ARRAYS) -> int:
    """How many buffer positions one chunk file of ``arrays`` holds (a power of two near
    ``CHUNK_BYTES``).

    Args:
        buffer: the SB3 replay buffer.
        arrays: the buffer's arrays the chunk holds (default: all but the rewards).

    Returns:
        Positions per chunk.
    """
    per_position = sum(getattr(buffer, name)[:1].nbytes for name in arrays
                       if getattr(buffer, name, None) is not None)
    rows = 1 << max(0, (CHUNK_BYTES // max(per_position, 1)).bit_length() - 1)
    return min(rows, buffer.buffer_size)


def _shape(buffer: ReplayBuffer) -> dict[str, int]:
    return {"buffer_size": buffer.buffer_size, "n_envs": buffer.n_envs, "chunk": chunk_rows(buffer),
            "reward_chunk": chunk_rows(buffer, ("rewards",))}


def save_replay_chunks(buffer: ReplayBuffer, folder: str | os.PathLike[str], prefix: str,
                       previous: dict[str, Any] | None, timestep: int,
                       generation: int) -> tuple[dict[str, Any], list[str]]:
    """Save ``buffer`` as chunk files under ``folder/prefix``, writing only what changed since the
    save ``previous`` describes: the chunks holding positions added since then (counted from the
    env steps taken, ``timestep``) and the reward chunks whose values changed (a relabelling
    rewrites every reward; they are 1/10 or less of a row). Files ``previous`` names are never
    touched, so the save it describes stays whole until its manifest is replaced. Without a
    usable ``previous`` (none, another buffer shape, counts that do not add up) all is written.

    Args:
        buffer: the SB3 replay buffer.
        folder: the folder the manifest's paths are relative to.
        prefix: the subfolder of ``folder`` the chunk files go to.
        previous: the manifest the last save returned (None: none).
        timestep: the agent's env steps so far (``num_timesteps``).
        generation: a number no earlier save used (it names the new files).

    Returns:
        The manifest (JSON-able: what ``load_replay_chunks`` reads, with each file's SHA-256) and
        the paths of the files written (relative to ``folder``).
    """
    folder = Path(folder)
    size, shape = buffer.buffer_size, _shape(buffer)
    rows, reward_rows = shape["chunk"], shape["reward_chunk"]
    extent = size if buffer.full else min(size, buffer.pos + int(buffer.optimize_memory_usage))
    dirty = _dirty_chunks(buffer, previous, shape, timestep, rows)
    old_rows = previous.get("rows", {}) if dirty is not None and previous else {}
    old_rewards = previous.get("rewards", {}) if previous and previous.get("shape") == shape else {}
    manifest: dict[str, Any] = {"shape": shape, "pos": int(buffer.pos), "full": bool(buffer.full),
                                "timestep": int(timestep), "rows": {}, "rewards": {}}
    written: list[str] = []
    for chunk in range(-(-extent // rows)):
        key, part = str(chunk), slice(chunk * rows, min((chunk + 1) * rows, size))
        if dirty is not None and chunk not in dirty and key in old_rows:
            manifest["rows"][key] = old_rows[key]
            continue
        arrays = {name: getattr(buffer, name)[part] for name in _ROW_ARRAYS
                  if getattr(buffer, name, None) is not None}
        manifest["rows"][key] = _write_chunk(folder, f"{prefix}/rows-c{chunk:05d}-g{generation:07d}.npz",
                                             arrays, written)
    for chunk in range(-(-extent // reward_rows)):  # kept where their values are the same
        key = str(chunk)
        rewards = buffer.rewards[chunk * reward_rows:min((chunk + 1) * reward_rows, size)]
        digest = hashlib.sha256(rewards.tobytes()).hexdigest()
        if old_rewards.get(key, {}).get("values_sha256") == digest:
            manifest["rewards"][key] = old_rewards[key]
            continue
        entry = _write_chunk(folder, f"{prefix}/rewards-c{chunk:05d}-g{generation:07d}.npz",
                             {"rewards": rewards}, written)
        manifest["rewards"][key] = {**entry, "values_sha256": digest}
    return manifest, written


def _dirty_chunks(buffer: ReplayBuffer, previous: dict[str, Any] | None, shape: dict[str, int],
                  timestep: int, rows: int) -> set[int] | None:
    """The chunks holding positions added since ``previous`` (None: all, nothing can be kept)."""
    if not previous or previous.get("shape") != shape:
        return None
    steps = timestep - int(previous["timestep"])
    if steps < 0 or steps % buffer.n_envs:
        return None
    added, start, size = steps // buffer.n_envs, int(previous["pos"]), buffer.buffer_size
    full = bool(previous["full"]) or start + added >= size
    if (start + added) % size != buffer.pos or buffer.full != full:
        return None  # the buffer did not get here from there by adding rows
    if added >= size:
        return None
    # with optimize_memory_usage the position after the last added one holds its next obs
    stop = start + added + int(buffer.optimize_memory_usage and added > 0)
    return {(position % size) // rows for position in range(start, stop)}


def _write_chunk(folder: Path, name: str, arrays: dict[str, np.ndarray],
                 written: list[str]) -> dict[str, Any]:
    save_npz(folder / name, {**arrays, "_header": npz_header(KIND)})
    written.append(name)
    return {"file": name, "sha256": sha256_file(folder / name)}


def chunk_files(manifest: dict[str, Any]) -> dict[str, str]:
    """Every file a chunked save's manifest names, with its SHA-256.

    Args:
        manifest: what ``save_replay_chunks`` returned.

    Returns:
        Path (relative to the save's folder) -> SHA-256.
    """
    return {entry["file"]: entry["sha256"] for part in ("rows", "rewards")
            for entry in manifest[part].values()}


def load_replay_chunks(buffer: ReplayBuffer, folder: str | os.PathLike[str], manifest: Any) -> None:
    """Fill ``buffer`` (same size and spaces as the saved one) from ``save_replay_chunks``'s
    files. The files' checksums are the caller's to verify (``chunk_files`` lists them).

    Args:
        buffer: a fresh SB3 replay buffer.
        folder: the folder the manifest's paths are relative to.
        manifest: the manifest ``save_replay_chunks`` returned.
    """
    folder = Path(folder)
    expected = _shape(buffer)
    try:
        shape, pos, full = manifest["shape"], int(manifest["pos"]), bool(manifest["full"])
        files = [(int(key) * expected[size], entry["file"], expected[size])
                 for part, size in (("rows", "chunk"), ("rewards", "reward_chunk"))
                 for key, entry in manifest[part].items()]
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise FileFormatError(f"{folder}: not a replay buffer manifest ({type(error).__name__}: "
                              f"{error})") from None
    if shape != expected or not 0 <= pos <= buffer.buffer_size:
        raise FileFormatError(f"{folder}: a replay buffer of {shape} at position {pos}; this agent's "
                              f"is {expected}")
    for start, name, rows in files:
        path = folder / name
        arrays = load_npz(path)
        check_npz_header(arrays, KIND, path)
        arrays.pop("_header")
        for array, saved in arrays.items():
            target = getattr(buffer, array, None) if array in _REPLAY_ARRAYS else None
            part = None if target is None or start < 0 else target[start:start + rows]
            if part is None or saved.shape != part.shape:
                raise FileFormatError(f"{path}: {array} of shape {saved.shape} does not fit the buffer "
                                      f"at position {start}")
            part[:] = saved
    buffer.pos, buffer.full = pos, full

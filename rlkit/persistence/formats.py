"""Every kind of file rlkit writes and reads back, in one table (``FORMATS``), and the one way to
write and read their headers.

A header is a JSON object naming its format (``"format": "<kind>/<version>"``), the SHA-256 of its
own fields (``"header_sha256"``: a flipped digit in the header is caught too) and, for the kinds
whose payload has no check of its own (torch files), the SHA-256 of each payload file it covers
(``"sha256": {"relative/path": hex}``), written last so its presence marks a complete artefact.
A header without its digest (or, for a ``checksummed`` kind, without its payload checksums) is
refused: stripping the digest must not make an edit pass. Each kind is read in its one version;
a file of an older or a newer version is refused, naming the version found and the one read.
Reading checks, in order: a regular file within its size limit (``rlkit.persistence.reading``),
readable JSON, an object, the kind, its version, the checksum fields present, the fields' types,
and the checksums. Every defect is a
``FileFormatError`` naming the file and what is wrong, never a raw traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlkit.errors import FileFormatError
from rlkit.persistence.atomic import _json_default, atomic_write_json
from rlkit.persistence.reading import read_json, sha256_regular

CHECKSUMS = "sha256"  # the header field that maps covered files to their SHA-256
SELF_CHECKSUM = "header_sha256"  # the SHA-256 of the header's other fields (canonical JSON)


@dataclass(frozen=True)
class Format:
    """One kind of artefact: its tag, where its header lives, what it covers and how it is checked.

    Attributes:
        kind: the kind's name, ``"rlkit.<what>"``: the key in ``FORMATS``.
        version: the one version that is written and read (the tag's ``/<version>``).
        header: where the header lives (a file name pattern, or where inside the payload).
        payload: what the header covers, in words.
        check: what reading it checks, in words.
        writer: the module that writes and reads the kind.
        checksummed: the header must list its payload's SHA-256 (``write_header`` writes the map
            even when it covers no file); every header must carry its own digest.
    """

    kind: str
    version: int
    header: str
    payload: str
    check: str
    writer: str
    checksummed: bool = False

    @property
    def tag(self) -> str:
        return f"{self.kind}/{self.version}"


FORMATS: dict[str, Format] = {f.kind: f for f in (
    Format("rlkit.sb3-agent", 1, "<name>.json", "<name>.zip (SB3's own file, nothing unpickled)",
           "zip CRC-32 per member; pickled fields refused", "rlkit.persistence.agents"),
    Format("rlkit.reward_model", 1, "model.json", "model.safetensors",
           "weights_sha256 in model.json; safetensors header", "rlkit.reward.serialization"),
    # /2: observations as ``obs``, or pixel frames stacked k deep (``frames`` + ``frame_stack``)
    Format("rlkit.trajectories", 2, "_header array inside the .npz", "the .npz arrays",
           "zip CRC-32 per array; shapes checked against the lengths", "rlkit.data.store"),
    Format("rlkit.preferences", 1, "<name>.json", "<name>.npz (pairs, labels, trajectories)",
           "npz_sha256 in the .json; zip CRC-32", "rlkit.feedback.dataset"),
    Format("rlkit.replay", 1, "_header array inside replay.npz", "an SB3 replay buffer's filled rows",
           "zip CRC-32 per array; shapes checked against the buffer", "rlkit.persistence.replay"),
    Format("rlkit.apec-inputs", 1, "inputs.json", "demos.npz, demos.json, demonstrator/step_*.safetensors",
           "sha256 of every payload file in inputs.json", "rlkit.apec.inputs", checksummed=True),
    # /3: trainer_state.pt's generator RNGs as rlkit.persistence.sb3_state.rng_tensors (CUDA's too)
    Format("rlkit.ail_checkpoint", 3, "round_NNNNNN/meta.json",
           "generator.zip/.json, reward/, shaping/, trainer_state.pt",
           "sha256 of every payload file in meta.json", "rlkit.ail.checkpoints", checksummed=True),
    # The resume points and their parts: committed and read through rlkit.persistence.run_state
    # (POINT_KINDS), their headers naming the command, its config and every payload file's SHA-256.
    # /4: a run-state point (command and config; one checksum map for the round's files and chunks)
    Format("rlkit.prefrl.resume", 4, "resume/state.json",
           "round-NNNNNNN/ (tensors.pt, pairs.npz, reward/), store/traj-*.npz, "
           "replay/rows-*.npz + rewards-*.npz",
           "sha256 of the round's files and of every chunk in state.json", "rlkit.prefrl.resume",
           checksummed=True),
    # an SB3 run trained in chunks (rlkit.factories.resumable: APEC's demonstrator and policies)
    # /2: a run-state point (command ``resumable``, the caller's settings as its config)
    Format("rlkit.sb3-resume", 2, "point-<steps>.json",
           "point-<steps>/ (agent.zip/.json, tensors.pt, episode.npz), replay/rows-*.npz + rewards-*.npz",
           "sha256 of the point's files and of every replay chunk in the header",
           "rlkit.factories.resumable", checksummed=True),
    # the latest AIL round's replay buffer and episode in progress, beside its checkpoint
    Format("rlkit.ail.resume", 1, "<checkpoints>/resume/point.json", "replay.npz, episode.npz",
           "sha256 of both in point.json", "rlkit.ail.resume", checksummed=True),
    # /3: a run-state part (its config as the point's config, no command)
    Format("rlkit.marl.checkpoint", 3, "meta.json", "policies.pt",
           "sha256 of policies.pt in meta.json", "rlkit.marl.checkpoint", checksummed=True),
    # /4: a run-state point (command ``m3hf``)
    Format("rlkit.m3hf.run", 4, "state.json",
           "pools/gen_NNN.json and checkpoints/gen_NNN/meta.json of the last completed generation",
           "sha256 of both in state.json (the checkpoint's meta.json covers its policies.pt)",
           "rlkit.m3hf.loop", checksummed=True),
    Format("rlkit.m3hf.pools", 1, "pools/gen_NNN.json", "(the JSON itself)",
           "covered by the run's state.json; every field validated", "rlkit.m3hf.weights"),
    Format("rlkit.human.labels", 4, "labels.sqlite (schema_version table)", "the label database",
           "on open: the file's size, SQLite's integrity_check, every row's values and each label and "
           "query row's checksum (rlkit.human.store_check); an older or a newer schema is refused",
           "rlkit.human.schema"),
)}

# Written for people and other tools, never read back by rlkit, so they carry no format tag.
REPORTS: dict[str, str] = {
    "config.yaml / config.json": "a run's resolved config (secrets left out)",
    "metrics.json / metrics.jsonl / summary.json / result.json": "results of a command",
    "generations.jsonl": "an M3HF run's history, one line per generation (state.json holds it too)",
    "feedback/phase_NNN.json": "what each M3HF feedback text was parsed into",
    "training.json / demos.json / index.npz / sources.npz": "APEC intermediate reports",
    "videos/*": "rendered rollouts",
}


def tag(kind: str) -> str:
    """The current ``"<kind>/<version>"`` of a registered kind.

    Args:
        kind: a key of ``FORMATS``, e.g. ``"rlkit.reward_model"``.

    Returns:
        The tag written into new files of that kind, e.g. ``"rlkit.reward_model/1"``.
    """
    return FORMATS[kind].tag


def check_tag(found: Any, kind: str, where: str | os.PathLike[str]) -> int:
    """The version of a format tag ``found`` in ``where``; FileFormatError unless it is ``kind``'s
    version.

    Args:
        found: the ``format`` value read from the file (any JSON value).
        kind: a key of ``FORMATS``.
        where: the file, for the message.

    Returns:
        The version number, ``FORMATS[kind].version``.

    Raises:
        FileFormatError: when ``found`` is another kind, not a tag, a newer or an older version.
    """
    spec = FORMATS[kind]
    name, _, version = found.rpartition("/") if isinstance(found, str) else ("", "", "")
    if name != kind or not version.isdigit():
        raise FileFormatError(f"{where}: format is {found!r}, expected {spec.tag!r}")
    number = int(version)
    if number > spec.version:
        raise FileFormatError(f"{where}: format is {found!r}, written by a newer rlkit; this one reads "
                              f"{spec.tag!r}")
    if number < spec.version:
        raise FileFormatError(f"{where}: format is {found!r}, an old version this rlkit no longer reads "
                              f"(it reads {spec.tag!r}); write the file again with this rlkit")
    return number


def sha256_file(path: str | os.PathLike[str]) -> str:
    """The hex SHA-256 of a regular file (``rlkit.persistence.reading``: a pipe or device is refused)."""
    return sha256_regular(path)


def weights_sha256(module: Any) -> str:
    """A digest of a module's weights (its state dict's names and values), e.g. to name the reward
    a resume point was trained on.

    Args:
        module: a torch module.

    Returns:
        The hex SHA-256.
    """
    digest = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def payload_files(folder: str | os.PathLike[str], exclude: Iterable[str] = ()) -> list[Path]:
    """Every file under ``folder`` (recursively, sorted), but those named in ``exclude``."""
    root, skip = Path(folder), set(exclude)
    return sorted(p for p in root.rglob("*") if p.is_file() and p.relative_to(root).as_posix() not in skip)


def write_header(path: str | os.PathLike[str], kind: str, data: Mapping[str, Any],
                 covers: Iterable[str | os.PathLike[str]] = (),
                 sums: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Write ``data`` as ``kind``'s header at ``path`` (atomically), stamped with the current tag
    and the SHA-256 of each file in ``covers`` (paths under the header's folder).

    Args:
        path: the header file to write.
        kind: a key of ``FORMATS``.
        data: the header's own fields (JSON data; arrays and paths are converted).
        covers: the payload files to checksum, already written, under ``path``'s folder.
        sums: further covered files whose SHA-256 is known (relative name -> hex), e.g. chunks an
            earlier save wrote and checksummed; listed as they are, not read again.

    Returns:
        The header exactly as written (and as ``read_header`` will read it back).
    """
    path = Path(path)
    header: dict[str, Any] = {**data, "format": tag(kind)}
    files = [Path(f) for f in covers]
    if files or sums or FORMATS[kind].checksummed:
        header[CHECKSUMS] = {**(sums or {}), **{
            f.resolve().relative_to(path.parent.resolve()).as_posix(): sha256_file(f) for f in files}}
    header.pop(SELF_CHECKSUM, None)
    header = json.loads(json.dumps(header, default=_json_default))  # exactly what is read back
    header[SELF_CHECKSUM] = _digest(header)
    atomic_write_json(path, header)
    return header


def _digest(header: Mapping[str, Any]) -> str:
    rest = {key: value for key, value in header.items() if key != SELF_CHECKSUM}
    text = json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def read_header(path: str | os.PathLike[str], kind: str,
                fields: Mapping[str, type | tuple[type, ...]] | None = None,
                verify: bool = True) -> dict[str, Any]:
    """``kind``'s header at ``path``, checked: the tag, each of ``fields`` present with its type,
    and (with ``verify``) every covered file's checksum.

    Args:
        path: the header file.
        kind: a key of ``FORMATS``.
        fields: field name -> the type (or tuple of types) its value must have.
        verify: also check the SHA-256 of every payload file the header covers.

    Returns:
        The header as a dict.

    Raises:
        FileFormatError: naming the file and the first defect found.
    """
    header = read_json(path)
    if not isinstance(header, dict):
        raise FileFormatError(f"{path}: a JSON {type(header).__name__}, expected an object of format "
                              f"{tag(kind)!r}")
    spec = FORMATS[kind]
    check_tag(header.get("format"), kind, path)
    for name in (CHECKSUMS, SELF_CHECKSUM) if spec.checksummed else (SELF_CHECKSUM,):
        if name not in header:
            raise FileFormatError(f"{path}: missing field {name!r} (checksums): a {spec.tag} file "
                                  "carries its checksums")
    if spec.checksummed:
        _check_digest(path, header)
    for name, types in (fields or {}).items():
        if name not in header:
            raise FileFormatError(f"{path}: missing field {name!r}")
        if not isinstance(header[name], types):
            expected = " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))
            raise FileFormatError(f"{path}: field {name!r} is a {type(header[name]).__name__}, "
                                  f"expected {expected}")
    if verify:
        verify_checksums(path, header)
    return header


def _check_digest(path: str | os.PathLike[str], header: Mapping[str, Any]) -> None:
    if header.get(SELF_CHECKSUM, _digest(header)) != _digest(header):
        raise FileFormatError(f"{path}: damaged: its fields differ from its {SELF_CHECKSUM} "
                              "(changed after it was written)")


def verify_checksums(path: str | os.PathLike[str], header: Mapping[str, Any]) -> None:
    """The header's own digest (when it has one) is right, and each file it covers exists and has
    the SHA-256 it lists. Kinds that check their fields one by one first call this last, so their
    specific messages come first."""
    _check_digest(path, header)
    sums = header.get(CHECKSUMS, {})
    if not isinstance(sums, dict) or not all(isinstance(v, str) for v in sums.values()):
        raise FileFormatError(f"{path}: field {CHECKSUMS!r} is not a map of file names to checksums")
    folder = Path(path).parent
    for name, expected in sums.items():
        target = folder / name
        if ".." in Path(name).parts or Path(name).is_absolute():
            raise FileFormatError(f"{path}: covers {name!r}, outside its folder")
        try:
            found = sha256_file(target)
        except FileNotFoundError:
            raise FileFormatError(f"{target}: missing (listed in {Path(path).name})") from None
        except OSError as error:
            raise FileFormatError(f"{target}: cannot be read ({error})") from None
        if found != expected:
            raise FileFormatError(f"{target}: damaged: its SHA-256 differs from the one in "
                                  f"{Path(path).name} (truncated, changed, or from another save)")


def read_format_json(path: str | os.PathLike[str], expected_format: str) -> dict[str, Any]:
    """A JSON object rlkit wrote with ``"format": expected_format`` (a registered tag); anything
    else is a FileFormatError naming the file.

    Args:
        path: the JSON file.
        expected_format: the full tag, ``"<kind>/<version>"``; a kind of ``FORMATS`` is read with
            ``read_header`` (its version checked there).

    Returns:
        The object as a dict.

    Raises:
        FileFormatError: when the file is unreadable or carries another format.
    """
    kind = expected_format.rpartition("/")[0]
    if kind in FORMATS:
        return read_header(path, kind)
    data = read_json(path)
    if not isinstance(data, dict) or data.get("format") != expected_format:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise FileFormatError(f"{path}: format {found!r}, expected {expected_format!r}")
    return data


def npz_header(kind: str) -> Any:
    """The ``_header`` array that tags an ``.npz`` of ``kind`` (uint8 bytes of a JSON object)."""
    import numpy as np

    return np.frombuffer(json.dumps({"format": FORMATS[kind].tag}).encode(), dtype=np.uint8)


def check_npz_header(arrays: Mapping[str, Any], kind: str, where: str | os.PathLike[str]) -> int:
    """The version in an ``.npz``'s ``_header`` array; a missing, foreign or other version's header
    is a FileFormatError naming the file."""
    raw = arrays.get("_header")
    if raw is None:
        raise FileFormatError(f"{where}: format header missing (not a {kind} file)")
    try:
        header = json.loads(bytes(raw.tobytes()))
    except (AttributeError, ValueError, RecursionError) as error:
        raise FileFormatError(f"{where}: unreadable format header ({error})") from None
    if not isinstance(header, dict):
        raise FileFormatError(f"{where}: format header is a {type(header).__name__}, expected an object")
    return check_tag(header.get("format"), kind, where)

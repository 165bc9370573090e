"""A resumable command's run state: the one way its resume points are committed and read back.

A point is the caller's payload files (written first, in its own layout) and a header written
last, atomically (``commit``): the command, its config, the caller's own fields (counters,
rounds, RNG states as JSON, its progress) and the SHA-256 of every payload file. A run killed
before the header keeps the previous point whole. ``read_point`` checks, in order: the format
(kind and version: another version is refused by name), the command, the config
(``rlkit.persistence.resume_config.refuse_changed_config``: only what ``MAY_CHANGE[command]``
allows may differ, each other setting named) and, with ``verify``, every payload file's SHA-256
(a missing or damaged file refused by name, never loaded).

The commands' points (each keeps its layout: what it stores, when, how many):
``rlkit.prefrl.resume`` (pref-rl, a round's start), ``rlkit.factories.resumable`` (an SB3 run
in chunks: APEC's demonstrator and policies, ``rlkit demos``; command ``resumable``),
``rlkit.ail.resume`` (an AIL round; ``resumable``), ``rlkit.m3hf.loop`` (m3hf, a generation) and
the MARL checkpoints an M3HF point covers (``rlkit.marl.checkpoint``: a part, no command).

The parts of an SB3 agent's run such a point holds (networks, RNGs, the episode in progress):
``rlkit.persistence.sb3_state``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlkit.errors import FileFormatError, InvalidDataError
from rlkit.persistence.formats import (
    CHECKSUMS,
    SELF_CHECKSUM,
    read_header,
    verify_checksums,
    write_header,
)
from rlkit.persistence.resume_config import refuse_changed_config

__all__ = ["POINT_KINDS", "Point", "commit", "peek", "read_point"]

#: The formats of resume points and their parts, committed and read through this module only.
POINT_KINDS = frozenset({"rlkit.prefrl.resume", "rlkit.sb3-resume", "rlkit.ail.resume", "rlkit.m3hf.run",
                         "rlkit.marl.checkpoint"})
Where = str | os.PathLike[str]  # a file named in messages
RESERVED = ("command", "config", "format", CHECKSUMS, SELF_CHECKSUM)  # the header's fields, not the caller's


@dataclass(frozen=True)
class Point:
    """A resume point's header, read back: the command it belongs to (None: a part of another
    command's point), its config, the caller's own fields (``state``) and the payload files it
    names with their SHA-256 (``files``, relative to the header's folder); ``header``: all of it."""

    path: Path
    command: str | None
    config: dict[str, Any]
    state: dict[str, Any]
    files: dict[str, str]
    header: dict[str, Any]

    def verify(self) -> None:
        """Every payload file the point names is there with its SHA-256 (after checks of the
        caller's own that should be named first).

        Raises:
            FileFormatError: a file missing or damaged, named.
        """
        verify_checksums(self.path, self.header)


def commit(path: Where, kind: str, command: str | None, config: Mapping[str, Any],
           state: Mapping[str, Any], covers: Iterable[Where] = (),
           named: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Commit a resume point: write its header at ``path``, atomically, after its payload files.

    Args:
        path: the header file.
        kind: one of ``POINT_KINDS``.
        command: the command whose point this is (a key of ``MAY_CHANGE``), None for a part of
            another command's point.
        config: the config the run was started with (JSON data).
        state: the caller's own fields (JSON data; none of ``RESERVED``).
        covers: payload files written for this point, under ``path``'s folder (checksummed now).
        named: payload files an earlier point wrote and this one names too (relative name ->
            SHA-256, as that point listed them).

    Returns:
        The header as written.

    Raises:
        InvalidDataError: ``kind`` is no point format, or ``state`` uses a reserved field.
    """
    if kind not in POINT_KINDS:
        raise InvalidDataError(f"{kind!r} is not a resume point's format (one of {sorted(POINT_KINDS)})")
    clash = sorted(set(state) & set(RESERVED))
    if clash:
        raise InvalidDataError(f"a resume point's own fields may not be named {clash} (the header's)")
    data = {**state, "command": command, "config": dict(config)}
    return write_header(path, kind, data, covers=covers, sums=named)


def read_point(path: Where, kind: str, command: str | None,
               config: Mapping[str, Any] | None, fields: Mapping[str, type | tuple[type, ...]] | None = None,
               verify: bool = True, where: Where | None = None) -> Point:
    """The resume point whose header is ``path``, checked for a run of ``command`` under ``config``.

    Args:
        path: the header file.
        kind: one of ``POINT_KINDS``.
        command: the command the point must belong to (None: a part of another command's point).
        config: the config the run goes on under, diffed against the saved one by
            ``refuse_changed_config(command, ...)``; None where the run is rebuilt from the saved
            config (a part: its command's point was checked).
        fields: the caller's fields that must be there, with their types.
        verify: also check every payload file's SHA-256.
        where: the run the config message names (default: ``path``).

    Returns:
        The point.

    Raises:
        FileFormatError: another format or version, another command, a field missing or of the
            wrong type, a payload file missing or damaged (each named).
        ConfigError: the run was started with other settings (each named with both values).
    """
    path = Path(path)
    header = read_header(path, kind, {"command": (str, type(None)), "config": dict, **(fields or {})},
                         verify=False)
    if header["command"] != command:
        raise FileFormatError(f"{path}: a point of command {header['command']!r}, expected {command!r}")
    if config is not None:
        if command is None:
            raise InvalidDataError(f"{path}: a part of another command's point has no config to diff")
        refuse_changed_config(command, header["config"], config, where=path if where is None else where)
    point = Point(path, command, header["config"],
                  {key: value for key, value in header.items() if key not in RESERVED},
                  dict(header.get(CHECKSUMS, {})), header)
    if verify:
        point.verify()
    return point


def peek(path: Where, kind: str) -> dict[str, Any] | None:
    """A point's header as written, unchecked but for its format, e.g. to find the files an
    earlier point named before writing the next.

    Args:
        path: the header file.
        kind: one of ``POINT_KINDS``.

    Returns:
        The header, or None when there is none or it cannot be read.
    """
    if not Path(path).is_file():
        return None
    try:
        return read_header(path, kind, verify=False)
    except FileFormatError:
        return None

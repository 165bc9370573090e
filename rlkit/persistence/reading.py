"""The one way rlkit opens an artefact to read it: a regular file (a symlink to one is followed),
no larger than the limit for its kind of file.

A named pipe in place of a file would block the reader forever, ``/dev/zero`` would be read until
memory runs out, a directory or a socket cannot be read at all: each is refused by name before a
byte is read. The type is checked twice: ``os.stat`` before opening (a device is never opened), then
``os.fstat`` on the open descriptor (a file swapped in between is caught; ``O_NONBLOCK`` keeps that
open from waiting on a pipe). The size is checked on ``fstat`` and again on the bytes actually read,
so a file that grows while read is refused too.

``MAX_BYTES`` names every limit, one per kind of file (a test or a deployment may change them). They
are far above anything rlkit writes and finite, so a hostile file costs a bounded read.

``read_json`` and ``read_json_lines`` read a JSON or JSON-lines file that way, a file that is
missing, unreadable or not JSON refused naming it (and the line).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from typing import Any, BinaryIO

from rlkit.errors import FileFormatError

MiB, GiB = 1 << 20, 1 << 30
MAX_BYTES: dict[str, int] = {
    "json": 256 * MiB,  # headers (model.json, <agent>.json, <dataset>.json, meta.json, state.json)
    "jsonl": 4 * GiB,  # JSON-lines histories (generations.jsonl)
    "npz": 32 * GiB,  # trajectory stores, preference datasets, replay buffers: read into memory whole
    "safetensors": 16 * GiB,  # reward model weights, read into memory whole
    "zip": 16 * GiB,  # SB3 agents, read into memory whole
    "payload": 64 * GiB,  # any file a header lists a SHA-256 for, hashed in blocks (never held whole)
}
_BLOCK = 1 << 20
_KINDS = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket"))


def open_regular(path: str | os.PathLike[str], limit: str) -> BinaryIO:
    """``path`` opened for binary reading, once it is known to be a regular file within its limit.

    Args:
        path: the file; a symlink is followed (to a regular file only).
        limit: the key of ``MAX_BYTES`` for this kind of file, e.g. ``"npz"``.

    Returns:
        The open file (the caller closes it); read it through ``read_limited`` or ``sha256_regular``
        to keep the limit when the file grows.

    Raises:
        FileFormatError: naming the file, when it is not a regular file or over the limit.
        FileNotFoundError, OSError: when it does not exist or cannot be opened (callers name it).
    """
    _check(path, os.stat(path), limit)  # a device or a pipe is refused before it is opened
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        _check(path, os.fstat(fd), limit)  # the file opened is the file checked
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")  # O_NONBLOCK does nothing to a regular file


def read_regular(path: str | os.PathLike[str], limit: str) -> bytes:
    """The whole content of a regular file within ``MAX_BYTES[limit]`` (see ``open_regular``)."""
    with open_regular(path, limit) as handle:
        return read_limited(handle, path, limit)


def read_limited(handle: BinaryIO, path: str | os.PathLike[str], limit: str) -> bytes:
    """The rest of ``handle``, refused (naming ``path``) once it passes ``MAX_BYTES[limit]``."""
    most = MAX_BYTES[limit]
    size = os.fstat(handle.fileno()).st_size
    parts, total, want = [], 0, min(size, most) + 1  # one byte more than expected shows growth
    while total <= most:
        part = handle.read(want)
        if not part:
            break
        parts.append(part)
        total += len(part)
        want = _BLOCK
    if total > most:
        raise _too_large(path, total, limit)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def sha256_regular(path: str | os.PathLike[str], limit: str = "payload") -> str:
    """The hex SHA-256 of a regular file within ``MAX_BYTES[limit]``, read in blocks."""
    digest, total, most = hashlib.sha256(), 0, MAX_BYTES[limit]
    with open_regular(path, limit) as handle:
        for block in iter(lambda: handle.read(_BLOCK), b""):
            total += len(block)
            if total > most:
                raise _too_large(path, total, limit)
            digest.update(block)
    return digest.hexdigest()


def _check(path: str | os.PathLike[str], found: os.stat_result, limit: str) -> None:
    if not stat.S_ISREG(found.st_mode):
        kind = next((name for test, name in _KINDS if test(found.st_mode)), "not a file")
        link = f" (a symlink to {os.readlink(path)})" if os.path.islink(path) else ""
        raise FileFormatError(f"{path}: {kind}{link}, not a regular file; rlkit reads artefacts only "
                              "from regular files")
    if found.st_size > MAX_BYTES[limit]:
        raise _too_large(path, found.st_size, limit)


def _too_large(path: str | os.PathLike[str], size: int, limit: str) -> FileFormatError:
    return FileFormatError(f"{path}: {size:,} bytes, over the {MAX_BYTES[limit]:,}-byte limit for "
                           f"{limit} files (rlkit.persistence.reading.MAX_BYTES[{limit!r}])")


def read_json(path: str | os.PathLike[str]) -> Any:
    """Parsed JSON; a missing, unreadable or malformed file is a FileFormatError naming it.

    Args:
        path: the JSON file.

    Returns:
        The parsed value (any JSON type).

    Raises:
        FileFormatError: when the file is missing, unreadable or not JSON.
    """
    try:
        return json.loads(read_regular(path, "json"))
    except FileFormatError:  # not a regular file, or over its size limit: already named
        raise
    except FileNotFoundError:
        raise FileFormatError(f"{path}: not readable: no such file") from None
    except (OSError, ValueError, RecursionError) as error:  # ValueError covers Unicode and JSON errors
        raise FileFormatError(f"{path}: not readable, not valid JSON ({error})") from None


def read_json_lines(path: str | os.PathLike[str], torn_tail: bool = False) -> list[Any]:
    """The values of a JSON-lines file (one JSON value a line; blank lines skipped); a missing or
    unreadable file, or a line that is not JSON, is a FileFormatError naming the file and line.

    Args:
        path: the ``.jsonl`` file.
        torn_tail: leave out a last line that is not JSON (a log still being written, or cut by a
            killed process) instead of failing on it.

    Returns:
        The values, in the file's order.

    Raises:
        FileFormatError: as above.
    """
    try:
        lines = read_regular(path, "jsonl").decode("utf-8").splitlines()
    except FileFormatError:
        raise
    except FileNotFoundError:
        raise FileFormatError(f"{path}: not readable: no such file") from None
    except (OSError, ValueError) as error:
        raise FileFormatError(f"{path}: not readable ({error})") from None
    values = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            values.append(json.loads(line))
        except (ValueError, RecursionError) as error:
            if torn_tail and number == len(lines):
                break
            raise FileFormatError(f"{path}: line {number} is not JSON ({error})") from None
    return values

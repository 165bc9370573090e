"""Atomic writes: a crash leaves the old file (or folder) or the new one, never half of either."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from rlkit.errors import WrongTypeError


@contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "wb") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on success fsync it and rename it over ``path``.

    Args:
        path: the file to write; its parent folders are created.
        mode: the ``open`` mode of the temporary file (``"wb"`` or ``"w"``).

    Yields:
        The open temporary file. When the block raises, it is removed and ``path`` is untouched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, mode) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: str | os.PathLike[str], data: Any) -> None:
    """Write ``data`` to ``path`` as indented JSON with sorted keys, atomically.

    Args:
        path: the file to write; its parent folders are created.
        data: JSON data; numpy arrays and scalars (anything with ``tolist``) and paths are
            converted.

    Raises:
        WrongTypeError: when a value is none of these and not JSON itself.
    """
    with atomic_open(path, "w") as handle:
        json.dump(data, handle, indent=2, sort_keys=True, default=_json_default)
        handle.write("\n")


def atomic_write_bytes(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object]) -> None:
    """Write a binary file atomically through a callback.

    Args:
        path: the file to write; its parent folders are created.
        write: called once with the open binary file (e.g. ``lambda f: np.savez(f, **arrays)``);
            its return value is ignored. If it raises, ``path`` is left as it was.
    """
    with atomic_open(path, "wb") as handle:
        write(handle)


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise WrongTypeError(f"cannot write {type(value).__name__} to JSON")


@contextmanager
def atomic_dir(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Stage a folder beside ``path``: write into the yielded folder; when the block ends without
    an exception it replaces ``path`` whole (``replace_dir``), otherwise it is removed and ``path``
    is left as it was.

    Args:
        path: the folder to write; its parent folders are created.

    Yields:
        The staging folder, empty.
    """
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
    try:
        yield staging
        replace_dir(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def replace_dir(staging: Path, final: Path) -> None:
    """Rename the finished folder ``staging`` to ``final``. An existing ``final`` is swapped with
    it in one step where the OS can (Linux ``renameat2(RENAME_EXCHANGE)``), so ``final`` always
    names a whole folder; elsewhere it is moved aside first and removed after, so a crash leaves
    one of the two whole (the old one then under ``.<name>.old``).

    Args:
        staging: the finished folder, on the same file system as ``final``.
        final: the folder's name once done; an existing folder there is replaced.
    """
    if final.exists() and _exchange(staging, final):
        shutil.rmtree(staging, ignore_errors=True)  # now the old folder
    elif final.exists():
        old = final.with_name(f".{final.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(final, old)
        os.replace(staging, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staging, final)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux 3.15+, glibc 2.28+); False where that is not possible."""
    if sys.platform != "linux":
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0

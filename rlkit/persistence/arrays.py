"""Named arrays as ``.npz`` files: written atomically, read back without pickle."""

from __future__ import annotations

import hashlib
import io
import os

import numpy as np

from rlkit.errors import FileFormatError
from rlkit.persistence.atomic import atomic_write_bytes
from rlkit.persistence.reading import read_regular


def save_npz(path: str | os.PathLike[str], arrays: dict[str, np.ndarray], compressed: bool = False) -> None:
    """Write ``arrays`` to ``path`` atomically (zip CRC-32 per array guards them on reading)."""
    write = np.savez_compressed if compressed else np.savez
    # numpy's stub types savez(file, *args, allow_pickle: bool, **kwds): a **dict might name allow_pickle
    atomic_write_bytes(path, lambda handle: write(handle, **arrays))  # type: ignore[arg-type]


def load_npz(path: str | os.PathLike[str], sha256: str | None = None,
             listed_in: str = "its header") -> dict[str, np.ndarray]:
    """Every array of an ``.npz``, read without pickle from a regular file within
    ``MAX_BYTES["npz"]``; any damage is a FileFormatError naming the file.

    Args:
        path: the ``.npz`` file.
        sha256: the hex SHA-256 its bytes must have (checked on the very bytes loaded).
        listed_in: where that digest is kept, for the message.

    Returns:
        The arrays by name.

    Raises:
        FileFormatError: when the file is missing, not a regular file, too large, not an ``.npz``,
            damaged, or its digest is not ``sha256``.
    """
    try:
        raw = read_regular(path, "npz")
        if sha256 is not None and hashlib.sha256(raw).hexdigest() != sha256:
            raise FileFormatError(f"{path} does not match {listed_in} (checksum differs): the file was "
                                  "damaged, replaced, or its save was interrupted")
        if not raw.startswith((b"PK\x03\x04", b"PK\x05\x06")):  # numpy would talk of pickles
            kind = "JSON or text" if raw.lstrip()[:1] in (b"{", b"[") else "not a zip archive"
            raise FileFormatError(f"{path}: not an .npz file ({kind}; an .npz is a zip archive of "
                                  f".npy arrays), it starts with {raw[:16]!r}")
        with np.load(io.BytesIO(raw), allow_pickle=False) as npz:
            return {name: npz[name] for name in npz.files}
    except FileNotFoundError:
        raise FileFormatError(f"{path}: no such file") from None
    except FileFormatError:
        raise
    except Exception as error:  # zipfile, zlib and numpy each raise their own kinds
        raise FileFormatError(f"{path}: damaged or not an .npz file ({error})") from None

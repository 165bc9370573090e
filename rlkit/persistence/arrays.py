"""Named arrays as ``.npz`` files: written atomically, read back without pickle."""

from __future__ import annotations

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


def load_npz(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Read every array of an ``.npz`` without pickle (from a regular file within
    ``MAX_BYTES["npz"]``), turning any damage into a FileFormatError."""
    try:
        raw = read_regular(path, "npz")
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

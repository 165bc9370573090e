"""The dtypes of a trajectory store's arrays: what ``TrajectoryStore`` writes, and all it reads back.

| array | dtypes | why |
| --- | --- | --- |
| ``obs`` / ``frames`` | float32, float64, uint8 | vector observations, pixel frames |
| ``acts`` | float32, float64, any integer | Box actions; Discrete, MultiDiscrete and MultiBinary ones |
| ``rews`` | float32, float64 | the true reward (the store keeps float32) |
| ``lengths`` | any integer | steps per trajectory (the store keeps int64) |
| ``terminal`` | bool | one flag per trajectory |

Anything else (int8 observations, float lengths, float terminal flags, bool actions) is not a file
rlkit wrote: it is refused naming the array and its dtype, never cast into something that loads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

import numpy as np

from rlkit.errors import FileFormatError, InvalidDataError

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_RULES: dict[str, tuple[Callable[[np.dtype], bool], str]] = {
    "obs": (lambda d: d in _FLOATS or d == np.uint8, "float32 or float64 observations, or uint8 frames"),
    "acts": (lambda d: d in _FLOATS or d.kind in "iu", "float32 or float64 (Box) or integer actions"),
    "rews": (lambda d: d in _FLOATS, "float32 or float64 rewards"),
    "lengths": (lambda d: d.kind in "iu", "integer step counts"),
    "terminal": (lambda d: d == np.bool_, "bool flags"),
}
_RULES["frames"] = _RULES["obs"]


def check_dtypes(arrays: Mapping[str, np.ndarray], origin: str | os.PathLike[str]) -> None:
    """Each of a store's arrays present in ``arrays`` has a dtype of the table above.

    Args:
        arrays: the arrays by name (``TrajectoryStore.arrays`` or an ``.npz`` of one).
        origin: where they came from, for the message.

    Raises:
        FileFormatError: naming the first array of another dtype, the dtype, and what is expected.
    """
    for name, (allowed, expected) in _RULES.items():
        if name in arrays:
            dtype = np.asarray(arrays[name]).dtype
            if not allowed(dtype):
                raise FileFormatError(f"{origin}: {name} holds {dtype}, expected {expected}")


def writable(arrays: dict[str, np.ndarray], path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """``arrays``, once they are known to load back (``check_dtypes``), for a save to ``path``.

    Raises:
        InvalidDataError: naming the array whose dtype no store file may hold; nothing is written.
    """
    try:
        check_dtypes(arrays, path)
    except FileFormatError as error:
        raise InvalidDataError(f"{error}; not written, it would not load back") from None
    return arrays

"""RNG state as plain data: numpy ``Generator``s, numpy's legacy global ``RandomState``, Python's
``random`` and torch's CPU generator, saved and restored exactly (a restored RNG draws what the
saved one would have)."""

from __future__ import annotations

import os
import random
from typing import TYPE_CHECKING, Any

import numpy as np

from rlkit.errors import FileFormatError, InvalidDataError

if TYPE_CHECKING:
    import torch


def numpy_rng_state(rng: np.random.Generator) -> dict[str, Any]:
    """A ``Generator``'s bit-generator state as JSON-ready data (arrays become lists)."""
    return _plain(rng.bit_generator.state)


def restore_numpy_rng(rng: np.random.Generator, state: Any, where: str | os.PathLike[str] = "rng") -> None:
    """Put ``numpy_rng_state``'s data back into ``rng`` (of the same bit generator)."""
    try:
        state = dict(state)
        inner = state.get("state")
        if state.get("bit_generator") == "MT19937" and isinstance(inner, dict):
            state["state"] = {**inner, "key": np.asarray(inner["key"], dtype=np.uint32)}
        rng.bit_generator.state = state
    except (IndexError, TypeError, ValueError, KeyError, OverflowError) as error:
        raise FileFormatError(f"{where}: not a {type(rng.bit_generator).__name__} state ({error})") from None


def random_state_to_json(state: tuple[Any, ...]) -> list[Any]:
    """``np.random.get_state()``'s tuple as a JSON list."""
    name, keys, pos, has_gauss, cached = state
    return [name, np.asarray(keys).tolist(), int(pos), int(has_gauss), float(cached)]


def random_state_from_json(data: Any, where: str | os.PathLike[str] = "rng") -> tuple[Any, ...]:
    """The tuple ``np.random.set_state`` takes, from ``random_state_to_json``'s list (checked)."""
    try:
        name, keys, pos, has_gauss, cached = data
        state = (str(name), np.asarray(keys, dtype=np.uint32), int(pos), int(has_gauss), float(cached))
        if state[1].shape != (624,) or not 0 <= state[2] <= 624:
            raise InvalidDataError(f"{len(state[1])} keys at position {state[2]}, expected 624 keys")
        np.random.RandomState().set_state(state)  # refuses a malformed state here, not mid-run
    except (IndexError, TypeError, ValueError, OverflowError) as error:
        raise FileFormatError(f"{where}: not a numpy RandomState state ({error})") from None
    return state


def numpy_global_state() -> list[Any]:
    """numpy's legacy global ``RandomState`` (``np.random.*``) as a JSON list."""
    state = np.random.get_state(legacy=True)
    assert isinstance(state, tuple)  # legacy=True: the tuple form
    return random_state_to_json(state)


def python_random_state() -> list[Any]:
    """Python's global ``random`` state as a JSON list."""
    version, internal, gauss = random.getstate()
    return [version, list(internal), gauss]


def python_random_state_from_json(data: Any, where: str | os.PathLike[str] = "rng") -> tuple[Any, ...]:
    """The tuple ``random.setstate`` takes, from ``python_random_state``'s list (checked)."""
    try:
        version, internal, gauss = data
        state = (int(version), tuple(int(x) for x in internal), None if gauss is None else float(gauss))
        random.Random().setstate(state)  # refuses a malformed state here, not mid-run
    except (TypeError, ValueError, OverflowError) as error:
        raise FileFormatError(f"{where}: not a Python random state ({error})") from None
    return state


def torch_rng_state(generator: torch.Generator | None = None) -> torch.Tensor:
    """The state of ``generator`` (torch's default CPU generator when None)."""
    import torch

    return (generator or torch.default_generator).get_state()


def restore_torch_rng(state: Any, generator: torch.Generator | None = None,
                      where: str | os.PathLike[str] = "rng") -> None:
    """Put ``torch_rng_state``'s tensor back (into torch's default CPU generator when None)."""
    import torch

    try:
        (generator or torch.default_generator).set_state(state)
    except (TypeError, RuntimeError, ValueError) as error:
        raise FileFormatError(f"{where}: not a torch RNG state ({error})") from None


def check_torch_rng_state(state: Any, where: str | os.PathLike[str] = "rng") -> Any:
    """``state`` if a torch CPU generator accepts it, else a FileFormatError naming ``where``."""
    import torch

    restore_torch_rng(state, torch.Generator(), where)
    return state


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value

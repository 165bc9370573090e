"""RNG state as plain data: numpy ``Generator``s, numpy's legacy global ``RandomState`` and torch's
CPU generator, saved and restored exactly (a restored RNG draws what the saved one would have)."""

from __future__ import annotations

import os
import random
from typing import TYPE_CHECKING, Any

import numpy as np

from rlkit.errors import FileFormatError, InvalidDataError

if TYPE_CHECKING:
    import torch
    from stable_baselines3.common.vec_env import VecEnv


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


def numpy_global_state() -> tuple[Any, ...]:
    """numpy's legacy global ``RandomState`` state (SB3 samples replay batches from it).

    Returns:
        ``np.random.get_state()``'s tuple (``random_state_to_json`` makes it JSON).
    """
    state = np.random.get_state(legacy=True)
    assert isinstance(state, tuple)  # legacy=True: the tuple form
    return state


def python_state() -> list[Any]:
    """Python's ``random`` state as a JSON list.

    Returns:
        ``[version, internal state, gauss]``.
    """
    version, internal, gauss = random.getstate()
    return [version, list(internal), gauss]


def python_state_from_json(data: Any, where: str | os.PathLike[str] = "rng") -> tuple[Any, ...]:
    """The tuple ``random.setstate`` takes, from ``python_state``'s list (checked).

    Args:
        data: the list ``python_state`` made.
        where: the file it came from, for the error.

    Returns:
        The state tuple.
    """
    try:
        version, internal, gauss = data
        state = (int(version), tuple(int(x) for x in internal), None if gauss is None else float(gauss))
        random.Random().setstate(state)  # refuses a malformed state here, not mid-run
    except (TypeError, ValueError, OverflowError) as error:
        raise FileFormatError(f"{where}: not a Python random state ({error})") from None
    return state


def check_generator_state(state: Any, where: str | os.PathLike[str] = "rng") -> None:
    """Refuse (FileFormatError naming ``where``) a ``numpy_rng_state`` its bit generator rejects.

    Args:
        state: the saved state.
        where: the file it came from, for the error.
    """
    try:
        bit_generator = getattr(np.random, str(state["bit_generator"]), None)
    except (KeyError, TypeError):
        raise FileFormatError(f"{where}: not a numpy Generator state") from None
    if not (isinstance(bit_generator, type) and issubclass(bit_generator, np.random.BitGenerator)):
        raise FileFormatError(f"{where}: unknown bit generator {state['bit_generator']!r}")
    restore_numpy_rng(np.random.Generator(bit_generator()), state, where)


def env_rng_states(venv: VecEnv | None) -> list[dict[str, Any]] | None:
    """Each env's ``np_random`` state (None when an env has none).

    Args:
        venv: the vectorised env (through any wrappers).

    Returns:
        One ``numpy_rng_state`` per env, or None.
    """
    try:
        generators = venv.get_attr("np_random") if venv is not None else []
    except AttributeError:
        return None
    if not generators or not all(isinstance(g, np.random.Generator) for g in generators):
        return None
    return [numpy_rng_state(g) for g in generators]


def restore_env_rngs(venv: VecEnv, states: list[dict[str, Any]],
                     where: str | os.PathLike[str] = "rng") -> None:
    """Each env's ``np_random`` as saved, and the seeds the fresh vec env holds for its first reset
    dropped, so that reset draws from them.

    Args:
        venv: the vectorised env (through any wrappers).
        states: ``env_rng_states``'s list.
        where: the file they came from, for errors.
    """
    from stable_baselines3.common.vec_env import VecEnvWrapper

    generators = venv.get_attr("np_random")
    if len(generators) != len(states):
        raise InvalidDataError(f"{where}: RNG states of {len(states)} envs, this agent has {len(generators)}")
    for index, (generator, state) in enumerate(zip(generators, states, strict=True)):
        restore_numpy_rng(generator, state, where)
        venv.set_attr("np_random", generator, indices=[index])
    base = venv
    while isinstance(base, VecEnvWrapper):
        base = base.venv
    base._reset_seeds()


def run_rng_states(action_rng: np.random.Generator,
                   env_states: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The RNGs an SB3 run draws from besides torch's, as JSON: numpy's global one, Python's, the
    action space's, and each env's (``env_rng_states``, taken when the caller needs them).

    Args:
        action_rng: the agent's ``action_space.np_random``.
        env_states: ``env_rng_states``'s list, or None.

    Returns:
        ``{"numpy_global", "python", "action_space", "envs"}``.
    """
    return {"numpy_global": random_state_to_json(numpy_global_state()), "python": python_state(),
            "action_space": numpy_rng_state(action_rng), "envs": env_states}


def check_run_rngs(rngs: Any, where: str | os.PathLike[str] = "rng") -> None:
    """Refuse (FileFormatError naming ``where``) ``run_rng_states``'s data that cannot be restored.

    Args:
        rngs: the saved states.
        where: the file they came from, for the error.
    """
    try:
        random_state_from_json(rngs["numpy_global"], where)
        python_state_from_json(rngs["python"], where)
        for state in [rngs["action_space"], *(rngs["envs"] or [])]:
            check_generator_state(state, where)
    except (KeyError, TypeError):
        raise FileFormatError(f"{where}: field 'rngs' is not a set of RNG states") from None


def restore_run_rngs(rngs: dict[str, Any], action_rng: np.random.Generator, venv: VecEnv | None,
                     where: str | os.PathLike[str] = "rng") -> None:
    """Put ``run_rng_states``'s data back (each env's only where it was saved and ``venv`` is given).

    Args:
        rngs: the saved states.
        action_rng: the agent's ``action_space.np_random``.
        venv: the agent's env (through any wrappers), or None.
        where: the file they came from, for errors.
    """
    np.random.set_state(random_state_from_json(rngs["numpy_global"], where))
    random.setstate(python_state_from_json(rngs["python"], where))
    restore_numpy_rng(action_rng, rngs["action_space"], where)
    if rngs["envs"] is not None and venv is not None:
        restore_env_rngs(venv, rngs["envs"], where)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value

"""A resumable command's run state: the one way its resume points are committed and read back,
and the parts of an SB3 run every such point holds.

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

The parts of an SB3 agent's run:

- ``network_tensors`` / ``restore_networks``: the networks and their optimisers (SAC's entropy
  coefficient too) as SB3 saves them (its zip: ``rlkit.persistence.agents``);
- ``rng_tensors`` / ``check_rng_tensors`` / ``restore_rng_tensors``: torch's RNGs (CPU; CUDA
  where the agent runs there) and the generators an algorithm keeps of its own (``DrQSAC``'s
  augmentation);
- ``learn_rngs`` / ``check_learn_rngs`` / ``restore_learn_rngs``: the RNGs besides torch's that
  ``learn`` draws from, as JSON data (numpy's global one, Python's, the action space's, each env's);
- ``episode_state`` / ``restore_episode``: the episode in progress, the env's layers
  (``rlkit.persistence.env_state``) and the agent's last observation, as named arrays;
- replay buffers: ``rlkit.persistence.replay`` (chunk files a point names with their SHA-256).
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.save_util import recursive_getattr, recursive_setattr
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

from rlkit.errors import FileFormatError, InvalidDataError
from rlkit.persistence.env_state import capture as capture_env_state
from rlkit.persistence.env_state import restore as restore_env_state
from rlkit.persistence.formats import (
    CHECKSUMS,
    SELF_CHECKSUM,
    read_header,
    verify_checksums,
    write_header,
)
from rlkit.persistence.resume_config import refuse_changed_config
from rlkit.persistence.rng import (
    check_torch_rng_state,
    numpy_global_state,
    numpy_rng_state,
    python_random_state,
    python_random_state_from_json,
    random_state_from_json,
    restore_numpy_rng,
    restore_torch_rng,
    torch_rng_state,
)

__all__ = ["POINT_KINDS", "Point", "check_learn_rngs", "check_rng_tensors", "commit", "env_rng_states",
           "episode_state", "learn_rngs", "network_tensors", "own_rngs", "peek", "read_point",
           "restore_env_rngs", "restore_episode", "restore_learn_rngs", "restore_networks",
           "restore_own_rngs", "restore_rng_tensors", "rng_tensors"]

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


def network_tensors(agent: BaseAlgorithm) -> tuple[dict[str, Any], dict[str, Any]]:
    """The networks and optimisers as SB3 saves them: ``get_parameters()`` (state dicts) and the
    tensors SB3 keeps beside them (SAC's ``log_ent_coef``), by attribute path.

    Args:
        agent: an SB3 agent.

    Returns:
        (parameters, variables), for ``restore_networks``.
    """
    _, variables = agent._get_torch_save_params()
    return agent.get_parameters(), {name: recursive_getattr(agent, name) for name in variables or []}


def restore_networks(agent: BaseAlgorithm, params: Mapping[str, Any], variables: Mapping[str, Any] | None,
                     where: Where) -> None:
    """Load ``network_tensors``'s (or SB3 zip's) parameters and variables into ``agent``.

    Args:
        agent: built as the saved one was.
        params: the state dicts by name.
        variables: the tensors by attribute path (None: none).
        where: the file they came from, named in errors.

    Raises:
        InvalidDataError: networks that do not fit this agent.
    """
    try:
        agent.set_parameters(dict(params), exact_match=True, device=agent.device)
        for name, value in (variables or {}).items():
            recursive_setattr(agent, f"{name}.data", value.data)
    except (AttributeError, KeyError, RuntimeError, TypeError, ValueError) as error:
        raise InvalidDataError(f"{where}: networks that do not fit this agent (other settings?): "
                               f"{type(error).__name__}: {error}") from None


def rng_tensors(agent: BaseAlgorithm) -> dict[str, Any]:
    """Torch's RNG states a run draws from: the CPU one, CUDA's where ``agent`` runs there, and
    the agent's own generators (``own_rngs``).

    Args:
        agent: an SB3 agent.

    Returns:
        ``{"torch", "cuda", "own"}``, to save with ``torch.save`` and restore with
        ``restore_rng_tensors``.
    """
    cuda = torch.cuda.get_rng_state_all() if agent.device.type == "cuda" else []
    return {"torch": torch_rng_state(), "cuda": cuda, "own": own_rngs(agent)}


def check_rng_tensors(tensors: Any, where: Where) -> None:
    """``rng_tensors``'s states as read back are ones torch accepts (before any is restored).

    Args:
        tensors: the states, as read back.
        where: the file they came from, named in errors.

    Raises:
        FileFormatError: a state missing or damaged, naming ``where``.
    """
    try:
        check_torch_rng_state(tensors["torch"], where)
        list(tensors["cuda"])
        for state in dict(tensors["own"]).values():
            check_torch_rng_state(state, where)
    except (KeyError, TypeError, ValueError):
        raise FileFormatError(f"{where}: the torch RNG states are missing or damaged") from None


def restore_rng_tensors(agent: BaseAlgorithm, tensors: Mapping[str, Any], where: Where) -> None:
    """Put ``rng_tensors``'s states back (CUDA's where the agent runs on as many devices).

    Args:
        agent: the agent, built as the saved one was.
        tensors: what ``rng_tensors`` returned, checked by ``check_rng_tensors``.
        where: the file they came from, named in errors.
    """
    restore_torch_rng(tensors["torch"], where=where)
    restore_own_rngs(agent, tensors["own"], where)
    cuda = list(tensors["cuda"])
    if cuda and agent.device.type == "cuda" and len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(cuda)


RUN_STATE = ("_last_obs", "_last_original_obs", "_last_episode_starts")  # the agent's, kept with the episode
_AGENT = "agent:"  # its arrays' prefix in an episode state (the env's: rlkit.persistence.env_state)


def check_learn_rngs(rngs: Mapping[str, Any], where: Where) -> None:
    """Check ``learn_rngs``'s states are ones their generators accept (before any is restored).

    Args:
        rngs: the states, as read back.
        where: the file they came from, named in errors.

    Raises:
        FileFormatError: a state missing, of an unknown bit generator, or damaged.
    """
    try:
        random_state_from_json(rngs["numpy_global"], where)
        python_random_state_from_json(rngs["python"], where)
        for state in [rngs["action_space"], *(rngs["envs"] or [])]:
            bit_generator = getattr(np.random, str(state["bit_generator"]), None)
            if not (isinstance(bit_generator, type) and issubclass(bit_generator, np.random.BitGenerator)):
                raise FileFormatError(f"{where}: unknown bit generator {state['bit_generator']!r}")
            restore_numpy_rng(np.random.Generator(bit_generator()), state, where)
    except (KeyError, TypeError):
        raise FileFormatError(f"{where}: field 'rngs' is not a set of RNG states") from None


def env_rng_states(venv: VecEnv | None) -> list[dict[str, Any]] | None:
    """Each env's ``np_random`` state (None when an env has none)."""
    try:
        generators = venv.get_attr("np_random") if venv is not None else []
    except AttributeError:
        return None
    if not generators or not all(isinstance(g, np.random.Generator) for g in generators):
        return None
    return [numpy_rng_state(g) for g in generators]


def episode_state(agent: BaseAlgorithm) -> dict[str, np.ndarray] | None:
    """The episode in progress: every env layer's state and the agent's last observation (None
    when a layer cannot hand its state over, or the observations are not one array).

    Args:
        agent: an SB3 agent on its env, between two ``learn`` calls.

    Returns:
        Named arrays for ``restore_episode``, or None.
    """
    venv = agent.get_env()
    if venv is None or not isinstance(agent._last_obs, np.ndarray):
        return None
    state = capture_env_state(venv)
    if state is None:
        return None
    for name in RUN_STATE:
        value = getattr(agent, name, None)
        if isinstance(value, np.ndarray):
            state[f"{_AGENT}{name}"] = value
    return state


def learn_rngs(agent: BaseAlgorithm) -> dict[str, Any]:
    """The RNGs besides torch's that ``learn`` draws from, as JSON data: numpy's global one (SB3
    samples replay batches from it), Python's, the action space's (random warm-up actions) and each
    env's ``np_random`` (``envs``: None when an env has none).

    Args:
        agent: an SB3 agent on its env.

    Returns:
        The states, for ``restore_learn_rngs``.
    """
    return {"numpy_global": numpy_global_state(), "python": python_random_state(),
            "action_space": numpy_rng_state(agent.action_space.np_random),
            "envs": env_rng_states(agent.get_env())}


def restore_learn_rngs(agent: BaseAlgorithm, rngs: Mapping[str, Any], where: Where) -> None:
    """Put ``learn_rngs``'s states back (each env's too, the seeds a fresh agent set for its first
    reset dropped).

    Args:
        agent: the agent, on its env.
        rngs: what ``learn_rngs`` returned.
        where: the file they came from, named in errors.
    """
    np.random.set_state(random_state_from_json(rngs["numpy_global"], where))
    random.setstate(python_random_state_from_json(rngs["python"], where))
    restore_numpy_rng(agent.action_space.np_random, rngs["action_space"], where)
    venv = agent.get_env()
    if rngs["envs"] is not None and venv is not None:
        restore_env_rngs(venv, rngs["envs"], where)


def own_rngs(agent: BaseAlgorithm) -> dict[str, torch.Tensor]:
    """The states of the torch generators an algorithm keeps of its own (``DrQSAC``'s
    ``augment_rng``), by attribute name.

    Args:
        agent: an SB3 agent.

    Returns:
        Each generator's state, for ``restore_own_rngs``.
    """
    return {name: value.get_state() for name, value in vars(agent).items()
            if isinstance(value, torch.Generator)}


def restore_own_rngs(agent: BaseAlgorithm, states: Mapping[str, torch.Tensor], where: Where) -> None:
    """Put ``own_rngs``'s states back into the agent's generators of those names.

    Args:
        agent: the agent, built as the saved one was.
        states: what ``own_rngs`` returned.
        where: the file they came from, named in errors.

    Raises:
        InvalidDataError: a state for a generator this agent does not have.
    """
    for name, state in states.items():
        generator = getattr(agent, name, None)
        if not isinstance(generator, torch.Generator):
            raise InvalidDataError(f"{where}: the state of an RNG {name!r}, which this agent does not have")
        restore_torch_rng(state, generator, where)


def restore_episode(agent: BaseAlgorithm, arrays: Mapping[str, np.ndarray], where: Where) -> None:
    """Put ``episode_state``'s arrays back into a fresh ``agent`` and its env (never reset; its
    env RNGs restored as they were then), so that ``learn`` goes on with that episode.

    Args:
        agent: built as the saved one was, on a fresh env.
        arrays: what ``episode_state`` returned.
        where: the file they came from, named in errors.

    Raises:
        InvalidDataError: the env's layers are not the ones saved (``rlkit.persistence.env_state``).
    """
    venv = agent.get_env()
    if venv is None:
        raise InvalidDataError(f"{where}: the episode of an agent on an env; this one has none")
    restore_env_state(venv, {k: v for k, v in arrays.items() if not k.startswith(_AGENT)}, where)
    for name in RUN_STATE:
        if f"{_AGENT}{name}" in arrays:
            setattr(agent, name, arrays[f"{_AGENT}{name}"])


def restore_env_rngs(venv: VecEnv, states: list[dict[str, Any]], path: Where) -> None:
    """Each env's ``np_random`` as saved, and the seeds the fresh agent set for its first reset
    dropped, so that reset draws from them."""
    generators = venv.get_attr("np_random")
    if len(generators) != len(states):
        raise InvalidDataError(f"{path}: RNG states of {len(states)} envs, this agent has {len(generators)}")
    for index, (generator, state) in enumerate(zip(generators, states, strict=True)):
        restore_numpy_rng(generator, state, path)
        venv.set_attr("np_random", generator, indices=[index])
    base = venv
    while isinstance(base, VecEnvWrapper):
        base = base.venv
    base._reset_seeds()

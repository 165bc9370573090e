"""The parts of an SB3 agent's run that a resume point holds (the points themselves are committed
and read through ``rlkit.persistence.run_state``), each taken from a running agent and put back
into one built as the saved one was:

- ``network_tensors`` / ``restore_networks``: the networks and their optimisers (SAC's entropy
  coefficient too) as SB3 saves them (its zip: ``rlkit.persistence.agents``);
- ``rng_tensors`` / ``check_rng_tensors`` / ``restore_rng_tensors``: torch's RNGs (CPU; CUDA
  where the agent runs there) and the generators an algorithm keeps of its own (``own_rngs`` /
  ``restore_own_rngs``: ``DrQSAC``'s augmentation);
- ``learn_rngs`` / ``check_learn_rngs`` / ``restore_learn_rngs``: the RNGs besides torch's that
  ``learn`` draws from, as JSON data (numpy's global one, Python's, the action space's, each env's:
  ``env_rng_states`` / ``restore_env_rngs``);
- ``episode_state`` / ``restore_episode``: the episode in progress, the env's layers
  (``rlkit.persistence.env_state``) and the agent's last observation, as named arrays;
- replay buffers: ``rlkit.persistence.replay`` (chunk files a point names with their SHA-256).
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.save_util import recursive_getattr, recursive_setattr
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

from rlkit.errors import FileFormatError, InvalidDataError
from rlkit.persistence.env_state import capture as capture_env_state
from rlkit.persistence.env_state import restore as restore_env_state
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

__all__ = ["check_learn_rngs", "check_rng_tensors", "env_rng_states", "episode_state", "learn_rngs",
           "network_tensors", "own_rngs", "restore_env_rngs", "restore_episode", "restore_learn_rngs",
           "restore_networks", "restore_own_rngs", "restore_rng_tensors", "rng_tensors"]

Where = str | os.PathLike[str]  # a file named in messages


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


# The agent's attributes of the episode in progress, kept with the env's state in a resume point.
EPISODE_ATTRIBUTES = ("_last_obs", "_last_original_obs", "_last_episode_starts")
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
    for name in EPISODE_ATTRIBUTES:
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
    for name in EPISODE_ATTRIBUTES:
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

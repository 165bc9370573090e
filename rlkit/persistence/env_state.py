"""The mid-episode state of an SB3 ``VecEnv`` as named arrays: what a training run killed part way
through an episode needs to go on stepping where it was, instead of starting a new episode.

``capture(venv)`` reads every layer, outermost first, into arrays named ``<layer>/<field>``
(``vec0:RewardVecEnvWrapper/prev_obs``, ``env0/3:HopperEnv/integration``); ``restore`` writes
them back into a freshly built venv of the same make, so that its next ``step`` gives what the
captured one's would have. A layer is read only when its state is known in full:

- rlkit's own envs and wrappers say theirs through ``SavesEpisodeState`` (``episode_state`` /
  ``load_episode_state``; ``episode_state`` returns None when it cannot, e.g. a reward wrapper
  feeding observers);
- of other libraries': gymnasium's ``TimeLimit`` (and rl-zoo3's ``PatchedTimeLimit``, which
  importing rl-zoo3 puts in its place), ``OrderEnforcing`` and ``PassiveEnvChecker``,
  SB3's ``Monitor`` and ``DummyVecEnv`` (the buffers it refills each step hold nothing), SB3's
  ``VecTransposeImage`` (no state), ``Pendulum-v1`` and the MuJoCo tasks whose step reads only
  the simulator's integration state (``MJ_TASKS``: Hopper, HalfCheetah, Walker2d; MuJoCo's
  ``mjSTATE_INTEGRATION``, with which its documentation says ``mj_step`` repeats exactly). Ant and
  Humanoid read body positions left over from the step before, so they are not among them.

Any other layer makes ``capture`` return None: the run then falls back to starting a new episode
(``rlkit.factories.resumable``). Each env's RNG is not here: the caller keeps those as data.
Monitor's episode times and ``t_start`` are wall-clock times and are not kept.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium.envs.classic_control.pendulum import PendulumEnv
from gymnasium.wrappers.common import OrderEnforcing, PassiveEnvChecker, TimeLimit
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecEnvWrapper, VecTransposeImage

from rlkit.errors import InvalidDataError

__all__ = ["MJ_TASKS", "SavesEpisodeState", "capture", "load_pendulum_state", "pendulum_state", "restore"]

State = dict[str, np.ndarray]
LAYERS = "layers"  # the names of the layers captured, outermost first
ZOO_TIME_LIMIT = "rl_zoo3.gym_patches.PatchedTimeLimit"  # put in TimeLimit's place once rl_zoo3 is imported
MJ_TASKS = ("gymnasium.envs.mujoco.hopper_v5.HopperEnv",
            "gymnasium.envs.mujoco.half_cheetah_v5.HalfCheetahEnv",
            "gymnasium.envs.mujoco.walker2d_v5.Walker2dEnv")


class SavesEpisodeState(Protocol):
    """An env or wrapper that can hand over, and take back, all it holds mid-episode."""

    def episode_state(self) -> State | None:
        """Every array the next step depends on (None: not now, e.g. observers attached)."""

    def load_episode_state(self, state: Mapping[str, np.ndarray]) -> None:
        """Take back what ``episode_state`` gave (on a freshly built, never reset instance)."""


def capture(venv: VecEnv) -> State | None:
    """Every layer's mid-episode state, or None when one of them cannot be read in full.

    Args:
        venv: the env an SB3 agent trains on, between two steps.

    Returns:
        Arrays named ``<layer>/<field>``, or None.
    """
    layers = _layers(venv)
    found: State = {LAYERS: np.array([name for name, _ in layers])}
    for name, layer in layers:
        state = _read(layer)
        if state is None:
            return None
        found |= {f"{name}/{field}": np.asarray(value) for field, value in state.items()}
    return found


def restore(venv: VecEnv, state: Mapping[str, np.ndarray], where: str | os.PathLike[str]) -> None:
    """Write ``capture``'s arrays back into ``venv`` (built as the captured one was, not yet reset).

    Args:
        venv: the fresh venv.
        state: what ``capture`` returned for the venv being resumed.
        where: the file they came from, named in errors.

    Raises:
        InvalidDataError: when the venv's layers are not the ones the state was captured from, or a
            layer refuses its arrays.
    """
    layers = dict(_layers(venv))
    captured = [str(name) for name in state.get(LAYERS, np.array([]))]
    if captured != list(layers):
        raise InvalidDataError(f"{where}: an env state of the layers {captured}; this env's are "
                               f"{list(layers)} (built with other settings?)")
    saved: dict[str, dict[str, np.ndarray]] = {name: {} for name in layers}
    for key, value in state.items():
        name, _, field = key.rpartition("/")
        if key == LAYERS:
            continue
        if name not in saved:
            raise InvalidDataError(f"{where}: a state for {name!r}, which is not one of this env's layers")
        saved[name][field] = value
    for name, fields in saved.items():
        if _stateless(layers[name]):
            continue
        try:
            _write(layers[name], fields)
        except (InvalidDataError, AttributeError, KeyError, ValueError, TypeError, IndexError) as error:
            raise InvalidDataError(f"{where}: the state of {name} does not fit this env "
                                   f"({type(error).__name__}: {error})") from None


def _layers(venv: VecEnv) -> list[tuple[str, Any]]:
    """``(name, layer)`` from the outermost VecEnv wrapper to each env's innermost env."""
    layers: list[tuple[str, Any]] = []
    depth, layer = 0, venv
    while isinstance(layer, VecEnvWrapper):
        layers.append((f"vec{depth}:{_layer_name(layer)}", layer))
        depth, layer = depth + 1, layer.venv
    layers.append((f"vec{depth}:{_layer_name(layer)}", layer))
    if isinstance(layer, DummyVecEnv):
        for index, env in enumerate(layer.envs):
            depth, inner = 0, env
            while True:
                layers.append((f"env{index}/{depth}:{_layer_name(inner)}", inner))
                if not isinstance(inner, gym.Wrapper):
                    break
                depth, inner = depth + 1, inner.env
    return layers


def _layer_name(layer: Any) -> str:
    """The class name; rl-zoo3's TimeLimit is named as gymnasium's, whose place it takes only in
    processes that imported rl-zoo3 (a point saved in one resumes in the other)."""
    return "TimeLimit" if _qualname(layer) == ZOO_TIME_LIMIT else type(layer).__name__


def _stateless(layer: Any) -> bool:
    return type(layer) in (DummyVecEnv, VecTransposeImage)


def _read(layer: Any) -> State | None:
    if _stateless(layer):
        return {}
    if _saves_its_own(layer):
        return layer.episode_state()
    reader = _READERS.get(_qualname(layer))
    return reader[0](layer) if reader is not None else None


def _write(layer: Any, fields: Mapping[str, np.ndarray]) -> None:
    if _saves_its_own(layer):
        layer.load_episode_state(fields)
    else:
        _READERS[_qualname(layer)][1](layer, fields)


def _saves_its_own(layer: Any) -> bool:
    """Whether the layer's own class says its state (``SavesEpisodeState``). Asked of the class:
    SB3's VecEnv wrappers hand unknown attributes on to the env they wrap, so a ``VecNormalize``
    would seem to have its inner wrapper's methods."""
    return all(callable(getattr(type(layer), name, None)) for name in ("episode_state", "load_episode_state"))


def _qualname(layer: Any) -> str:
    return _class_name(type(layer))


def _time_limit(env: TimeLimit) -> State | None:
    steps = env._elapsed_steps
    return None if steps is None else {"elapsed_steps": np.asarray(steps, dtype=np.int64)}


def _set_time_limit(env: TimeLimit, state: Mapping[str, np.ndarray]) -> None:
    env._elapsed_steps = int(state["elapsed_steps"])  # type: ignore[assignment]  # typed None before reset


def _order(env: OrderEnforcing) -> State:
    return {"has_reset": np.asarray(env._has_reset)}


def _set_order(env: OrderEnforcing, state: Mapping[str, np.ndarray]) -> None:
    env._has_reset = bool(state["has_reset"])


CHECKS = ("checked_reset", "checked_step", "checked_render", "checked_data_reuse")


def _checker(env: PassiveEnvChecker) -> State:
    """Which of its one-off checks ran (they only warn; the data it compares is not kept)."""
    return {name: np.asarray(getattr(env, name)) for name in CHECKS}


def _set_checker(env: PassiveEnvChecker, state: Mapping[str, np.ndarray]) -> None:
    for name in CHECKS:
        setattr(env, name, bool(state[name]))


def _monitor(env: Monitor) -> State:
    return {"rewards": np.asarray(env.rewards, dtype=np.float64), "needs_reset": np.asarray(env.needs_reset),
            "episode_returns": np.asarray(env.episode_returns, dtype=np.float64),
            "episode_lengths": np.asarray(env.episode_lengths, dtype=np.int64),
            "total_steps": np.asarray(env.total_steps, dtype=np.int64)}


def _set_monitor(env: Monitor, state: Mapping[str, np.ndarray]) -> None:
    env.rewards = [float(r) for r in state["rewards"]]
    env.needs_reset = bool(state["needs_reset"])
    env.episode_returns = [float(r) for r in state["episode_returns"]]
    env.episode_lengths = [int(n) for n in state["episode_lengths"]]
    env.episode_times = [0.0] * len(env.episode_lengths)  # wall-clock times, not kept
    env.total_steps = int(state["total_steps"])


def pendulum_state(env: PendulumEnv) -> State | None:
    """Pendulum-v1's state and last torque (None before its first reset); also the state of
    envs drawn over it (``envs.pixels.PixelPendulum``).

    Args:
        env: the Pendulum env.

    Returns:
        Its arrays, or None.
    """
    if getattr(env, "state", None) is None:
        return None
    last_u = np.nan if env.last_u is None else float(env.last_u)
    return {"state": np.asarray(env.state, dtype=np.float64), "last_u": np.asarray(last_u)}


def load_pendulum_state(env: PendulumEnv, state: Mapping[str, np.ndarray]) -> None:
    """Take back what ``pendulum_state`` gave.

    Args:
        env: a Pendulum env.
        state: what ``pendulum_state`` returned.
    """
    env.state = np.array(state["state"], dtype=np.float64)
    env.last_u = None if np.isnan(state["last_u"]) else float(state["last_u"])


def _mujoco(env: Any) -> State:
    spec = mujoco.mjtState.mjSTATE_INTEGRATION
    state = np.empty(mujoco.mj_stateSize(env.model, spec), dtype=np.float64)
    mujoco.mj_getState(env.model, env.data, state, spec)
    return {"integration": state}


def _set_mujoco(env: Any, state: Mapping[str, np.ndarray]) -> None:
    spec = mujoco.mjtState.mjSTATE_INTEGRATION
    values = np.ascontiguousarray(state["integration"], dtype=np.float64)
    if values.shape != (mujoco.mj_stateSize(env.model, spec),):
        raise InvalidDataError(f"an integration state of shape {values.shape}, this model's has "
                         f"{mujoco.mj_stateSize(env.model, spec)} numbers")
    mujoco.mj_setState(env.model, env.data, values, spec)


def _class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


_READERS: dict[str, tuple[Callable[[Any], State | None], Callable[[Any, Mapping[str, np.ndarray]], None]]] = {
    _class_name(TimeLimit): (_time_limit, _set_time_limit),
    ZOO_TIME_LIMIT: (_time_limit, _set_time_limit),
    _class_name(OrderEnforcing): (_order, _set_order),
    _class_name(PassiveEnvChecker): (_checker, _set_checker),
    _class_name(Monitor): (_monitor, _set_monitor),
    _class_name(PendulumEnv): (pendulum_state, load_pendulum_state),
    **{name: (_mujoco, _set_mujoco) for name in MJ_TASKS},
}

"""Vectorised rollout collection over an SB3 ``VecEnv`` from a policy, a callable or random actions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs

from rlkit.data.sim_state import STATE_KEY, recorded_states
from rlkit.data.trajectory import Trajectory
from rlkit.errors import ConfigError, InvalidDataError

ActionFn = Callable[[np.ndarray], np.ndarray]


@runtime_checkable
class Predictor(Protocol):
    """SB3 algorithms and policies both have ``predict``."""

    def predict(self, observation: Any, state: Any = ..., episode_start: Any = ...,
                deterministic: bool = ...) -> tuple[np.ndarray, Any]: ...


def random_actions(space: spaces.Space, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` uniform actions drawn from ``rng`` (not the space's own global-ish RNG).

    Args:
        space: the action space: ``Box`` (infinite bounds become -1/1), ``Discrete``,
            ``MultiDiscrete`` or ``MultiBinary``.
        n: how many actions.
        rng: the generator to draw from.

    Returns:
        ``(n, *space.shape)`` actions of the space's kind.

    Raises:
        InvalidDataError: for any other space.
    """
    if isinstance(space, spaces.Box):
        low = np.where(np.isfinite(space.low), space.low, -1.0)
        high = np.where(np.isfinite(space.high), space.high, 1.0)
        return rng.uniform(low, high, size=(n, *space.shape)).astype(space.dtype)
    if isinstance(space, spaces.Discrete):
        return space.start + rng.integers(0, space.n, size=n)
    if isinstance(space, spaces.MultiDiscrete):
        return rng.integers(0, space.nvec, size=(n, *space.nvec.shape))
    if isinstance(space, spaces.MultiBinary):
        return rng.integers(0, 2, size=(n, *np.atleast_1d(space.n)), dtype=np.int8)
    raise InvalidDataError(f"random actions are not defined for {type(space).__name__} spaces")


def as_action_fn(
    policy: Predictor | ActionFn | None,
    action_space: spaces.Space,
    n_envs: int,
    rng: np.random.Generator,
    deterministic: bool = False,
) -> ActionFn:
    """One calling convention for a random policy, an SB3 model/policy, or a plain callable."""
    if policy is None:
        return lambda obs: random_actions(action_space, n_envs, rng)
    if isinstance(policy, Predictor):  # has ``predict``
        predictor = policy
        return lambda obs: predictor.predict(obs, deterministic=deterministic)[0]
    return policy


def collect_trajectories(
    venv: VecEnv,
    policy: Predictor | ActionFn | None,
    rng: np.random.Generator,
    *,
    n_steps: int | None = None,
    n_episodes: int | None = None,
    max_length: int | None = None,
    deterministic: bool = False,
    seed: int | None = None,
) -> list[Trajectory]:
    """Step all envs together until ``n_steps`` transitions or ``n_episodes`` episodes are in.

    With ``n_steps``, unfinished episodes at the end are kept as non-terminal pieces so exactly
    ``n_steps`` transitions come back; with ``n_episodes`` only finished episodes count.
    ``max_length`` cuts longer episodes into non-terminal pieces, so segments appear early.
    A time-limit truncation is not terminal: its last step is not ``done`` for a reward net.
    Simulator states in ``info[STATE_KEY]`` (``rlkit.data.sim_state.RecordStates``) are kept as
    the trajectories' ``states``.

    Args:
        venv: the SB3 vectorised env; it is reset (array observations only).
        policy: an SB3 model or policy (``predict``), a callable from a batch of observations to a
            batch of actions, or ``None`` for uniform random actions.
        rng: the generator of the random actions.
        n_steps: stop after this many transitions, summed over envs.
        n_episodes: stop once this many episodes have finished.
        max_length: the longest trajectory piece, in steps.
        deterministic: passed to ``predict``.
        seed: seeds ``venv`` before the reset.

    Returns:
        The trajectories in the order they were closed.

    Raises:
        ConfigError: unless exactly one of ``n_steps`` and ``n_episodes`` is given.
        InvalidDataError: on dict observations or a non-finite reward.
    """
    if (n_steps is None) == (n_episodes is None):
        raise ConfigError("give exactly one of n_steps or n_episodes")
    if isinstance(venv.observation_space, spaces.Dict):
        raise InvalidDataError("dict observation spaces are not supported; flatten them first")
    act = as_action_fn(policy, venv.action_space, venv.num_envs, rng, deterministic)
    if seed is not None:
        venv.seed(seed)
    obs = array_obs(venv.reset())
    pieces: list[list[tuple[np.ndarray, np.ndarray, float]]] = [[] for _ in range(venv.num_envs)]
    states: list[list[np.ndarray | None]] = [[] for _ in range(venv.num_envs)]
    done_trajs: list[Trajectory] = []

    def close(env: int, final_obs: np.ndarray, terminal: bool) -> None:
        done_trajs.append(Trajectory.from_steps(pieces[env], final_obs, terminal,
                                                recorded_states(states[env])))
        pieces[env], states[env] = [], []

    steps = 0
    while True:
        actions = np.asarray(act(obs))
        stepped, rewards, dones, infos = venv.step(actions)
        next_obs = array_obs(stepped)
        if not np.isfinite(rewards).all():
            raise InvalidDataError(f"the environment returned a non-finite reward: {rewards}")
        for i in range(venv.num_envs):
            pieces[i].append((obs[i], actions[i], float(rewards[i])))
            states[i].append(infos[i].get(STATE_KEY))
            steps += 1
            if dones[i]:
                final = infos[i].get("terminal_observation", next_obs[i])
                close(i, final, terminal=not infos[i].get("TimeLimit.truncated", False))
            elif max_length is not None and len(pieces[i]) >= max_length:
                close(i, next_obs[i], terminal=False)
            if n_steps is not None and steps >= n_steps:
                for j, piece in enumerate(pieces):
                    if piece:
                        close(j, next_obs[j], terminal=False)
                return done_trajs
        if n_episodes is not None and _n_episodes(done_trajs, max_length) >= n_episodes:
            return done_trajs
        obs = next_obs


def _n_episodes(trajectories: list[Trajectory], max_length: int | None) -> int:
    if max_length is None:
        return len(trajectories)
    # Cut pieces of one episode are non-terminal and exactly max_length long; the last is not.
    return sum(1 for t in trajectories if t.terminal or len(t) != max_length)


def array_obs(obs: VecEnvObs) -> np.ndarray:
    """Batched observations as one array (dict and tuple observations are not supported)."""
    if not isinstance(obs, np.ndarray):
        raise InvalidDataError(
            f"observations must be arrays, got a {type(obs).__name__}; flatten them first"
        )
    return obs

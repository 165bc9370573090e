"""Multi-agent envs as rows: one row per (game, agent), game-major, so agent i's rows are ``i::n_agents``.

The trainer sees only ``AgentRows``: a batch of games stepped together, each step returning the
reward the agents learn from (shaped) and the env's own reward (original) side by side, so the
original return is tracked without ever being confused with the shaped one. Two sources:
``OvercookedRows`` (the batched Overcooked engine, optionally with a ``TeamRewardShaper``) and
``ParallelEnvRows`` (N copies of any PettingZoo ``ParallelEnv``, e.g. wrapped in the core's
``PettingZooRewardWrapper``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv

from envs.overcooked.vector import OvercookedVecEnv
from rlkit.errors import InvalidDataError
from rlkit.types import TeamRewardShaper


@dataclass(frozen=True)
class RowStep:
    """One step of every row (R = games x agents, game-major).

    Attributes:
        obs: ``(R, D)`` float32, the observations after the step and any auto-reset.
        rewards: ``(R,)`` float32, what the agents learn from (shaped).
        original: ``(R,)`` float32, the env's own reward.
        dones: ``(R,)`` bool, the row's game ended this step.
        truncated: ``(R,)`` bool, ended by a time limit (the value is bootstrapped).
        terminal_obs: ``(R, D)`` float32, the last observation of rows whose game just ended and
            the next observation elsewhere.
    """

    obs: np.ndarray  # (R, D) float32
    rewards: np.ndarray  # (R,) float32, what the agents learn from
    original: np.ndarray  # (R,) float32, the env's own reward
    dones: np.ndarray  # (R,) bool
    truncated: np.ndarray  # (R,) bool, ended by a time limit (value is bootstrapped)
    terminal_obs: np.ndarray  # (R, D) float32


class AgentRows(Protocol):
    """What ``rlkit.marl`` trains on: ``num_games * n_agents`` rows of one observation/action space."""

    agent_names: tuple[str, ...]
    num_games: int
    n_agents: int

    @property
    def observation_space(self) -> spaces.Box: ...  # read-only, so a Box of any dtype satisfies it

    @property
    def action_space(self) -> spaces.Discrete: ...

    def reset(self, seed: int) -> np.ndarray: ...

    def step(self, actions: np.ndarray) -> RowStep: ...


class OvercookedRows:
    """``OvercookedVecEnv`` rows; ``shaper`` terms are added to the team reward once per step.

    The shaper sees the state after the step and before auto-reset, and each agent's macro in
    effect (an action sent while a macro runs is ignored by the game, so it is not what happened).
    ``shaper`` may be replaced between ``learn()`` calls (M3HF reweights its pools each phase).

    Args:
        venv: the batched Overcooked games; with a ``shaper`` built with ``keep_features=True``.
        shaper: returns a ``(games, agents)`` term per step from the state and the macros in
            effect (None: the env's reward alone).

    Raises:
        InvalidDataError: when a ``shaper`` is given and ``venv`` does not keep its features.
    """

    def __init__(self, venv: OvercookedVecEnv, shaper: TeamRewardShaper | None = None) -> None:
        if shaper is not None and not venv.keep_features:
            raise InvalidDataError(
                "a shaper needs the state before auto-reset: build the env with "
                "OvercookedVecEnv(..., keep_features=True)"
            )
        self.venv = venv
        self.shaper = shaper
        self.agent_names = tuple(f"agent_{a}" for a in range(venv.n_agents))
        self.num_games, self.n_agents = venv.num_games, venv.n_agents
        self.observation_space = venv.observation_space
        self.action_space = venv.action_space
        self._in_effect = np.zeros((venv.num_games, venv.n_agents), dtype=np.int64)

    def reset(self, seed: int) -> np.ndarray:
        """The game has no randomness; ``seed`` is accepted for the common interface."""
        self._in_effect[:] = 0
        return self.venv.reset()

    def step(self, actions: np.ndarray) -> RowStep:
        ready = self.venv.macro_done.reshape(self.num_games, self.n_agents)
        sent = actions.reshape(self.num_games, self.n_agents)
        self._in_effect = np.where(ready, sent, self._in_effect)
        obs, original, dones, infos = self.venv.step(actions)
        rewards = original
        if self.shaper is not None:
            assert self.venv.last_features is not None  # keep_features is checked in __init__
            terms = np.asarray(self.shaper(self.venv.last_features, self._in_effect), dtype=np.float32)
            if terms.shape != sent.shape or not np.all(np.isfinite(terms)):
                raise InvalidDataError(
                    f"shaper must return finite terms of shape {sent.shape}, got shape {terms.shape}"
                )
            rewards = original + terms.reshape(-1)
        terminal_obs = obs
        truncated = np.zeros(len(dones), dtype=bool)
        ended = np.flatnonzero(dones)
        if len(ended):
            terminal_obs = obs.copy()
            terminal_obs[ended] = [infos[row]["terminal_observation"] for row in ended]
            truncated[ended] = [infos[row]["TimeLimit.truncated"] for row in ended]
        return RowStep(obs, rewards, original, dones, truncated, terminal_obs)


class ParallelEnvRows:
    """``num_games`` copies of a PettingZoo ``ParallelEnv`` whose agents all start and end together.

    Rewards are the env's; when it is a ``PettingZooRewardWrapper`` the original rewards come from
    ``info[agent]["original_reward"]``. A game that ends is reset at once (SB3's convention).

    Args:
        make_env: builds one game; every agent of it must have the same 1-D Box observation
            space and Discrete action space.
        num_games: the copies stepped together, >= 1.

    Raises:
        InvalidDataError: when ``num_games`` is below 1 or the spaces differ or are of another
            kind.
    """

    def __init__(self, make_env: Callable[[], ParallelEnv], num_games: int) -> None:
        if num_games < 1:
            raise InvalidDataError(f"num_games must be >= 1, got {num_games}")
        self.envs = [make_env() for _ in range(num_games)]
        first = self.envs[0]
        self.agent_names = tuple(first.possible_agents)
        self.num_games, self.n_agents = num_games, len(self.agent_names)
        self.observation_space = _same_space(first, self.agent_names, "observation_space")
        self.action_space = _same_space(first, self.agent_names, "action_space")
        if (
            not isinstance(self.observation_space, spaces.Box)
            or len(self.observation_space.shape) != 1
            or not isinstance(self.action_space, spaces.Discrete)
        ):
            raise InvalidDataError(
                "rlkit.marl needs 1-D Box observations and Discrete actions, got "
                f"{self.observation_space} and {self.action_space}"
            )
        self._seeds = np.random.default_rng()

    def reset(self, seed: int) -> np.ndarray:
        """Game g starts from ``seed + g``; later resets draw their seeds from ``seed``."""
        self._seeds = np.random.default_rng(seed)
        return np.concatenate([self._flat(env.reset(seed=seed + g)[0]) for g, env in enumerate(self.envs)])

    def step(self, actions: np.ndarray) -> RowStep:
        names, n = self.agent_names, self.n_agents
        rows = actions.reshape(self.num_games, n).tolist()
        obs, rewards, original, dones, truncated = [], [], [], [], []
        terminal = []
        for env, row in zip(self.envs, rows, strict=True):
            ob, reward, term, trunc, info = env.step(dict(zip(names, row, strict=True)))
            flat = self._flat(ob)
            ended = [bool(term[a] or trunc[a]) for a in names]
            if any(ended) and not all(ended):
                raise InvalidDataError(
                    f"agents {[a for a, e in zip(names, ended, strict=True) if e]} ended before the "
                    "others; rlkit.marl needs every agent of a game to end on the same step"
                )
            terminal.append(flat)
            if ended[0]:
                flat = self._flat(env.reset(seed=int(self._seeds.integers(2**31)))[0])
            obs.append(flat)
            rewards.append([reward[a] for a in names])
            original.append([info.get(a, {}).get("original_reward", reward[a]) for a in names])
            dones.append([ended[0]] * n)
            truncated.append([bool(trunc[a]) and not term[a] for a in names])
        return RowStep(
            np.concatenate(obs),
            np.asarray(rewards, dtype=np.float32).ravel(),
            np.asarray(original, dtype=np.float32).ravel(),
            np.asarray(dones).ravel(),
            np.asarray(truncated).ravel(),
            np.concatenate(terminal),
        )

    def _flat(self, obs: Mapping[str, Any]) -> np.ndarray:
        return np.stack([np.asarray(obs[a], dtype=np.float32).ravel() for a in self.agent_names])


def _same_space(env: ParallelEnv, agents: tuple[str, ...], which: str) -> spaces.Space:
    space = getattr(env, which)(agents[0])
    for agent in agents[1:]:
        if getattr(env, which)(agent) != space:
            raise InvalidDataError(
                f"{which}({agent!r}) differs from {which}({agents[0]!r}); rows need one space"
            )
    return space

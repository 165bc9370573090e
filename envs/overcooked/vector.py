"""Many games stepped as one batch, for parameter-shared training.

One row per (game, agent), game-major, the layout SuperSuit's concatenated vec env gives a
PettingZoo env: a single policy acts for every agent of every game. Step semantics are SB3's
``VecEnv``: ``step(actions) -> (obs, rewards, dones, infos)``; a finished game resets at once and
its rows' infos carry ``terminal_observation`` and ``TimeLimit.truncated``. ``sb3.py`` wraps
this class as an SB3 ``VecEnv``; this module needs numpy only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from envs.overcooked.config import OvercookedConfig
from envs.overcooked.describe import describe, features
from envs.overcooked.kitchen import Kitchen
from envs.overcooked.layouts import ACTION_NAMES
from envs.overcooked.macro import MacroController, macro_catalogue
from envs.overcooked.observation import get_observer
from envs.overcooked.render import Painter
from rlkit.errors import ConfigError, InvalidDataError, StateError, WrongTypeError


class OvercookedVecEnv:
    """``num_games`` games of one configuration; ``num_envs = num_games * n_agents`` rows."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(
        self, num_games: int, render_mode: str | None = None, *, keep_features: bool = False, **kwargs: Any
    ) -> None:
        """Build the games.

        Args:
            num_games: the games stepped together, a positive int.
            render_mode: ``"rgb_array"`` or None (no rendering).
            keep_features: store every step's ``features()`` before auto-reset in
                ``last_features`` (reward shapers need the final state of a finished game, which
                ``features()`` no longer has).
            **kwargs: the game's settings, ``OvercookedConfig``'s fields (``obs_mode`` must be
                ``"vector"``).

        Raises:
            ConfigError: on a bad ``num_games``, ``render_mode`` or ``obs_mode``, or a setting out
                of range.
            WrongTypeError: on an unknown setting or a value of the wrong type.
        """
        if isinstance(num_games, bool) or not isinstance(num_games, int) or num_games < 1:
            raise ConfigError(f"num_games must be a positive int, got {num_games!r}")
        config = OvercookedConfig.from_kwargs(**kwargs)
        if config.obs_mode != "vector":
            raise ConfigError("the batched env supports obs_mode='vector' only")
        if render_mode not in (None, "rgb_array"):
            raise ConfigError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.config = config
        self.render_mode = render_mode
        self.num_games = num_games
        self.n_agents = config.n_agents
        self.num_envs = num_games * config.n_agents
        layout, recipe = config.layout_spec, config.recipe_spec
        self._kitchens = [Kitchen(layout, recipe, config.rewards) for _ in range(num_games)]
        self._macros = (
            [MacroController(k, config.macro_timeout) for k in self._kitchens]
            if config.macro_actions
            else None
        )
        self._steppers = [m.step for m in self._macros] if self._macros else [k.step for k in self._kitchens]
        self.action_names = (
            tuple(name for name, _, _ in macro_catalogue(layout)) if config.macro_actions else ACTION_NAMES
        )
        self._observer = get_observer(layout, config.n_agents, config.obs_radius, recipe.index)
        self.observation_space = spaces.Box(0.0, 1.0, (self._observer.size,), np.float32)
        self.action_space = spaces.Discrete(len(self.action_names))
        self._initial_obs = self._observer.observe_one(self._kitchens[0].entity_states())
        self._obs = np.tile(self._initial_obs, (num_games, 1))
        self._t = np.zeros(num_games, dtype=np.int64)
        self.macro_done = np.ones(self.num_envs, dtype=bool)  # rows ready for a new macro
        self._started = False
        self._pending: np.ndarray | None = None
        self._painter: Painter | None = None
        self.keep_features = keep_features
        self.last_features: dict[str, np.ndarray] | None = None

    def reset(self) -> np.ndarray:
        for kitchen in self._kitchens:
            kitchen.reset()
        for macros in self._macros or ():
            macros.reset()
        self._obs[:] = np.tile(self._initial_obs, (self.num_games, 1))
        self._t[:] = 0
        self.macro_done[:] = True
        self._started = True
        return self._obs.copy()

    def step_async(self, actions: np.ndarray) -> None:
        self._pending = self._check_actions(actions)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        if self._pending is None:
            raise StateError("step_wait() without step_async()")
        actions, self._pending = self._pending, None
        n_agents, kitchens = self.n_agents, self._kitchens
        rows = actions.reshape(self.num_games, n_agents).tolist()
        rewards = [step(row) for step, row in zip(self._steppers, rows, strict=True)]
        new = self._observer.observe(np.array([k.entity_states() for k in kitchens]))
        new = new.reshape(self.num_envs, -1)
        if self._macros:
            self.macro_done = np.array([m.done for m in self._macros]).ravel()
            self._obs[self.macro_done] = new[self.macro_done]
        else:
            self._obs[:] = new
        self._t += 1
        terminated = np.array([k.delivered for k in kitchens])
        truncated = ~terminated & (self._t >= self.config.max_steps)
        ended = terminated | truncated
        dones = np.repeat(ended, n_agents)
        if self.keep_features:
            self.last_features = {**features(kitchens), "step": self._t.copy()}
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for g in np.flatnonzero(ended).tolist():
            for row in range(g * n_agents, (g + 1) * n_agents):
                infos[row]["terminal_observation"] = self._obs[row].copy()
                infos[row]["TimeLimit.truncated"] = bool(truncated[g])
            self._reset_game(g)
        return (
            self._obs.copy(),
            np.repeat(np.asarray(rewards, dtype=np.float32), n_agents),
            dones,
            infos,
        )

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        self.step_async(actions)
        return self.step_wait()

    def _reset_game(self, g: int) -> None:
        self._kitchens[g].reset()
        if self._macros:
            self._macros[g].reset()
        rows = slice(g * self.n_agents, (g + 1) * self.n_agents)
        self._obs[rows] = self._initial_obs
        self.macro_done[rows] = True
        self._t[g] = 0

    def _check_actions(self, actions: Any) -> np.ndarray:
        if not self._started:
            raise StateError("call reset() before step()")
        acts = np.asarray(actions)
        if acts.shape not in ((self.num_envs,), (self.num_envs, 1)):
            raise InvalidDataError(f"actions must have shape ({self.num_envs},), got {acts.shape}")
        if acts.dtype.kind not in "iu":
            if acts.dtype.kind != "f" or not np.all(acts == np.round(acts)):
                raise WrongTypeError(f"actions must be integers, got dtype {acts.dtype}")
            acts = acts.astype(np.int64)
        acts = acts.reshape(self.num_envs)
        if acts.min() < 0 or acts.max() >= len(self.action_names):
            bad = acts[(acts < 0) | (acts >= len(self.action_names))]
            raise InvalidDataError(
                f"actions out of range 0..{len(self.action_names) - 1}: {bad[:5].tolist()}"
            )
        return acts

    def describe(self, game: int) -> dict[str, Any]:
        """The self-description of one game (see ``OvercookedParallelEnv.describe``)."""
        macros = self._macros[game] if self._macros else None
        config = self.config
        return describe(
            self._kitchens[game], config.recipe_spec, int(self._t[game]), config.max_steps, macros
        )

    def features(self) -> dict[str, np.ndarray]:
        """Every game's entities as arrays with a leading game axis (see ``describe.features``)."""
        return {**features(self._kitchens), "step": self._t.copy()}

    def frames(self) -> list[np.ndarray]:
        """One RGB frame per game."""
        if self._painter is None:
            self._painter = Painter(self.config.layout_spec, self.config.cell_px)
        return [self._painter.frame(k) for k in self._kitchens]

    def close(self) -> None:
        """Nothing to release."""

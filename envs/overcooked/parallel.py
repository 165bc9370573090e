"""The PettingZoo face of the game: ``parallel_env`` (ParallelEnv) and ``env`` (AEC)."""

from __future__ import annotations

import operator
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec

from envs.overcooked.config import OvercookedConfig, Rewards
from envs.overcooked.describe import describe, entity_names, features
from envs.overcooked.kitchen import Kitchen
from envs.overcooked.layouts import ACTION_NAMES
from envs.overcooked.macro import MacroController
from envs.overcooked.observation import get_observer
from envs.overcooked.render import Painter, ansi
from rlkit.errors import ConfigError, InvalidDataError, StateError, UnknownKeyError, WrongTypeError

Obs = np.ndarray
RENDER_MODES = ("rgb_array", "ansi", "human")


class OvercookedParallelEnv(ParallelEnv):
    """Macro-action Overcooked (Xiao et al.) with gymnasium semantics.

    One team reward per step for every agent; ``terminated`` on a correct delivery,
    ``truncated`` at ``max_steps``. Observations are read-only arrays: an agent's observation
    is the same object until it refreshes (every step with primitive actions, when its macro
    finishes with macro actions). The game has no randomness: the actions alone fix an episode.

    The arguments are validated as an ``OvercookedConfig`` (``config``).

    Args:
        layout: the map, ``"A"``, ``"B"`` or ``"C"``.
        recipe: the dish, by name in any food order (``"lettuce-tomato"``, ``"tomato salad"``)
            or by the reference's index (0 to 6).
        n_agents: the team's size, 2 or 3.
        macro_actions: agents choose macro actions (go to an object, chop, deliver, ...) that
            run over several steps; False: primitive moves.
        obs_radius: an agent sees the cells within this many rows and columns of it (0: the
            whole map), >= 0.
        max_steps: steps before an episode is truncated, >= 1.
        macro_timeout: the most steps one macro runs, >= 1 (above every path length on every
            map).
        rewards: the team reward terms (a ``Rewards``, a dict of terms, or None: the
            defaults).
        obs_mode: ``"vector"`` (float32 features in [0, 1]) or ``"image"`` (uint8 RGB frames of
            the visible cells).
        cell_px: pixels per cell of ``rgb_array`` frames and image observations, >= 4.
        render_mode: ``"rgb_array"``, ``"ansi"``, ``"human"`` or None (no rendering).

    Raises:
        WrongTypeError: on a value of the wrong type.
        ConfigError: on a value out of range, an unknown reward term or an unknown render mode.
    """

    metadata = {
        "name": "overcooked_v0",
        "render_modes": list(RENDER_MODES),
        "render_fps": 5,
        "is_parallelizable": True,
    }

    def __init__(
        self,
        layout: str = "A",
        recipe: str | int = "lettuce-tomato",
        n_agents: int = 3,
        macro_actions: bool = True,
        obs_radius: int = 2,
        max_steps: int = 200,
        obs_mode: str = "vector",
        render_mode: str | None = None,
        *,
        macro_timeout: int = 25,
        rewards: Rewards | dict[str, float] | None = None,
        cell_px: int = 80,
    ) -> None:
        config = OvercookedConfig(
            layout=layout,
            recipe=recipe,
            n_agents=n_agents,
            macro_actions=macro_actions,
            obs_radius=obs_radius,
            max_steps=max_steps,
            obs_mode=obs_mode,
            macro_timeout=macro_timeout,
            rewards=Rewards.coerce(rewards),
            cell_px=cell_px,
        )
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ConfigError(
                f"render_mode must be None or one of {list(RENDER_MODES)}, got {render_mode!r}"
            )
        self.config = config
        self.render_mode = render_mode
        self.layout = config.layout_spec
        self.recipe = config.recipe_spec
        self.possible_agents = [f"agent_{a}" for a in range(n_agents)]
        self.agents: list[str] = []
        self._agent_set = frozenset(self.possible_agents)
        self._blocker_names = [*self.possible_agents, None]  # blocked_by -1 reads None
        self._kitchen = Kitchen(self.layout, self.recipe, config.rewards)
        self._macros = MacroController(self._kitchen, macro_timeout) if macro_actions else None
        self.action_names: tuple[str, ...] = (
            tuple(name for name, _, _ in self._macros.catalogue) if self._macros else ACTION_NAMES
        )
        self.entity_names = entity_names(n_agents)
        self._observer = get_observer(self.layout, n_agents, obs_radius, self.recipe.index)
        self._global = get_observer(self.layout, n_agents, 0, self.recipe.index)
        self._painter: Painter | None = None
        if obs_mode == "vector":
            obs_space = spaces.Box(0.0, 1.0, (self._observer.size,), np.float32)
        else:
            cells = 2 * obs_radius + 1 if obs_radius else None
            h = (cells or self.layout.height) * cell_px
            w = (cells or self.layout.width) * cell_px
            # gymnasium's stub types dtype as float32 only; uint8 images are what Box documents
            obs_space = spaces.Box(0, 255, (h, w, 3), np.uint8)  # type: ignore[arg-type]
        self._obs_spaces = {a: obs_space for a in self.possible_agents}
        self._act_spaces = {a: spaces.Discrete(len(self.action_names)) for a in self.possible_agents}
        self.state_space = spaces.Box(0.0, 1.0, (self._global.size,), np.float32)
        self._obs: list[Obs] = []
        self._t = 0
        self._max_steps = max_steps
        self._vector_obs = obs_mode == "vector"
        self._agent_range = range(n_agents)
        self._n, self._n_actions = n_agents, len(self.action_names)
        self._last_states: list[int] = []
        self._last_obs: list[Obs] = []

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Box:
        return self._obs_spaces[self._check_agent(agent)]

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._act_spaces[self._check_agent(agent)]

    def _check_agent(self, agent: str) -> str:
        if agent not in self._agent_set:
            raise UnknownKeyError(f"unknown agent {agent!r}; agents: {self.possible_agents}")
        return agent

    # ------------------------------------------------------------------ episode
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Obs], dict[str, dict[str, Any]]]:
        """Start an episode. ``seed`` and ``options`` are accepted for the API; nothing is random."""
        self._kitchen.reset()
        if self._macros:
            self._macros.reset()
        self._sent = [0] * self._n  # primitive mode: the last actions sent (STAY before the first step)
        self._t = 0
        self.agents = list(self.possible_agents)
        self._obs = self._fresh_observations()
        info: dict[str, Any] = {"collided_with": None}
        if self._macros:
            info.update(macro=None, macro_done=True, macro_timed_out=False, primitive_action=None)
        if self.render_mode == "human":
            self.render()
        return dict(zip(self.possible_agents, self._obs, strict=True)), {a: dict(info) for a in self.agents}

    def step(
        self, actions: Mapping[str, Any]
    ) -> tuple[dict[str, Obs], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]]:
        if not self.agents:
            raise StateError("the episode is over (or never started): call reset() before step()")
        acts = self._parse_actions(actions)
        kitchen, macros = self._kitchen, self._macros
        if macros:
            reward = macros.step(acts)
            if any(macros.done):
                fresh = self._fresh_observations()
                self._obs = [
                    new if done else old for new, old, done in zip(fresh, self._obs, macros.done, strict=True)
                ]
        else:
            reward = kitchen.step(acts)
            self._sent = acts
            self._obs = self._fresh_observations()
        self._t += 1
        terminated = kitchen.delivered
        truncated = not terminated and self._t >= self._max_steps
        names = self.possible_agents
        infos = self._infos()
        if terminated or truncated:
            self.agents = []
        if self.render_mode == "human":
            self.render()
        return (
            dict(zip(names, self._obs, strict=False)),
            dict.fromkeys(names, reward),
            dict.fromkeys(names, terminated),
            dict.fromkeys(names, truncated),
            infos,
        )

    def actions_in_effect(self) -> tuple[int, ...]:
        """Each agent's action in the last step as the game carried it out: its running macro (an
        action sent while a macro runs is ignored), or the primitive action it sent."""
        return tuple(self._macros.current) if self._macros else tuple(self._sent)

    def _parse_actions(self, actions: Mapping[str, Any]) -> list[int]:
        index = operator.index
        try:  # fast path: one integer per agent, nothing else
            out = [index(actions[a]) for a in self.possible_agents]
            if len(actions) == self._n and min(out) >= 0 and max(out) < self._n_actions:
                return out
        except (KeyError, TypeError):
            pass
        return self._parse_slowly(actions)

    def _parse_slowly(self, actions: Mapping[str, Any]) -> list[int]:
        """Same result as the fast path where that succeeds; otherwise a clear error."""
        if not isinstance(actions, Mapping):
            raise WrongTypeError(f"actions must be a dict of agent -> action, got {type(actions).__name__}")
        unknown = sorted(set(actions) - self._agent_set, key=str)
        if unknown:
            raise InvalidDataError(f"actions for agents not in the game: {unknown}; agents: {self.agents}")
        ready = self._macros.done if self._macros else [True] * len(self.possible_agents)
        need = [a for a, r in zip(self.possible_agents, ready, strict=True) if r and a not in actions]
        if need:
            raise InvalidDataError(
                f"no action for {need}; every agent needs one each step"
                + (" unless its macro is still running" if self._macros else "")
            )
        n = len(self.action_names)
        out = []
        for agent in self.possible_agents:
            action = actions.get(agent, 0)  # absent only while its macro runs: ignored anyway
            try:
                action = operator.index(action)
            except TypeError:
                raise WrongTypeError(f"action for {agent} must be an integer, got {action!r}") from None
            if not 0 <= action < n:
                raise InvalidDataError(
                    f"action {action} for {agent} out of range 0..{n - 1} ({', '.join(self.action_names)})"
                )
            out.append(action)
        return out

    def _fresh_observations(self) -> list[Obs]:
        if self._vector_obs:
            states = self._kitchen.entity_states()
            if states != self._last_states:  # e.g. everyone bumped into a wall: nothing to redo
                self._last_states = states
                obs = self._observer.observe_one(states)  # read-only
                self._last_obs = [obs[a] for a in self._agent_range]  # faster than list(obs)
            return self._last_obs
        views = self._get_painter().views(self._kitchen, self.config.obs_radius)
        for view in views:
            view.flags.writeable = False
        return views

    def _infos(self) -> dict[str, dict[str, Any]]:
        blockers, blocked = self._blocker_names, self._kitchen.blocked_by
        macros = self._macros
        if not macros:  # primitive actions: the action is the caller's own; only collisions to report
            return {
                name: {"collided_with": blockers[b]}
                for name, b in zip(self.possible_agents, blocked, strict=False)
            }
        return {
            name: {
                "macro": c,
                "macro_done": d,
                "macro_timed_out": t,
                "primitive_action": p,
                "collided_with": blockers[b],
            }
            for name, c, d, t, p, b in zip(
                self.possible_agents,
                macros.current,
                macros.done,
                macros.timed_out,
                macros.primitive,
                blocked,
                strict=False,  # all n_agents long
            )
        }

    # ------------------------------------------------------------------ views of the state
    def state(self) -> np.ndarray:
        """Global state for centralised critics: the observation layout with nothing hidden."""
        return self._global.observe_from(np.array(self._kitchen.entity_states()), 0)

    def describe(self) -> dict[str, Any]:
        """Named entities, positions, holdings, chop progress: see ``describe.describe``."""
        return describe(self._kitchen, self.recipe, self._t, self.config.max_steps, self._macros)

    def features(self) -> dict[str, np.ndarray]:
        """The same facts as ``describe`` as arrays (entities in ``entity_names`` order)."""
        return {**{key: value[0] for key, value in features([self._kitchen]).items()},
                "step": np.asarray(self._t)}

    def render(self) -> np.ndarray | str | None:
        if self.render_mode is None:
            warnings.warn(
                "render() called with render_mode=None; pass render_mode to the constructor", stacklevel=2
            )
            return None
        if self.render_mode == "rgb_array":
            return self.rgb_frame()
        text = ansi(
            self._kitchen,
            f"layout {self.layout.name}  recipe {self.recipe.name}  step {self._t}/{self.config.max_steps}",
        )
        if self.render_mode == "ansi":
            return text
        print(text)
        return None

    def rgb_frame(self) -> np.ndarray:
        """The current frame whatever ``render_mode`` is (videos of training runs need this)."""
        return self._get_painter().frame(self._kitchen)

    def _get_painter(self) -> Painter:
        if self._painter is None:
            self._painter = Painter(self.layout, self.config.cell_px)
        return self._painter

    def close(self) -> None:
        """Nothing to release; present because the API expects it next to ``render``."""


parallel_env = OvercookedParallelEnv  # PettingZoo's name for the constructor, with its signature


def env(**kwargs: Any) -> AECEnv:
    """The AEC version (same arguments as ``parallel_env``), through PettingZoo's own conversion.

    Args:
        **kwargs: settings of ``OvercookedParallelEnv``.

    Returns:
        A new AEC env.
    """
    return parallel_to_aec(OvercookedParallelEnv(**kwargs))

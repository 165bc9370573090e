"""Scripted teams that do NOT cook, and noise on any team: the foils a shaped reward is checked against.

``ScriptedChef`` (``envs.overcooked.scripted``) delivers the dish; the teams here are what a
gamed reward can pay instead:

- ``HoldAndWait``: each agent fetches one item (by default agent 0 the lettuce, agent 1 the
  tomato, agent 2 plate 1, as ``rlkit/m3hf/examples/good.yaml`` assigns them), steps two cells
  back from where the item lay (so it does not block the counter for another agent) and then
  stands still holding it until the episode ends;
- ``StandStill``: every agent stays where it starts;
- ``NeverDeliver(team, env)``: ``team`` with every "deliver" replaced by "stay" (around
  ``ScriptedChef``: the dish is cooked and plated, and its carrier waits with it by the window).

``Noisy(team, env, epsilon, rng)`` replaces each decision of an agent whose macro is done with a
uniformly random macro with probability ``epsilon``. The game itself has no randomness, so the
noise is what makes episodes differ from one seed to the next. All teams are ``video.Policy``s:
``actions = team(obs, infos)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from envs.overcooked.layouts import DIRECTIONS, FLOOR
from envs.overcooked.parallel import OvercookedParallelEnv
from rlkit.errors import ConfigError

Team = Callable[[dict[str, Any], dict[str, dict[str, Any]]], dict[str, int]]
#: what each agent of ``HoldAndWait`` fetches on map A (the good script's assignment)
HOLD_ITEMS = {"agent_0": "lettuce", "agent_1": "tomato", "agent_2": "plate_1"}
STEPS_BACK = 2  # cells a holder moves away from its item's counter, clearing the way to others' items


def _macro_env(env: OvercookedParallelEnv, name: str) -> dict[str, int]:
    if env.config.macro_actions is False:
        raise ConfigError(f"{name} plays macro actions; make the env with macro_actions=True")
    return {action: i for i, action in enumerate(env.action_names)}


class HoldAndWait:
    """Each agent gets its item, steps back ``STEPS_BACK`` cells, then stays holding it
    (``items``: agent name -> item name)."""

    def __init__(self, env: OvercookedParallelEnv, items: Mapping[str, str] = HOLD_ITEMS) -> None:
        self.env, self._index = env, _macro_env(env, "HoldAndWait")
        unknown = sorted(set(items) - set(env.possible_agents))
        if unknown:
            raise ConfigError(f"items: unknown agents {unknown}; agents: {env.possible_agents}")
        self.items = dict(items)
        self._moves = dict(zip(DIRECTIONS, ("right", "down", "left", "up"), strict=True))
        self._stepped: dict[str, int] = {}

    def __call__(self, obs: dict[str, Any], infos: dict[str, dict[str, Any]]) -> dict[str, int]:
        """Fetch while empty-handed, then steps away from the item's counter, then ``stay``."""
        entities = self.env.describe()["entities"]
        actions = {}
        for a in self.env.possible_agents:
            macro = "stay"
            if a in self.items and entities[a]["holding"] is None:
                macro = f"get {self.items[a].replace('_', ' ')}"
                self._counter = {**getattr(self, "_counter", {}), a: tuple(entities[self.items[a]]["pos"])}
            elif a in self.items and self._stepped.get(a, 0) < STEPS_BACK:
                self._stepped[a] = self._stepped.get(a, 0) + 1
                macro = self._away(a, entities)
            actions[a] = self._index[macro]
        return actions

    def _away(self, a: str, entities: dict[str, Any]) -> str:
        """The move away from the counter the item lay on, if the cell beyond the agent is free floor."""
        (r, c), (cr, cc) = entities[a]["pos"], self._counter.get(a, entities[a]["pos"])
        step = (int(np.sign(r - cr)), int(np.sign(c - cc)))
        cell = (r + step[0], c + step[1])
        taken = {tuple(entities[b]["pos"]) for b in self.env.possible_agents}
        layout = self.env.layout
        free = step in self._moves and layout.kinds[layout.cell(*cell)] == FLOOR and cell not in taken
        return self._moves[step] if free else "stay"


class StandStill:
    """Every agent chooses ``stay`` at every step."""

    def __init__(self, env: OvercookedParallelEnv) -> None:
        self.env, self._stay = env, _macro_env(env, "StandStill")["stay"]

    def __call__(self, obs: dict[str, Any], infos: dict[str, dict[str, Any]]) -> dict[str, int]:
        return dict.fromkeys(self.env.possible_agents, self._stay)


class NeverDeliver:
    """``team``'s actions with "deliver" replaced by "stay"."""

    def __init__(self, team: Team, env: OvercookedParallelEnv) -> None:
        index = _macro_env(env, "NeverDeliver")
        self.team, self._deliver, self._stay = team, index["deliver"], index["stay"]

    def __call__(self, obs: dict[str, Any], infos: dict[str, dict[str, Any]]) -> dict[str, int]:
        actions = self.team(obs, infos)
        return {a: self._stay if action == self._deliver else action for a, action in actions.items()}


class Noisy:
    """``team``'s actions, each ready agent's replaced by a random macro with probability ``epsilon``."""

    def __init__(
        self, team: Team, env: OvercookedParallelEnv, epsilon: float, rng: np.random.Generator
    ) -> None:
        if not 0.0 <= epsilon <= 1.0:
            raise ConfigError(f"epsilon must be in [0, 1], got {epsilon!r}")
        self.team, self.env, self.epsilon, self.rng = team, env, float(epsilon), rng
        self._n_actions = len(env.action_names)

    def __call__(self, obs: dict[str, Any], infos: dict[str, dict[str, Any]]) -> dict[str, int]:
        """The team decides first (it may keep state), then the noise is drawn agent by agent."""
        actions = self.team(obs, infos)
        for a in self.env.possible_agents:  # a fixed order: the same seed gives the same episode
            if infos[a]["macro_done"] and self.rng.random() < self.epsilon:
                actions[a] = int(self.rng.integers(self._n_actions))
        return actions

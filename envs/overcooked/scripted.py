"""A scripted macro-action team that cooks any recipe on any map.

It exists to prove the game is solvable as ported (tests run it on every layout and recipe)
and to make demo videos. It reads only ``describe()``: fetch needed foods to free knives,
chop, bring a plate to the chopped foods, deliver; on the split maps (B, C) items cross the
middle counter with "go to counter". Agents with nothing to do step aside when in the way.
"""

from __future__ import annotations

from typing import Any

from envs.overcooked.layouts import DIRECTIONS, FLOOR, FOODS
from envs.overcooked.navigation import get_navigation
from envs.overcooked.parallel import OvercookedParallelEnv
from rlkit.errors import ConfigError

Pos = tuple[int, int]
PLATES = ("plate_1", "plate_2")
KNIVES = ("knife_1", "knife_2")


class ScriptedChef:
    """``actions = chef(obs, infos)`` each step (a ``video.Policy``); needs macro actions.

    Args:
        env: the game it plays, made with ``macro_actions=True``; the chef reads its
            ``describe()`` each step.

    Raises:
        ConfigError: when ``env`` plays primitive actions.
    """

    def __init__(self, env: OvercookedParallelEnv) -> None:
        if env.config.macro_actions is False:
            raise ConfigError("ScriptedChef plays macro actions; make the env with macro_actions=True")
        self.env = env
        self.layout = env.layout
        self._moves = get_navigation(env.layout).moves
        self._index = {name: i for i, name in enumerate(env.action_names)}

    def __call__(self, obs: dict[str, Any], infos: dict[str, dict[str, Any]]) -> dict[str, int]:
        """Decide from ``describe()``; ``obs`` is unused (the chef sees the whole kitchen)."""
        d = self.env.describe()
        ents = d["entities"]
        agents = self.env.possible_agents
        busy = {a: ents[a]["macro"] for a in agents if not infos[a]["macro_done"]}
        claimed: set[str] = set()  # items and knives some agent is already on its way to
        for a, macro in busy.items():
            self._claim(claimed, a, macro, ents)
        actions = {}
        for a in agents:
            if a in busy:
                actions[a] = 0  # ignored while its macro runs
                continue
            blockers = [b for b in agents if infos[b]["collided_with"] == a]
            macro = self._decide(a, d, claimed) or (self._step_aside(a, d, blockers) if blockers else "stay")
            self._claim(claimed, a, macro, ents)
            actions[a] = self._index[macro]
        return actions

    def _claim(self, claimed: set[str], a: str, macro: str, ents: dict[str, Any]) -> None:
        if macro == "chop":
            claimed.update(k for k in KNIVES if _adjacent(ents[a]["pos"], ents[k]["pos"]))
        elif macro.startswith(("get ", "go to ")):
            claimed.add(macro.removeprefix("get ").removeprefix("go to ").replace(" ", "_"))

    # ------------------------------------------------------------------ decisions
    def _decide(self, a: str, d: dict[str, Any], claimed: set[str]) -> str | None:
        """The next macro for an idle agent, or None when it should wait."""
        ents = d["entities"]
        me = ents[a]
        held = me["holding"]
        knives = [k for k in KNIVES if self._reach(me["pos"], ents[k]["pos"])]
        free = [k for k in knives if ents[k]["holding"] is None and k not in claimed]
        if held in PLATES:
            return self._with_plate(me, ents[held], d, knives, free, claimed)
        if held in FOODS:
            if ents[held]["chopped"]:  # onto a plate: "get plate" puts it there and takes the plate
                plates = [
                    p for p in PLATES if not ents[p]["held_by"] and self._reach(me["pos"], ents[p]["pos"])
                ]
                return f"get {plates[0].replace('_', ' ')}" if plates else None
            if free:
                return f"go to {free[0].replace('_', ' ')}"
            return "go to counter" if not knives else None
        return self._empty_handed(me, d, knives, free, claimed)

    def _with_plate(
        self,
        me: dict[str, Any],
        plate: dict[str, Any],
        d: dict[str, Any],
        knives: list[str],
        free: list[str],
        claimed: set[str],
    ) -> str | None:
        ents, needed = d["entities"], d["recipe_foods"]
        if sorted(plate["contents"]) == sorted(needed):
            return "deliver" if self._reach(me["pos"], ents["delivery"]["pos"]) else "go to counter"
        if not knives:
            return "go to counter"  # the other side of the kitchen collects the foods
        missing = [f for f in needed if f not in plate["contents"]]
        for f in missing:
            food = ents[f]
            if food["chopped"] and food["on"] not in (None, *PLATES) and self._reach(me["pos"], food["pos"]):
                return f"get {f}"
        loose = [f for f in missing if self._fetchable(me, f, ents, claimed)]
        if loose and len(free) == 2:  # nobody else fetches it: park the plate, fetch it myself
            return f"go to {free[0].replace('_', ' ')}"
        return None

    def _empty_handed(
        self, me: dict[str, Any], d: dict[str, Any], knives: list[str], free: list[str], claimed: set[str]
    ) -> str | None:
        ents = d["entities"]
        for k in knives:
            food = ents[k]["holding"]
            if food in FOODS and not ents[food]["chopped"] and k not in claimed:
                return "chop" if _adjacent(me["pos"], ents[k]["pos"]) else f"go to {k.replace('_', ' ')}"
        shared = set(map(tuple, d["shared_counters"]))
        for f in d["recipe_foods"]:
            if self._fetchable(me, f, ents, claimed) and (
                free or (not knives and tuple(ents[f]["pos"]) not in shared)
            ):
                return f"get {f}"  # to a free knife, or (split maps) over to the other side
        if any(ents[p]["held_by"] or p in claimed for p in PLATES):
            return None
        for p in sorted(PLATES, key=lambda p: -len(ents[p]["contents"])):
            if not knives and tuple(ents[p]["pos"]) in shared:
                continue  # already passed over the counter
            if self._reach(me["pos"], ents[p]["pos"]):
                return f"get {p.replace('_', ' ')}"
        return None

    def _fetchable(self, me: dict[str, Any], f: str, ents: dict[str, Any], claimed: set[str]) -> bool:
        """An unchopped food lying on a counter, reachable, that nobody is fetching."""
        food = ents[f]
        return (
            food["on"] == "counter"
            and not food["chopped"]
            and f not in claimed
            and self._reach(me["pos"], food["pos"])
        )

    def _step_aside(self, a: str, d: dict[str, Any], blockers: list[str]) -> str:
        """Move to a free floor cell so a blocked agent can pass, else swap places with it."""
        ents = d["entities"]
        r, c = ents[a]["pos"]
        taken = {tuple(ents[b]["pos"]) for b in self.env.possible_agents}
        moves = list(zip(("right", "down", "left", "up"), DIRECTIONS, strict=True))
        for name, (dr, dc) in moves:
            cell = (r + dr, c + dc)
            if self.layout.kinds[self.layout.cell(*cell)] == FLOOR and cell not in taken:
                return name
        for name, (dr, dc) in moves:
            if (r + dr, c + dc) == tuple(ents[blockers[0]]["pos"]):
                return name  # two agents stepping into each other's cells swap
        return "stay"

    def _reach(self, start: Pos, target: Pos) -> bool:
        return self._moves[self.layout.cell(*target)][self.layout.cell(*start)] > 0


def _adjacent(p: Pos, q: Pos) -> bool:
    return abs(p[0] - q[0]) + abs(p[1] - q[1]) == 1


def run_scripted(env: OvercookedParallelEnv) -> tuple[float, int, bool]:
    """Play one episode with ``ScriptedChef``: (team return, steps, delivered)."""
    chef = ScriptedChef(env)
    obs, infos = env.reset()
    total, steps = 0.0, 0
    while env.agents:
        obs, rewards, terminated, _, infos = env.step(chef(obs, infos))
        total += rewards[env.possible_agents[0]]
        steps += 1
        if any(terminated.values()):
            return total, steps, True
    return total, steps, False

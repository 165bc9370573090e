"""Macro actions: each agent's current macro becomes one primitive action per step.

Semantics follow the reference (see ``README.md``): navigation macros walk a shortest path
(other agents passable) and end with the one move into their target; a new macro is accepted
only once the running one has finished. Unlike the reference, every macro is bounded by a
timeout, and "go to counter" works.
"""

from __future__ import annotations

from envs.overcooked.kitchen import CHOPS_NEEDED, Kitchen
from envs.overcooked.layouts import FLOOR, KNIFE, N_FOODS, PLATE_1, PLATE_2, STAY, Layout
from envs.overcooked.navigation import get_navigation

STAY_MACRO, GET, GO_TO_KNIFE, DELIVER, CHOP, GO_TO_COUNTER, MOVE = range(7)
_CHECK_AFTER = frozenset((GET, CHOP))  # kinds whose end shows only after the step


def macro_catalogue(layout: Layout) -> tuple[tuple[str, int, int], ...]:
    """(name, kind, argument) per macro index, in the reference's order for the map."""
    k1, k2 = layout.knives
    macros = [
        ("stay", STAY_MACRO, 0),
        ("get tomato", GET, 0),
        ("get lettuce", GET, 1),
        ("get onion", GET, 2),
        ("get plate 1", GET, PLATE_1),
        ("get plate 2", GET, PLATE_2),
        ("go to knife 1", GO_TO_KNIFE, k1),
        ("go to knife 2", GO_TO_KNIFE, k2),
        ("deliver", DELIVER, layout.delivery),
        ("chop", CHOP, 0),
    ]
    if layout.counter_targets:
        macros.append(("go to counter", GO_TO_COUNTER, 0))
    macros += [("right", MOVE, 0), ("down", MOVE, 1), ("left", MOVE, 2), ("up", MOVE, 3)]
    return tuple(macros)


class MacroController:
    """Runs one macro per agent over a ``Kitchen``; ``done[a]`` says agent a may start a new one."""

    def __init__(self, kitchen: Kitchen, timeout: int) -> None:
        layout = kitchen.layout
        self.kitchen = kitchen
        self.timeout = timeout
        self.catalogue = macro_catalogue(layout)
        self._kind = [kind for _, kind, _ in self.catalogue]
        self._arg = [arg for _, _, arg in self.catalogue]
        self._nav = get_navigation(layout).first_moves
        self._nbr = layout.neighbours
        self._cell_kind = layout.kinds
        self._counters = layout.counter_targets
        # A macro move never interacts: into anything but floor it stays.
        self._move = [
            tuple(d if n >= 0 and layout.kinds[n] == FLOOR else STAY for d, n in enumerate(nbrs))
            for nbrs in layout.neighbours
        ]
        self._agent_cell = kitchen.agent_cell  # the kitchen resets its lists in place
        self.reset()

    def reset(self) -> None:
        n = self.kitchen.n_agents
        self.current = [-1] * n  # macro each agent is running, -1 before the first
        self.done = [True] * n  # finished this step: ready for a new macro, observation refreshes
        self._no_timeouts = (False,) * n
        self.timed_out: list[bool] | tuple[bool, ...] = self._no_timeouts
        self.primitive = [STAY] * n  # primitive actions of the last step
        self._age = [0] * n
        self._chop_moves = [0] * n
        self._chop_knife = [-1] * n

    def step(self, macros: list[int]) -> float:
        """Start new macros where the old ones finished, take one primitive step, return the reward."""
        n = self.kitchen.n_agents
        current, done = self.current, self.done
        kinds, args, agent_cell = self._kind, self._arg, self._agent_cell
        finishing = [True] * n
        primitive = [STAY] * n
        for a in range(n):
            if done[a]:
                current[a] = macro = macros[a]
                self._age[a] = self._chop_moves[a] = 0
            else:
                macro = current[a]
            kind = kinds[macro]
            if kind == MOVE:
                primitive[a] = self._move[agent_cell[a]][args[macro]]
            elif kind != STAY_MACRO:
                primitive[a], finishing[a] = self._plan(a, kind, args[macro])
        reward = self.kitchen.step(primitive)
        self.primitive = primitive
        if all(finishing):  # the common case: nothing left running
            self.done = finishing
            self.timed_out = self._no_timeouts
            return reward
        timed_out = [False] * n
        age = self._age
        for a in range(n):
            if finishing[a]:
                continue
            age[a] += 1
            if kinds[current[a]] in _CHECK_AFTER and self._reached(a, current[a]):
                finishing[a] = True
            elif age[a] >= self.timeout:
                finishing[a] = timed_out[a] = True
        self.done = finishing
        self.timed_out = timed_out
        return reward

    def _plan(self, a: int, kind: int, arg: int) -> tuple[int, bool]:
        """This step's primitive action for a navigating or chopping macro, and whether it ends it."""
        kitchen = self.kitchen
        cell = self._agent_cell[a]
        if kind == CHOP:
            return self._plan_chop(a, cell)
        if kind == GET:
            if arg < N_FOODS and kitchen.in_plate[arg] >= 0:
                return STAY, True  # on a plate: "get plate" is the way to move it
            target = kitchen.item_cell[arg]
            if target < 0:
                return STAY, True  # held by an agent
        elif kind == GO_TO_COUNTER:
            target = next((c for c in self._counters if kitchen.cell_item[c] < 0), -1)
            if target < 0:
                return STAY, True
        else:
            target = arg
        moves = self._nav[target][cell]
        if not moves:
            return STAY, True  # unreachable from this side of the kitchen
        move = moves[0]
        if len(moves) > 1:  # among equally short paths prefer a first cell nobody stands on
            cell_agent = kitchen.cell_agent
            move = next((m for m in moves if cell_agent[self._nbr[cell][m]] < 0), move)
        if self._nbr[cell][move] != target:
            return move, False
        return self._arrive(a, kind, arg, target, move)

    def _arrive(self, a: int, kind: int, arg: int, target: int, move: int) -> tuple[int, bool]:
        """Next to the target: the one move into it, or stay where that move would be wrong."""
        kitchen = self.kitchen
        hand = kitchen.hand[a]
        if kind == GO_TO_KNIFE and hand < 0:
            return STAY, True  # empty-handed it only walks up to the knife; "chop" follows
        if kind == GET:
            if arg < N_FOODS:
                if self._cell_kind[target] == KNIFE and kitchen.chops[arg] < CHOPS_NEEDED:
                    return STAY, True  # moving in would chop it, not get it
            elif 0 <= hand < N_FOODS:
                if kitchen.chops[hand] < CHOPS_NEEDED:
                    return STAY, True
                return move, False  # food onto the plate now, the plate into the hand next
        return move, True

    def _plan_chop(self, a: int, cell: int) -> tuple[int, bool]:
        kitchen = self.kitchen
        for d, knife in enumerate(self._nbr[cell]):
            if self._cell_kind[knife] != KNIFE:
                continue
            food = kitchen.cell_item[knife]
            if 0 <= food < N_FOODS and kitchen.chops[food] < CHOPS_NEEDED:
                self._chop_moves[a] += 1
                self._chop_knife[a] = knife
                return d, False
        return STAY, True

    def _reached(self, a: int, macro: int) -> bool:
        """Finish conditions known only after the step: chopping done, or the plate in hand."""
        kind = self._kind[macro]
        kitchen = self.kitchen
        if kind == CHOP:
            food = kitchen.cell_item[self._chop_knife[a]]
            unchopped = 0 <= food < N_FOODS and kitchen.chops[food] < CHOPS_NEEDED
            return self._chop_moves[a] >= CHOPS_NEEDED or not unchopped
        return kind == GET and kitchen.hand[a] == self._arg[macro]

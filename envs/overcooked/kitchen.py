"""The game rules: one primitive step of every agent on one kitchen.

State lives in plain Python lists of small ints (cells, item ids), because a step touches a few
entries and list indexing is the cheapest thing CPython does. Items: 0 tomato, 1 lettuce,
2 onion, 3 plate 1, 4 plate 2. Rules follow the reference (see ``README.md`` for the table):
moving into a non-floor cell picks up, puts down, chops, combines on a plate or delivers.
"""

from __future__ import annotations

from envs.overcooked.config import Rewards
from envs.overcooked.layouts import DELIVERY, KNIFE, N_FOODS, STAY, Layout
from envs.overcooked.recipes import Recipe
from rlkit.errors import StateError

CHOPS_NEEDED = 3


class Kitchen:
    """One game's mutable state and its primitive-step rules."""

    def __init__(self, layout: Layout, recipe: Recipe, rewards: Rewards) -> None:
        self.layout = layout
        self.n_agents = len(layout.agent_starts)
        self.recipe_mask = recipe.mask
        self._kinds = layout.kinds
        self._nbr = layout.neighbours
        self._respawn_order = layout.respawn_order
        self._static = (*layout.knives, layout.delivery)
        self._item_ids = tuple(range(len(layout.item_starts)))
        self._r_chop = rewards.chop
        self._r_correct = rewards.correct_delivery
        self._r_wrong = rewards.wrong_delivery
        self._r_step = rewards.step
        n_items = len(layout.item_starts)
        # Allocated once and reset in place, so a controller may keep references to them.
        self.agent_cell = [0] * self.n_agents
        self.cell_agent = [-1] * layout.n_cells
        self.hand = [-1] * self.n_agents  # item held, -1 none
        self.item_cell = [0] * n_items  # -1 while held or on a plate
        self.holder = [-1] * n_items
        self.in_plate = [-1] * n_items  # foods only: the plate holding it
        self.contents = [0] * n_items  # plates only: bit mask of foods on it
        self.chops = [0] * N_FOODS
        self.cell_item = [-1] * layout.n_cells  # top item on a counter or knife
        self.blocked_by = [-1] * self.n_agents  # agent that blocked each agent's move this step
        self.reset()

    def reset(self) -> None:
        layout = self.layout
        self.agent_cell[:] = layout.agent_starts
        self.cell_agent[:] = [-1] * layout.n_cells
        for a, cell in enumerate(self.agent_cell):
            self.cell_agent[cell] = a
        self.hand[:] = [-1] * self.n_agents
        self.item_cell[:] = layout.item_starts
        self.holder[:] = [-1] * len(self.holder)
        self.in_plate[:] = [-1] * len(self.in_plate)
        self.contents[:] = [0] * len(self.contents)
        self.chops[:] = [0] * N_FOODS
        self.cell_item[:] = [-1] * layout.n_cells
        for i, cell in enumerate(self.item_cell):
            self.cell_item[cell] = i
        self.blocked_by[:] = [-1] * self.n_agents
        self.delivered = False
        self.reward = 0.0

    # ------------------------------------------------------------------ queries
    def item_pos(self, item: int) -> int:
        """Cell an item occupies for observers: a plated food takes its plate's, a held item its holder's."""
        plate = self.in_plate[item]
        if plate >= 0:
            item = plate
        cell = self.item_cell[item]
        return cell if cell >= 0 else self.agent_cell[self.holder[item]]

    def entity_states(self) -> list[int]:
        """Observation order: foods as ``cell * 4 + chops``, then plates, knives, delivery, agents."""
        item_cell, in_plate, agent_cell, holder = self.item_cell, self.in_plate, self.agent_cell, self.holder
        out = []
        for item in self._item_ids:  # item_pos, inlined: this runs every step
            top = in_plate[item]
            if top < 0:
                top = item
            cell = item_cell[top]
            out.append(cell if cell >= 0 else agent_cell[holder[top]])
        chops = self.chops
        out[0] = out[0] * 4 + chops[0]
        out[1] = out[1] * 4 + chops[1]
        out[2] = out[2] * 4 + chops[2]
        out += self._static
        out += agent_cell
        return out

    # ------------------------------------------------------------------ the step
    def step(self, actions: list[int]) -> float:
        """Apply one primitive action per agent (0-3 move, 4 stay); return the team reward.

        Agents act in index order. A move into a floor cell held by an agent that has not acted
        yet waits for it; two agents stepping into each other's cells swap (as the reference
        does); a move into an agent that has acted is blocked and recorded in ``blocked_by``.
        """
        self.reward = self._r_step
        n = self.n_agents
        self.blocked_by[:] = [-1] * n
        acted = [d == STAY for d in actions]
        pending = [a for a in range(n) if not acted[a] and not self._act(a, actions, acted)]
        while pending:
            waiting = [a for a in pending if not acted[a] and not self._act(a, actions, acted)]
            if len(waiting) == len(pending):
                # Cannot happen with up to 3 agents: facing pairs swap, and any longer cycle of
                # waits on a grid needs at least 4 agents.
                raise StateError(f"agents {waiting} wait on each other in a cycle")
            pending = waiting
        return self.reward

    def _act(self, a: int, actions: list[int], acted: list[bool]) -> bool:
        """One agent's action; False (nothing done) when it must wait for the agent in its way."""
        acted[a] = True
        d = actions[a]
        cell = self.agent_cell[a]
        target = self._nbr[cell][d]
        kind = self._kinds[target]
        if kind:
            self._interact(a, target, kind)
            return True
        other = self.cell_agent[target]
        if other < 0:
            self.cell_agent[cell] = -1
            self.cell_agent[target] = a
            self.agent_cell[a] = target
            return True
        if acted[other]:
            self.blocked_by[a] = other
            return True
        d_other = actions[other]
        if d_other != STAY and self._nbr[target][d_other] == cell:
            self.agent_cell[a], self.agent_cell[other] = target, cell
            self.cell_agent[target], self.cell_agent[cell] = a, other
            acted[other] = True
            return True
        acted[a] = False
        return False

    def _interact(self, a: int, target: int, kind: int) -> None:
        hand = self.hand[a]
        if kind == DELIVERY:
            if hand >= 0:
                self._deliver(a, hand, target)
            return
        top = self.cell_item[target]
        if hand < 0:
            if top < 0:
                return
            if kind == KNIFE and top < N_FOODS and self.chops[top] < CHOPS_NEEDED:
                self.chops[top] += 1
                if self.chops[top] == CHOPS_NEEDED and self.recipe_mask >> top & 1:
                    self.reward += self._r_chop
                return
            self._pick_up(a, top, target)
        elif top < 0:
            self.cell_item[target] = hand
            self.item_cell[hand] = target
            self.holder[hand] = -1
            self.hand[a] = -1
        elif hand >= N_FOODS:  # a plate in hand takes a chopped food from the cell
            if top < N_FOODS and self.chops[top] == CHOPS_NEEDED:
                self.cell_item[target] = -1
                self.item_cell[top] = -1
                self._plate(top, hand)
        elif top >= N_FOODS and self.chops[hand] == CHOPS_NEEDED:  # chopped food onto a plate
            self.hand[a] = -1
            self.holder[hand] = -1
            self._plate(hand, top)
            if kind == KNIFE:  # the reference hands over a plate sitting on a knife
                self._pick_up(a, top, target)

    def _pick_up(self, a: int, item: int, cell: int) -> None:
        self.cell_item[cell] = -1
        self.item_cell[item] = -1
        self.holder[item] = a
        self.hand[a] = item

    def _plate(self, food: int, plate: int) -> None:
        self.in_plate[food] = plate
        self.contents[plate] |= 1 << food

    def _deliver(self, a: int, item: int, cell: int) -> None:
        self.hand[a] = -1
        self.holder[item] = -1
        if item >= N_FOODS and self.contents[item] == self.recipe_mask:
            self.item_cell[item] = cell  # the dish rests on the delivery cell; the episode ends
            self.cell_item[cell] = item
            self.reward += self._r_correct
            self.delivered = True
            return
        self.reward += self._r_wrong
        if item >= N_FOODS:
            mask, self.contents[item] = self.contents[item], 0
            self._respawn(item)
            for food in range(N_FOODS):
                if mask >> food & 1:
                    self.in_plate[food] = -1
                    self._respawn(food)
        else:
            self._respawn(item)

    def _respawn(self, item: int) -> None:
        """A wrongly delivered item goes back to its start (or the nearest free counter), unchopped."""
        if item < N_FOODS:
            self.chops[item] = 0
        cell_item = self.cell_item
        for cell in self._respawn_order[item]:
            if cell_item[cell] < 0:
                break
        cell_item[cell] = item
        self.item_cell[item] = cell

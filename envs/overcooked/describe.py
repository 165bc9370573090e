"""The kitchen describing itself by name, for reward templates and feedback prompts.

Reward templates (distance between entities, holding an item, an item chopped, ...) and an
LLM prompt need entities by name, not by offset in the observation vector. ``describe``
gives a JSON-ready dict; ``features`` the same facts as arrays over a batch of games, entities
in observation order (``entity_names``), for templates evaluated on many games at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envs.overcooked.kitchen import CHOPS_NEEDED, Kitchen
from envs.overcooked.layouts import COUNTER, FOODS, ITEMS, KNIFE, N_FOODS
from envs.overcooked.macro import MacroController
from envs.overcooked.recipes import Recipe
from envs.overcooked.render import AGENT_COLOUR_NAMES


def entity_names(n_agents: int) -> tuple[str, ...]:
    """Entities in observation order."""
    return (*ITEMS, "knife_1", "knife_2", "delivery", *(f"agent_{a}" for a in range(n_agents)))


def describe(
    kitchen: Kitchen, recipe: Recipe, step: int, max_steps: int, macros: MacroController | None
) -> dict[str, Any]:
    layout = kitchen.layout
    xy = layout.xy
    cell_names = {cell: f"knife_{i + 1}" for i, cell in enumerate(layout.knives)}
    cell_names[layout.delivery] = "delivery"

    def name(item: int) -> str | None:
        return None if item < 0 else ITEMS[item]

    def place(item: int) -> str | None:
        if item < N_FOODS and kitchen.in_plate[item] >= 0:
            return ITEMS[kitchen.in_plate[item]]
        cell = kitchen.item_cell[item]
        return None if cell < 0 else cell_names.get(cell, "counter")

    entities: dict[str, dict[str, Any]] = {}
    for a, cell in enumerate(kitchen.agent_cell):
        entities[f"agent_{a}"] = {
            "kind": "agent",
            "pos": xy(cell),
            "colour": AGENT_COLOUR_NAMES[a],
            "holding": name(kitchen.hand[a]),
            "macro": macros.catalogue[macros.current[a]][0] if macros and macros.current[a] >= 0 else None,
            "macro_done": macros.done[a] if macros else True,
        }
    for f in range(N_FOODS):
        holder = kitchen.holder[f]
        entities[FOODS[f]] = {
            "kind": "ingredient",
            "pos": xy(kitchen.item_pos(f)),
            "chops": kitchen.chops[f],
            "chop_progress": kitchen.chops[f] / CHOPS_NEEDED,
            "chopped": kitchen.chops[f] == CHOPS_NEEDED,
            "in_recipe": bool(recipe.mask >> f & 1),
            "held_by": f"agent_{holder}" if holder >= 0 else None,
            "on": place(f),
        }
    for p in range(N_FOODS, len(ITEMS)):
        holder = kitchen.holder[p]
        entities[ITEMS[p]] = {
            "kind": "plate",
            "pos": xy(kitchen.item_pos(p)),
            "contents": [FOODS[f] for f in range(N_FOODS) if kitchen.contents[p] >> f & 1],
            "held_by": f"agent_{holder}" if holder >= 0 else None,
            "on": place(p),
        }
    for cell, cell_name in cell_names.items():
        entities[cell_name] = {
            "kind": "knife" if layout.kinds[cell] == KNIFE else "delivery",
            "pos": xy(cell),
            "holding": name(kitchen.cell_item[cell]),
        }
    counters = [
        {"pos": xy(cell), "holding": name(kitchen.cell_item[cell])}
        for cell, kind in enumerate(layout.kinds)
        if kind == COUNTER
    ]
    return {
        "layout": layout.name,
        "grid": {"height": layout.height, "width": layout.width},
        "recipe": recipe.name,
        "recipe_foods": [FOODS[f] for f in recipe.foods],
        "step": step,
        "max_steps": max_steps,
        "delivered": kitchen.delivered,
        "entities": entities,
        "counters": counters,
        "shared_counters": [xy(c) for c in layout.counter_targets],
    }


def features(kitchens: list[Kitchen]) -> dict[str, np.ndarray]:
    """Arrays over games: ``positions`` (G, E, 2) row/column of each entity (held items at the
    holder), ``holding`` (G, A) item id per agent (-1 none; ids follow ``layouts.ITEMS``),
    ``chops`` (G, 3) per food, ``plate_contents`` (G, 2, 3) bool, ``delivered`` (G,) bool. The envs add
    ``step`` (G,): the steps taken in each game's episode (1 after its first step)."""
    width = kitchens[0].layout.width
    states = np.array([k.entity_states() for k in kitchens])
    states[:, :N_FOODS] //= CHOPS_NEEDED + 1  # foods carry their chop count in the state
    contents = np.array([k.contents[N_FOODS:] for k in kitchens])
    return {
        "positions": np.stack(np.divmod(states, width), axis=-1),
        "holding": np.array([k.hand for k in kitchens]),
        "chops": np.array([k.chops for k in kitchens]),
        "plate_contents": (contents[:, :, None] >> np.arange(N_FOODS)) & 1 == 1,
        "delivered": np.array([k.delivered for k in kitchens]),
    }

"""Vector observations as one table gather.

Every observation entry is a function of (observer's cell, one entity's state): an entity's
x, y (and chop fraction for foods), or 0 when it lies outside the observer's square. We
tabulate those values once, so the observations of any number of agents and games are
``table[observer_cell, offset + entity_state]`` in a single numpy fancy index.

Layout for 3 agents (32 values): 0-8 tomato, lettuce, onion as (x, y, chop / 3); 9-18 plate 1,
plate 2, knife 1, knife 2, delivery as (x, y); 19-24 agents as (x, y); 25-31 one-hot recipe.
x = row / height, y = column / width.
"""

from __future__ import annotations

from functools import lru_cache
from operator import itemgetter

import numpy as np

from envs.overcooked.kitchen import CHOPS_NEEDED
from envs.overcooked.layouts import N_FOODS, Layout
from envs.overcooked.recipes import RECIPES

N_STATIC = 3  # knife 1, knife 2, delivery


def obs_size(n_agents: int) -> int:
    return 3 * N_FOODS + 2 * (2 + N_STATIC + n_agents) + len(RECIPES)


@lru_cache(maxsize=64)
def get_observer(layout: Layout, n_agents: int, radius: int, recipe_index: int) -> VectorObserver:
    """Observers are immutable tables: share one per configuration."""
    return VectorObserver(layout, n_agents, radius, recipe_index)


class VectorObserver:
    """Builds observations from ``Kitchen.entity_states()`` rows; one instance per game config."""

    def __init__(self, layout: Layout, n_agents: int, radius: int, recipe_index: int) -> None:
        self.n_agents = n_agents
        self.size = obs_size(n_agents)
        n = layout.n_cells
        food_states = n * (CHOPS_NEEDED + 1)
        rows, cols = np.divmod(np.arange(n), layout.width)
        x, y = rows / layout.height, cols / layout.width
        if radius > 0:
            visible = (np.abs(rows[:, None] - rows[None, :]) <= radius) & (
                np.abs(cols[:, None] - cols[None, :]) <= radius
            )
        else:
            visible = np.ones((n, n), dtype=bool)
        food_visible = np.repeat(visible, CHOPS_NEEDED + 1, axis=1)  # [observer, cell*4+chop]
        chop_fraction = np.tile(np.arange(CHOPS_NEEDED + 1) / CHOPS_NEEDED, n)
        # Column blocks of the table: food x, food y, food chop, x, y, then blocks of constant 1
        # and 0 wide enough that the recipe columns can add any food state to their offset.
        table = np.concatenate(
            [
                food_visible * np.repeat(x, CHOPS_NEEDED + 1),
                food_visible * np.repeat(y, CHOPS_NEEDED + 1),
                food_visible * chop_fraction,
                visible * x,
                visible * y,
                np.ones((n, food_states)),
                np.zeros((n, food_states)),
            ],
            axis=1,
        ).astype(np.float32)
        one, zero = 3 * food_states + 2 * n, 4 * food_states + 2 * n
        n_entities = N_FOODS + 2 + N_STATIC + n_agents
        offsets, entity = [], []
        for f in range(N_FOODS):
            offsets += [0, food_states, 2 * food_states]
            entity += [f, f, f]
        for e in range(N_FOODS, n_entities):
            offsets += [3 * food_states, 3 * food_states + n]
            entity += [e, e]
        for r in range(len(RECIPES)):
            offsets.append(one if r == recipe_index else zero)
            entity.append(0)
        self._table = table
        # The same values as float32 bytes per (observer, entity state), for one game at a time:
        # joining a few dozen byte strings beats any numpy call at this size.
        food_cols = np.arange(food_states)[:, None] + np.array([0, 1, 2]) * food_states
        pos_cols = 3 * food_states + np.arange(n)[:, None] + np.array([0, 1]) * n
        self._food_bytes = _chunks(table[:, food_cols], 3)
        self._pos_bytes = _chunks(table[:, pos_cols], 2)
        static = layout.knives + (layout.delivery,)
        self._static_bytes = [b"".join(self._pos_bytes[o][c] for c in static) for o in range(n)]
        self._task_bytes = np.eye(len(RECIPES), dtype=np.float32)[recipe_index].tobytes()
        self._row = np.dtype((np.float32, (self.size,)))  # frombuffer then yields (n_agents, size)
        self._offsets = np.asarray(offsets, dtype=np.intp)
        self._entity = np.asarray(entity, dtype=np.intp)
        self._agents = slice(n_entities - n_agents, n_entities)

    def observe(self, states: np.ndarray) -> np.ndarray:
        """``states``: (..., n_entities) ints from ``entity_states`` -> (..., n_agents, size) float32."""
        codes = self._offsets + states[..., self._entity]
        return self._table[states[..., self._agents, None], codes[..., None, :]]

    def observe_one(self, states: list[int]) -> np.ndarray:
        """One game's observations, (n_agents, size) float32, read-only; equal to ``observe``."""
        parts: list[bytes] = []
        tomato, lettuce, onion, plate_1, plate_2 = states[:5]
        agents = states[5 + N_STATIC :]
        agents_of = itemgetter(*agents)  # n_agents >= 2: returns a tuple
        task = self._task_bytes
        for cell in agents:
            food, pos = self._food_bytes[cell], self._pos_bytes[cell]
            parts += (
                food[tomato],
                food[lettuce],
                food[onion],
                pos[plate_1],
                pos[plate_2],
                self._static_bytes[cell],
            )
            parts += agents_of(pos)
            parts.append(task)
        return np.frombuffer(b"".join(parts), dtype=self._row)

    def observe_from(self, states: np.ndarray, observer_cell: int) -> np.ndarray:
        """The view from one fixed cell (with radius 0, the global state)."""
        return self._table[observer_cell, self._offsets + states[..., self._entity]]


def _chunks(values: np.ndarray, width: int) -> list[list[bytes]]:
    """(observers, states, width) float32 -> per observer, per state, its ``width`` values as bytes."""
    size = width * values.itemsize
    out = []
    for row in values:
        raw = np.ascontiguousarray(row).tobytes()
        out.append([raw[i : i + size] for i in range(0, len(raw), size)])
    return out

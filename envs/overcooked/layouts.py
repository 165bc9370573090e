"""The reference's kitchens (maps A, B, C at 7x7 and 9x9), parsed once into flat cell arrays.

Cells are numbered ``row * width + column`` so the game state is a handful of small ints and
every lookup is a list index. Coordinates follow the reference: x = row, y = column.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from rlkit.errors import ConfigError

FLOOR, COUNTER, KNIFE, DELIVERY = 0, 1, 2, 3
TOMATO, LETTUCE, ONION, PLATE_1, PLATE_2 = 0, 1, 2, 3, 4
FOODS = ("tomato", "lettuce", "onion")
ITEMS = ("tomato", "lettuce", "onion", "plate_1", "plate_2")
N_FOODS = 3
# Primitive actions, in the reference's order: (d_row, d_col) for right, down, left, up; 4 = stay.
DIRECTIONS = ((0, 1), (1, 0), (0, -1), (-1, 0))
ACTION_NAMES = ("right", "down", "left", "up", "stay")
STAY = 4
MAX_AGENTS = 3

# `#` counter, T/L/O food on a counter, P plate on a counter, K knife, D delivery, digit = agent
# start (on floor), `.` floor. Plates and knives are numbered in row-major order.
_MAPS: dict[str, tuple[str, ...]] = {
    "A": ("#####T#", "K.0.1.L", "K.....O", "D.....#", "#.....#", "#.2...P", "#####P#"),
    "B": ("#####T#", "K.0#1.L", "K..#..O", "D..#..#", "#..#..#", "#.2#..P", "#####P#"),
    "C": ("#####T#", "K.0#1.L", "K..#..O", "D..#..#", "#..#..#", "#.2...P", "#####P#"),
    "A9": (
        "#######T#",
        "K.0...1.L",
        "K.......O",
        "D.......#",
        "#.......#",
        "#.......#",
        "#.......#",
        "#.2.....P",
        "#######P#",
    ),
    "B9": (
        "#######T#",
        "K.0.#.1.L",
        "K...#...O",
        "D...#...#",
        "#...#...#",
        "#...#...#",
        "#...#...#",
        "#.2.#...P",
        "#######P#",
    ),
    "C9": (
        "#######T#",
        "K.0.#.1.L",
        "K...#...O",
        "D...#...#",
        "#...#...#",
        "#...#...#",
        "#...#...#",
        "#.2.....P",
        "#######P#",
    ),
}
# "Go to counter" tries these rows of the middle column, in this order (reference values).
_COUNTER_ROWS: dict[str, tuple[int, ...]] = {
    "B": (3, 2, 4, 1, 5),
    "C": (3, 2, 4, 1),
    "B9": (4, 3, 5, 2, 6, 1, 7),
    "C9": (4, 3, 5, 2, 6, 1),
}
LAYOUTS = tuple(_MAPS)


@dataclass(frozen=True)
class Layout:
    """Static facts of one kitchen for a given number of agents."""

    name: str
    height: int
    width: int
    rows: tuple[str, ...]
    kinds: tuple[int, ...]
    neighbours: tuple[tuple[int, int, int, int], ...]
    item_starts: tuple[int, ...]
    knives: tuple[int, ...]
    delivery: int
    agent_starts: tuple[int, ...]
    counter_targets: tuple[int, ...]
    respawn_order: tuple[tuple[int, ...], ...]

    @property
    def n_cells(self) -> int:
        return self.height * self.width

    def xy(self, cell: int) -> tuple[int, int]:
        """(row, column) of a cell index."""
        return divmod(cell, self.width)

    def cell(self, row: int, col: int) -> int:
        return row * self.width + col


def _check_name(name: str) -> str:
    if name not in _MAPS:
        raise ConfigError(f"unknown layout {name!r}; valid layouts: {', '.join(LAYOUTS)}")
    return name


@cache
def get_layout(name: str, n_agents: int) -> Layout:
    """Parse a map once; agents beyond ``n_agents`` are left out (their start becomes floor)."""
    _check_name(name)
    if not 2 <= n_agents <= MAX_AGENTS:
        raise ConfigError(f"n_agents must be 2 or 3, got {n_agents!r}")
    rows = _MAPS[name]
    height, width = len(rows), len(rows[0])
    kinds: list[int] = []
    foods: dict[str, int] = {}
    plates: list[int] = []
    knives: list[int] = []
    delivery = -1
    agents: dict[int, int] = {}
    for r, line in enumerate(rows):
        for c, ch in enumerate(line):
            cell = r * width + c
            if ch == "." or ch.isdigit():
                kinds.append(FLOOR)
                if ch.isdigit():
                    agents[int(ch)] = cell
            elif ch == "K":
                kinds.append(KNIFE)
                knives.append(cell)
            elif ch == "D":
                kinds.append(DELIVERY)
                delivery = cell
            else:
                kinds.append(COUNTER)
                if ch in "TLO":
                    foods[ch] = cell
                elif ch == "P":
                    plates.append(cell)

    def neighbour(r: int, c: int, dr: int, dc: int) -> int:
        return (r + dr) * width + (c + dc) if 0 <= r + dr < height and 0 <= c + dc < width else -1

    right, down, left, up = DIRECTIONS
    neighbours = tuple(
        (neighbour(r, c, *right), neighbour(r, c, *down), neighbour(r, c, *left), neighbour(r, c, *up))
        for r in range(height)
        for c in range(width)
    )
    item_starts = (foods["T"], foods["L"], foods["O"], plates[0], plates[1])
    middle = width // 2
    counter_targets = tuple(r * width + middle for r in _COUNTER_ROWS.get(name, ()))
    return Layout(
        name=name,
        height=height,
        width=width,
        rows=tuple(
            "".join("." if ch.isdigit() and int(ch) >= n_agents else ch for ch in line) for line in rows
        ),
        kinds=tuple(kinds),
        neighbours=neighbours,
        item_starts=item_starts,
        knives=tuple(knives),
        delivery=delivery,
        agent_starts=tuple(agents[i] for i in range(n_agents)),
        counter_targets=counter_targets,
        respawn_order=tuple(_respawn_order(start, kinds, width) for start in item_starts),
    )


def _respawn_order(start: int, kinds: list[int], width: int) -> tuple[int, ...]:
    """Plain counters nearest first from an item's start: where it returns if its start is taken.

    The reference drops a returned item on its start cell even when another item lies there,
    hiding one of them; we take the nearest free counter instead.
    """
    r0, c0 = divmod(start, width)
    counters = [cell for cell, kind in enumerate(kinds) if kind == COUNTER]
    return tuple(sorted(counters, key=lambda cell: (abs(cell // width - r0) + abs(cell % width - c0), cell)))

"""Pictures of a kitchen: flat-colour RGB frames, agents' image views, and a text grid.

Frames are a cached static background plus cached 80x80 tiles for whatever sits on a cell
(keyed by what is drawn), so a frame costs one background copy and a few tile pastes.
Marks: tomato a red disc, lettuce a green square, onion a violet diamond; each chop adds a
white cut across the food; a plate is a white disc holding small copies of its foods; agents
are discs (agent 0 green, 1 rose, 2 blue) with 1-3 white dots for their number and what they
hold drawn small in the lower right.
"""

from __future__ import annotations

import numpy as np

from envs.overcooked.kitchen import CHOPS_NEEDED, Kitchen
from envs.overcooked.layouts import COUNTER, DELIVERY, FLOOR, FOODS, ITEMS, KNIFE, N_FOODS, Layout

AGENT_COLOURS = {"green": (40, 150, 70), "rose": (225, 90, 140), "blue": (50, 100, 220)}
AGENT_COLOUR_NAMES = tuple(AGENT_COLOURS)
_FOOD_COLOURS = ((220, 40, 40), (110, 190, 60), (150, 80, 170))
_FLOOR, _GRID = (232, 226, 214), (205, 198, 184)
_COUNTER, _COUNTER_EDGE = (176, 132, 88), (130, 92, 56)
_BOARD, _BLADE = (110, 110, 110), (225, 225, 235)
_DELIVERY, _DELIVERY_MARK = (250, 200, 40), (110, 70, 0)
_PLATE, _PLATE_RIM = (248, 248, 248), (130, 130, 130)
_WHITE, _OUTLINE = (255, 255, 255), (40, 40, 40)
VOID = (0, 0, 0)  # beyond the map edge in an agent's image view, as the reference pads

# What a cell shows: ("food", f, chops), ("plate", food mask) or None.
Thing = tuple[str, int, int] | None


class Painter:
    """Draws one layout at ``cell_px`` pixels per cell."""

    def __init__(self, layout: Layout, cell_px: int = 80) -> None:
        self.layout = layout
        self.px = cell_px
        yy, xx = np.mgrid[0:cell_px, 0:cell_px]
        self._yy, self._xx = (yy + 0.5) / cell_px, (xx + 0.5) / cell_px  # cell-relative coords
        self._bases = {kind: self._base_tile(kind) for kind in (FLOOR, COUNTER, KNIFE, DELIVERY)}
        h, w = layout.height * cell_px, layout.width * cell_px
        self.background = np.empty((h, w, 3), dtype=np.uint8)
        for cell, kind in enumerate(layout.kinds):
            self._paste(self.background, cell, self._bases[kind])
        self._tiles: dict[tuple, np.ndarray] = {}

    # ------------------------------------------------------------------ frames
    def frame(self, kitchen: Kitchen) -> np.ndarray:
        """The whole kitchen as an (H*px, W*px, 3) uint8 image."""
        out = self.background.copy()
        self.draw(out, kitchen)
        return out

    def draw(self, out: np.ndarray, kitchen: Kitchen) -> None:
        kinds = self.layout.kinds
        for cell, item in enumerate(kitchen.cell_item):
            if item >= 0:
                self._paste(out, cell, self._tile(kinds[cell], _thing(kitchen, item), -1))
        for a, cell in enumerate(kitchen.agent_cell):
            hand = kitchen.hand[a]
            self._paste(out, cell, self._tile(FLOOR, _thing(kitchen, hand) if hand >= 0 else None, a))

    def views(self, kitchen: Kitchen, radius: int) -> list[np.ndarray]:
        """Each agent's image observation: the (2r+1)-cell square around it, padded with black."""
        if radius == 0:
            frame = self.frame(kitchen)
            return [frame.copy() for _ in kitchen.agent_cell]
        px, pad = self.px, radius * self.px
        h, w = self.background.shape[:2]
        canvas = np.zeros((h + 2 * pad, w + 2 * pad, 3), dtype=np.uint8)
        inner = canvas[pad : pad + h, pad : pad + w]
        inner[...] = self.background
        self.draw(inner, kitchen)
        side = (2 * radius + 1) * px
        views = []
        for cell in kitchen.agent_cell:
            r, c = self.layout.xy(cell)
            views.append(canvas[r * px : r * px + side, c * px : c * px + side].copy())
        return views

    # ------------------------------------------------------------------ tiles
    def _paste(self, out: np.ndarray, cell: int, tile: np.ndarray) -> None:
        r, c = self.layout.xy(cell)
        px = self.px
        out[r * px : (r + 1) * px, c * px : (c + 1) * px] = tile

    def _tile(self, kind: int, thing: Thing, agent: int) -> np.ndarray:
        key = (kind, thing, agent)
        tile = self._tiles.get(key)
        if tile is None:
            tile = self._bases[kind].copy()
            if agent >= 0:
                self._disc(tile, 0.5, 0.5, 0.38, _OUTLINE)
                self._disc(tile, 0.5, 0.5, 0.35, AGENT_COLOURS[AGENT_COLOUR_NAMES[agent]])
                for i in range(agent + 1):
                    self._disc(tile, 0.3, 0.5 + (i - agent / 2) * 0.13, 0.05, _WHITE)
                if thing is not None:
                    self._thing(tile, thing, 0.66, 0.66, 0.62)
            elif thing is not None:
                self._thing(tile, thing, 0.5, 0.5, 1.0)
            self._tiles[key] = tile
        return tile

    def _base_tile(self, kind: int) -> np.ndarray:
        px = self.px
        tile = np.empty((px, px, 3), dtype=np.uint8)
        yy, xx = self._yy, self._xx
        edge = (yy < 0.04) | (yy > 0.96) | (xx < 0.04) | (xx > 0.96)
        if kind == FLOOR:
            tile[...] = _FLOOR
            tile[edge] = _GRID
            return tile
        tile[...] = _COUNTER
        tile[edge] = _COUNTER_EDGE
        if kind == KNIFE:
            tile[(np.abs(yy - 0.5) < 0.3) & (np.abs(xx - 0.5) < 0.4)] = _BOARD
            tile[(np.abs(yy - 0.82) < 0.04) & (np.abs(xx - 0.5) < 0.3)] = _BLADE
        elif kind == DELIVERY:
            tile[(np.abs(yy - 0.5) < 0.38) & (np.abs(xx - 0.5) < 0.38)] = _DELIVERY
            ring = np.maximum(np.abs(yy - 0.5), np.abs(xx - 0.5))
            tile[(ring > 0.22) & (ring < 0.28)] = _DELIVERY_MARK
        return tile

    def _thing(self, tile: np.ndarray, thing: tuple[str, int, int], cy: float, cx: float, s: float) -> None:
        what, value, chops = thing
        if what == "food":
            self._food(tile, value, chops, cy, cx, 0.3 * s)
            return
        self._disc(tile, cy, cx, 0.36 * s, _PLATE_RIM)
        self._disc(tile, cy, cx, 0.32 * s, _PLATE)
        foods = [f for f in range(N_FOODS) if value >> f & 1]
        for i, f in enumerate(foods):
            offset = (i - (len(foods) - 1) / 2) * 0.2 * s
            self._food(tile, f, CHOPS_NEEDED, cy, cx + offset, 0.11 * s)

    def _food(self, tile: np.ndarray, food: int, chops: int, cy: float, cx: float, r: float) -> None:
        dy, dx = self._yy - cy, self._xx - cx
        if food == 0:
            shape = dy * dy + dx * dx <= r * r
        elif food == 1:
            shape = (np.abs(dy) <= 0.85 * r) & (np.abs(dx) <= 0.85 * r)
        else:
            shape = np.abs(dy) + np.abs(dx) <= 1.15 * r
        tile[shape] = _FOOD_COLOURS[food]
        for i in range(chops):  # one white cut per chop, top to bottom
            y = cy - r + (i + 1) * 2 * r / (CHOPS_NEEDED + 1)
            tile[shape & (np.abs(self._yy - y) <= max(0.018, r * 0.07))] = _WHITE

    def _disc(self, tile: np.ndarray, cy: float, cx: float, r: float, colour: tuple[int, int, int]) -> None:
        tile[(self._yy - cy) ** 2 + (self._xx - cx) ** 2 <= r * r] = colour


def _thing(kitchen: Kitchen, item: int) -> tuple[str, int, int]:
    if item < N_FOODS:
        return ("food", item, kitchen.chops[item])
    return ("plate", kitchen.contents[item], 0)


def item_label(kitchen: Kitchen, item: int) -> str:
    """Human-readable item with its state, e.g. ``tomato (chopped 2/3)`` or ``plate_1 [lettuce]``."""
    if item < N_FOODS:
        return f"{FOODS[item]} (chopped {kitchen.chops[item]}/{CHOPS_NEEDED})"
    contents = [FOODS[f] for f in range(N_FOODS) if kitchen.contents[item] >> f & 1]
    return f"{ITEMS[item]} [{', '.join(contents)}]"


def ansi(kitchen: Kitchen, header: str) -> str:
    """A text grid in the map legend (items by letter, agents by digit) plus a line per agent/item."""
    layout = kitchen.layout
    symbols = {COUNTER: "#", KNIFE: "K", DELIVERY: "D", FLOOR: "."}
    letters = ("T", "L", "O", "P", "P")
    grid = [
        [symbols[layout.kinds[layout.cell(r, c)]] for c in range(layout.width)] for r in range(layout.height)
    ]
    for cell, item in enumerate(kitchen.cell_item):
        if item >= 0:
            r, c = layout.xy(cell)
            grid[r][c] = letters[item]
    for a, cell in enumerate(kitchen.agent_cell):
        r, c = layout.xy(cell)
        grid[r][c] = str(a)
    lines = [header, *("".join(row) for row in grid)]
    for a, cell in enumerate(kitchen.agent_cell):
        hand = kitchen.hand[a]
        held = item_label(kitchen, hand) if hand >= 0 else "nothing"
        lines.append(f"agent_{a} at {layout.xy(cell)} holding {held}")
    for item in range(len(ITEMS)):
        if item < N_FOODS and kitchen.in_plate[item] >= 0:
            continue  # listed with its plate
        where = kitchen.item_cell[item]
        place = f"at {layout.xy(where)}" if where >= 0 else f"held by agent_{kitchen.holder[item]}"
        lines.append(f"{item_label(kitchen, item)} {place}")
    return "\n".join(lines) + "\n"

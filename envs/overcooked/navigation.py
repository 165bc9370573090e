"""Shortest paths on a kitchen's floor, computed once per map.

The reference runs A* every step with other agents passable, so a path depends only on the
fixed floor plan: we tabulate, for every target cell and every floor cell, the first moves of
all shortest paths. A macro step is then a lookup instead of a search.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from envs.overcooked.layouts import FLOOR, Layout

# The reference's A* expands right, left, down, up; ties between first moves keep that order.
_PREFERENCE = (0, 2, 1, 3)


@dataclass(frozen=True)
class Navigation:
    """``first_moves[target][cell]``: moves starting a shortest path from ``cell`` into ``target``.

    The last move of a path steps into the (non-floor) target, which is how an agent interacts
    with it. Empty tuple where there is no path. ``moves[target][cell]`` is the path length.
    """

    first_moves: tuple[tuple[tuple[int, ...], ...], ...]
    moves: tuple[tuple[int, ...], ...]


@cache
def get_navigation(layout: Layout) -> Navigation:
    n = layout.n_cells
    kinds, nbr = layout.kinds, layout.neighbours
    unreachable = n + 1
    all_moves: list[tuple[int, ...]] = []
    all_first: list[tuple[tuple[int, ...], ...]] = []
    for target in range(n):
        dist = [unreachable] * n
        frontier = []
        if kinds[target] != FLOOR:
            for cell in nbr[target]:
                if cell >= 0 and kinds[cell] == FLOOR:
                    dist[cell] = 1
                    frontier.append(cell)
        while frontier:
            nxt = []
            for cell in frontier:
                for other in nbr[cell]:
                    if other >= 0 and kinds[other] == FLOOR and dist[other] == unreachable:
                        dist[other] = dist[cell] + 1
                        nxt.append(other)
            frontier = nxt
        first: list[tuple[int, ...]] = []
        for cell in range(n):
            if dist[cell] == unreachable:
                first.append(())
            elif dist[cell] == 1:
                first.append((nbr[cell].index(target),))
            else:
                first.append(
                    tuple(
                        d for d in _PREFERENCE if nbr[cell][d] >= 0 and dist[nbr[cell][d]] == dist[cell] - 1
                    )
                )
        all_first.append(tuple(first))
        all_moves.append(tuple(0 if d == unreachable else d for d in dist))
    return Navigation(first_moves=tuple(all_first), moves=tuple(all_moves))

"""Units of work and the order they may run in.

A *unit* is one independent piece of an experiment or a sweep (a trial, a task x seed x arm cell),
named by a stable ``id`` (also its status file's name) and described by a JSON-able ``payload``; it
may name others it needs in ``after``. ``check_units`` refuses a set that cannot all be scheduled
(an id that is not a plain file name, a repeated id, an unknown prerequisite, a cycle) and
``with_prerequisites`` picks the part of a set some units need. Which unit runs when, and where, is
``rlkit.scale.units.run_units``'s.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rlkit.errors import ConfigError, InvalidDataError

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.=+-]*$")


@dataclass(frozen=True)
class Unit:
    """One piece of work.

    Attributes:
        id: its name, also a file name.
        payload: what the unit function is given.
        after: ids of the units to wait for.
    """

    id: str
    payload: dict[str, Any] = field(default_factory=dict)
    after: tuple[str, ...] = ()



def check_units(units: Sequence[Unit]) -> None:
    """Refuse a set of units that cannot all be scheduled.

    Args:
        units: the units; ids unique, each ``after`` naming other units.

    Raises:
        InvalidDataError: on an id that is not a plain file name, a repeated id, an unknown
            prerequisite or a cycle.
    """
    by_id: dict[str, Unit] = {}
    for unit in units:
        if not _ID.match(unit.id):
            raise InvalidDataError(f"unit id {unit.id!r} must be a plain file name "
                                   "(letters, digits, _ . = + -)")
        if unit.id in by_id:
            raise InvalidDataError(f"unit id {unit.id!r} appears twice")
        by_id[unit.id] = unit
    checked: set[str] = set()

    def visit(uid: str, path: tuple[str, ...]) -> None:
        if uid in path:
            raise InvalidDataError(f"units depend on each other in a cycle: {' -> '.join(path + (uid,))}")
        if uid in checked:
            return
        for dep in by_id[uid].after:
            if dep not in by_id:
                raise InvalidDataError(f"unit {uid!r} runs after {dep!r}, which is not a unit")
            visit(dep, path + (uid,))
        checked.add(uid)

    for unit in units:
        visit(unit.id, ())


def with_prerequisites(units: Sequence[Unit], only: Sequence[str]) -> list[Unit]:
    """The units named in ``only`` and every unit they run after, directly or through others, in
    ``units``' order: a part of an experiment run on its own (one sitting's worth), whose
    prerequisites run too unless a resumed run finds them finished.

    Args:
        units: the units (checked: see ``check_units``).
        only: ids of units among them.

    Returns:
        The units to run.

    Raises:
        ConfigError: when an id in ``only`` is not a unit's, naming the ids there are.
    """
    by_id = {unit.id: unit for unit in units}
    unknown = [uid for uid in only if uid not in by_id]
    if unknown:
        raise ConfigError(f"no unit named {', '.join(map(repr, unknown))}; "
                          f"the units are: {', '.join(by_id)}")
    chosen: set[str] = set()
    stack = list(only)
    while stack:
        uid = stack.pop()
        if uid not in chosen:
            chosen.add(uid)
            stack.extend(by_id[uid].after)
    return [unit for unit in units if unit.id in chosen]

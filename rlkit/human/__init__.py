"""Interactive feedback from people: a label store, a web app, a terminal session, a teacher.

Names are imported on first use, so ``rlkit.human.settings`` (read by the ``rlkit`` command's
parser) does not pull in the store's numerical stack.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "LabelConflictError": "rlkit.human.store",
    "LabelRecord": "rlkit.human.store",
    "LabelStore": "rlkit.human.store",
    "Progress": "rlkit.human.store",
    "Query": "rlkit.human.store",
    "UnknownQueryError": "rlkit.human.store",
    "Answers": "rlkit.human.teacher",
    "HumanTeacher": "rlkit.human.teacher",
    "HumanTeacherConfig": "rlkit.human.teacher",
    "WaitReport": "rlkit.human.teacher",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'rlkit.human' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)

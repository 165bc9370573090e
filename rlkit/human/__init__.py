"""Interactive feedback from people: a label store, a web app, a terminal session, a teacher.

Names are imported on first use, so ``rlkit.human.settings`` (read by the ``rlkit`` command's
parser) does not pull in the store's numerical stack, and works without the ``human`` extra
(FastAPI, SQLAlchemy, ...) that the rest of this package needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlkit._lazy import lazy_exports

if TYPE_CHECKING:
    from rlkit.human.store import (
        LabelConflictError,
        LabelRecord,
        LabelStore,
        Progress,
        Query,
        UnknownQueryError,
    )
    from rlkit.human.teacher import Answers, HumanTeacher, HumanTeacherConfig, WaitReport

__all__ = [
    "Answers",
    "HumanTeacher",
    "HumanTeacherConfig",
    "LabelConflictError",
    "LabelRecord",
    "LabelStore",
    "Progress",
    "Query",
    "UnknownQueryError",
    "WaitReport",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "rlkit.human.store": [
        "LabelConflictError", "LabelRecord", "LabelStore", "Progress", "Query", "UnknownQueryError",
    ],
    "rlkit.human.teacher": ["Answers", "HumanTeacher", "HumanTeacherConfig", "WaitReport"],
})

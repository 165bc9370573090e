"""Interactive feedback from people: a label store, a web app, a terminal session, a teacher."""

from rlkit.human.store import (
    LabelConflictError,
    LabelRecord,
    LabelStore,
    Progress,
    Query,
    UnknownQueryError,
)
from rlkit.human.teacher import HumanTeacher, HumanTeacherConfig, WaitReport

__all__ = [
    "HumanTeacher", "HumanTeacherConfig", "LabelConflictError", "LabelRecord", "LabelStore", "Progress",
    "Query", "UnknownQueryError", "WaitReport",
]

"""Interactive feedback from people: a label store, a web app, a terminal session, a teacher."""

from rlkit.human.store import (
    LabelConflictError,
    LabelRecord,
    LabelStore,
    Progress,
    Query,
    UnknownQueryError,
)

__all__ = ["LabelConflictError", "LabelRecord", "LabelStore", "Progress", "Query", "UnknownQueryError"]

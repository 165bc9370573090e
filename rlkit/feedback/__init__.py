"""Feedback: ordinal scales, labelled-pair datasets, simulated teachers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlkit._lazy import lazy_exports

if TYPE_CHECKING:
    from rlkit.feedback.dataset import PreferenceDataset
    from rlkit.feedback.scale import BINARY, FIVE, ORACLE, TERNARY, OrdinalScale
    from rlkit.feedback.teachers import SimulatedTeacher, TeacherConfig, beta_for_spread

__all__ = [
    "BINARY",
    "FIVE",
    "ORACLE",
    "TERNARY",
    "OrdinalScale",
    "PreferenceDataset",
    "SimulatedTeacher",
    "TeacherConfig",
    "beta_for_spread",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "rlkit.feedback.dataset": ["PreferenceDataset"],
    "rlkit.feedback.scale": ["BINARY", "FIVE", "ORACLE", "TERNARY", "OrdinalScale"],
    "rlkit.feedback.teachers": ["SimulatedTeacher", "TeacherConfig", "beta_for_spread"],
})

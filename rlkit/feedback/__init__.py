"""Feedback: ordinal scales, labelled-pair datasets, simulated teachers."""

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

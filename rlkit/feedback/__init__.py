"""Feedback: ordinal scales, labelled-pair datasets, simulated teachers, query selection."""

from rlkit.feedback.dataset import PreferenceDataset
from rlkit.feedback.query import (
    DisagreementSelector,
    EntropySelector,
    QuerySelector,
    UniformSelector,
    make_selector,
)
from rlkit.feedback.scale import BINARY, FIVE, ORACLE, TERNARY, OrdinalScale
from rlkit.feedback.teachers import SimulatedTeacher, TeacherConfig, beta_for_spread

__all__ = [
    "BINARY",
    "FIVE",
    "ORACLE",
    "TERNARY",
    "DisagreementSelector",
    "EntropySelector",
    "OrdinalScale",
    "PreferenceDataset",
    "QuerySelector",
    "SimulatedTeacher",
    "TeacherConfig",
    "UniformSelector",
    "beta_for_spread",
    "make_selector",
]

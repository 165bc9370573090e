"""Online preference RL: the loop (``loop``), its resume point (``resume``) and query selection
(``query``)."""

from rlkit.prefrl.loop import PreferenceRL, PrefRLResult, QueryRound
from rlkit.prefrl.query import (
    DisagreementSelector,
    EntropySelector,
    QuerySelector,
    UniformSelector,
    make_selector,
)

__all__ = [
    "DisagreementSelector",
    "EntropySelector",
    "PrefRLResult",
    "PreferenceRL",
    "QueryRound",
    "QuerySelector",
    "UniformSelector",
    "make_selector",
]

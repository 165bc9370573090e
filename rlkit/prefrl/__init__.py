"""Online preference RL: the loop (``loop``), its resume point (``resume``) and query selection
(``query``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlkit._lazy import lazy_exports

if TYPE_CHECKING:
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

__getattr__, __dir__ = lazy_exports(__name__, {
    "rlkit.prefrl.loop": ["PreferenceRL", "PrefRLResult", "QueryRound"],
    "rlkit.prefrl.query": [
        "DisagreementSelector", "EntropySelector", "QuerySelector", "UniformSelector",
        "make_selector",
    ],
})

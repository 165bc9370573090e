"""Online preference RL: the loop over built parts (``loop``, checked by ``parts``), those parts
built from a config (``from_config``), its result (``result``), its resume point (``resume``) and
query selection (``query``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlkit._lazy import lazy_exports

if TYPE_CHECKING:
    from rlkit.prefrl.loop import PreferenceRL
    from rlkit.prefrl.query import (
        DisagreementSelector,
        EntropySelector,
        QuerySelector,
        UniformSelector,
        make_selector,
    )
    from rlkit.prefrl.result import PrefRLResult, QueryRound

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
    "rlkit.prefrl.loop": ["PreferenceRL"],
    "rlkit.prefrl.result": ["PrefRLResult", "QueryRound"],
    "rlkit.prefrl.query": [
        "DisagreementSelector", "EntropySelector", "QuerySelector", "UniformSelector",
        "make_selector",
    ],
})

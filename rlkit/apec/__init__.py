"""APEC: preferences from the AIL process (later checkpoint preferred), and the D-REX baseline."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlkit._lazy import lazy_exports

if TYPE_CHECKING:
    from rlkit.apec.drex import (
        NOISE_GRID,
        BCPolicy,
        DrexConfig,
        drex,
        drex_pairs,
        noisy_rollouts,
        train_bc,
    )
    from rlkit.apec.pair_config import PairConfig, RolloutConfig
    from rlkit.apec.pairs import ot_only_pairs, select_pairs
    from rlkit.apec.rollouts import checkpoint_rollouts, policy_rollouts
    from rlkit.apec.transport import demo_ot_distances, reference_ot_distance

__all__ = [
    "NOISE_GRID",
    "BCPolicy",
    "DrexConfig",
    "PairConfig",
    "RolloutConfig",
    "checkpoint_rollouts",
    "demo_ot_distances",
    "drex",
    "drex_pairs",
    "noisy_rollouts",
    "ot_only_pairs",
    "reference_ot_distance",
    "policy_rollouts",
    "select_pairs",
    "train_bc",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "rlkit.apec.drex": [
        "NOISE_GRID", "BCPolicy", "DrexConfig", "drex", "drex_pairs", "noisy_rollouts", "train_bc",
    ],
    "rlkit.apec.pair_config": ["PairConfig", "RolloutConfig"],
    "rlkit.apec.pairs": ["ot_only_pairs", "select_pairs"],
    "rlkit.apec.rollouts": ["checkpoint_rollouts", "policy_rollouts"],
    "rlkit.apec.transport": ["demo_ot_distances", "reference_ot_distance"],
})

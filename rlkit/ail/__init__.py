"""Adversarial imitation (GAIL, AIRL, max-ent IRL) on SB3 PPO/SAC generators, with checkpoints."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlkit._lazy import lazy_exports

if TYPE_CHECKING:
    from rlkit.ail.checkpoints import Checkpoint, CheckpointStore
    from rlkit.ail.config import AILConfig, DiscriminatorConfig
    from rlkit.ail.demos import check_demos, demos_from_policy, load_demos, save_demos
    from rlkit.ail.discriminator import Discriminator, build_discriminator
    from rlkit.ail.generator import make_generator, policy_log_prob, relabel_generator_buffer
    from rlkit.ail.losses import (
        airl_logits,
        gail_reward,
        gradient_penalty,
        logistic_loss,
        maxent_irl_loss,
    )
    from rlkit.ail.trainer import AILRound, AILTrainer, RoundCallback
    from rlkit.ail.transitions import TransitionBuffer, Transitions

__all__ = [
    "AILConfig",
    "AILTrainer",
    "Checkpoint",
    "CheckpointStore",
    "Discriminator",
    "DiscriminatorConfig",
    "RoundCallback",
    "AILRound",
    "TransitionBuffer",
    "Transitions",
    "airl_logits",
    "build_discriminator",
    "check_demos",
    "demos_from_policy",
    "gail_reward",
    "gradient_penalty",
    "load_demos",
    "logistic_loss",
    "make_generator",
    "maxent_irl_loss",
    "policy_log_prob",
    "relabel_generator_buffer",
    "save_demos",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "rlkit.ail.checkpoints": ["Checkpoint", "CheckpointStore"],
    "rlkit.ail.config": ["AILConfig", "DiscriminatorConfig"],
    "rlkit.ail.demos": ["check_demos", "demos_from_policy", "load_demos", "save_demos"],
    "rlkit.ail.discriminator": ["Discriminator", "build_discriminator"],
    "rlkit.ail.generator": ["make_generator", "policy_log_prob", "relabel_generator_buffer"],
    "rlkit.ail.losses": [
        "airl_logits", "gail_reward", "gradient_penalty", "logistic_loss", "maxent_irl_loss",
    ],
    "rlkit.ail.trainer": ["AILRound", "AILTrainer", "RoundCallback"],
    "rlkit.ail.transitions": ["TransitionBuffer", "Transitions"],
})

"""``rlkit apec``'s defaults are APEC's reference preset (``rlkit.apec.presets``)."""

from __future__ import annotations

from rlkit.apec import config, methods
from rlkit.apec.presets import REFERENCE_DISCRIMINATOR, REFERENCE_POLICY_SAC, REFERENCE_SAC


def test_the_ail_section_defaults_to_the_references_sac_on_its_maxent_reward() -> None:
    ail = config.ApecConfig().ail
    assert (ail.rounds, ail.steps_per_round, ail.agent_buffer, ail.checkpoint_every) == (50, 5000, 1000, 1)
    assert ail.generator == "sac" and ail.generator_kwargs == REFERENCE_SAC and ail.device == "auto"
    assert ail.discriminator == REFERENCE_DISCRIMINATOR
    assert (REFERENCE_DISCRIMINATOR.loss, REFERENCE_DISCRIMINATOR.reward_on) == ("maxent", "next_obs")
    assert REFERENCE_SAC["ent_coef"] == 0.1 and REFERENCE_SAC["policy_kwargs"] == {"net_arch": [256, 256]}


def test_the_policies_train_the_same_sac_as_the_generator() -> None:
    assert dict(config.ApecConfig().policy.agent.kwargs) == REFERENCE_POLICY_SAC == REFERENCE_SAC


def test_the_method_names_keep_their_config_import_path() -> None:
    assert config.split_method is methods.split_method
    assert config.split_method("ot_only@0.05") == ("ot_only", 0.05)
    assert list(config.ApecConfig().methods) == list(methods.METHODS)

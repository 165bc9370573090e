"""The AIL configs' torch-free home (``rlkit.ail.config``) and the names they check against."""

from __future__ import annotations

import pytest

import rlkit.ail
from rlkit.ail import config, discriminator, trainer
from rlkit.errors import InvalidDataError
from rlkit.reward.activations import ACTIVATION_NAMES
from rlkit.reward.encoders import ACTIVATIONS


def test_the_activation_names_are_the_modules_names() -> None:
    assert ACTIVATION_NAMES == tuple(ACTIVATIONS)


@pytest.mark.parametrize("name", ACTIVATION_NAMES)
def test_each_named_activation_is_accepted(name) -> None:
    assert config.DiscriminatorConfig(activation=name).activation == name


def test_an_unknown_activation_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidDataError, match=r"DiscriminatorConfig\.activation .*'swish'"):
        config.DiscriminatorConfig(activation="swish")


def test_the_configs_keep_their_import_paths() -> None:
    assert discriminator.DiscriminatorConfig is config.DiscriminatorConfig
    assert rlkit.ail.DiscriminatorConfig is config.DiscriminatorConfig
    assert trainer.AILConfig is config.AILConfig
    assert rlkit.ail.AILConfig is config.AILConfig

"""The names of the activations a reward net's hidden layers take (the torch modules behind them:
``rlkit.reward.encoders.ACTIVATIONS``), without torch, so a config checks its ``activation``
without importing it."""

from __future__ import annotations

from typing import Literal, get_args

Activation = Literal["relu", "tanh", "leaky_relu", "elu", "silu", "gelu"]
ACTIVATION_NAMES: tuple[str, ...] = get_args(Activation)

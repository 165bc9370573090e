"""Image encoders of the CNN reward nets and discriminators, and how an image space is read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from rlkit.errors import InvalidDataError

__all__ = ["DEFAULT_CHANNELS", "ENCODERS", "ImageLayout", "image_encoder", "image_layout",
           "is_image_space"]

ENCODERS = ("compact", "drq")
DEFAULT_CHANNELS = {"compact": (16, 32, 32), "drq": (32, 32, 32, 32)}
ACTIVATIONS: dict[str, type[nn.Module]] = {
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "leaky_relu": nn.LeakyReLU,
    "elu": nn.ELU,
    "silu": nn.SiLU,
    "gelu": nn.GELU,
}
ImageLayout = Literal["channels_first", "channels_last"]


def image_layout(shape: Sequence[int]) -> ImageLayout | None:
    """Which axis of a 3-d observation shape holds the channels, by SB3's rule of thumb: the
    channels are the smallest axis.

    ``C x H x W`` when the first axis is strictly the smallest (frame stacks ``(9, 64, 64)``,
    ``(3, 84, 84)``); ``H x W x C`` when the last axis is the smallest or, as rlkit always read
    them, holds 1, 3 or 4 channels (ties go to channel-last, so ``(4, 4, 4)`` reads as before).

    Args:
        shape: an observation shape.

    Returns:
        ``"channels_first"``, ``"channels_last"``, or None when the shape is not 3-d or its
        smallest axis is the middle one.
    """
    if len(shape) != 3:
        return None
    first, middle, last = (int(n) for n in shape)
    if first < min(middle, last):
        return "channels_first"
    if last in (1, 3, 4) or last <= min(first, middle):
        return "channels_last"
    return None


def is_image_space(space: spaces.Space) -> bool:
    """Whether a space holds images: a uint8 Box with a 3-d shape that ``image_layout`` reads,
    channel-first (frame stacks) or channel-last (gymnasium renders).

    Args:
        space: an observation space.

    Returns:
        True for image spaces.
    """
    return (
        isinstance(space, spaces.Box)
        and space.dtype == np.uint8
        and image_layout(space.shape) is not None
    )


def image_encoder(
    encoder: str, in_channels: int, height: int, width: int, channels: Sequence[int],
    activation: str, feature_dim: int,
) -> tuple[nn.Sequential, int]:
    """The convolutions of a CNN reward net (``RewardNetSpec`` describes the two kinds).

    ``"compact"``: stride-2 3x3 convolutions with padding and ``activation``, flattened (valid for
    any image size down to 1 x 1). ``"drq"``: DrQ-v2's encoder as APEC's pixel reference has it,
    unpadded 3x3 convolutions of stride 2 then 1 with ReLU, then ``Linear -> LayerNorm -> Tanh``
    to ``feature_dim``, every layer initialised orthogonally (the reference's ``weight_init``).

    Args:
        encoder: ``"compact"`` or ``"drq"``.
        in_channels: channels of the images it reads (``obs`` and ``next_obs`` stacked).
        height: image height in pixels.
        width: image width in pixels.
        channels: the convolutions' widths.
        activation: a key of ``ACTIVATIONS`` (``"compact"`` only).
        feature_dim: the trunk's width (``"drq"`` only).

    Returns:
        The encoder, from ``(n, in_channels, height, width)`` floats to ``(n, features)``, and
        ``features``.

    Raises:
        InvalidDataError: for images too small for the convolutions.
    """
    layers: list[nn.Module] = []
    image_channels = in_channels
    for depth, width_out in enumerate(channels):
        if encoder == "compact":
            layers += [nn.Conv2d(in_channels, width_out, 3, stride=2, padding=1),
                       ACTIVATIONS[activation]()]
        else:
            layers += [nn.Conv2d(in_channels, width_out, 3, stride=2 if depth == 0 else 1),
                       nn.ReLU()]
        in_channels = width_out
    convolutions = nn.Sequential(*layers, nn.Flatten())
    features = _output_width(convolutions, image_channels, height, width)
    if encoder == "compact":
        return convolutions, features
    trunk = nn.Sequential(*convolutions, nn.Linear(features, feature_dim),
                          nn.LayerNorm(feature_dim), nn.Tanh())
    trunk.apply(_orthogonal_init)
    return trunk, feature_dim


def _orthogonal_init(module: nn.Module) -> None:
    """The reference's ``weight_init``: orthogonal weights (ReLU gain for convolutions), zero bias."""
    if isinstance(module, nn.Linear | nn.Conv2d):
        gain = nn.init.calculate_gain("relu") if isinstance(module, nn.Conv2d) else 1.0
        nn.init.orthogonal_(module.weight.data, gain)
        if module.bias is not None:
            module.bias.data.fill_(0.0)


def _output_width(encoder: nn.Sequential, channels: int, height: int, width: int) -> int:
    """The features a convolution stack makes of one image; fails for images it cannot take."""
    try:
        with torch.no_grad():
            return int(encoder(torch.zeros(1, channels, height, width)).shape[1])
    except RuntimeError as error:
        raise InvalidDataError(
            f"{height} x {width} images are too small for these convolutions ({error})"
        ) from None

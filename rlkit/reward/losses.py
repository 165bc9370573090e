"""Preference losses over ``delta = R(A) - R(B)`` and labels ``z`` in [0, 1] (1 = A better).

Each returns the batch mean, so losses of batches of different sizes are comparable. All are
written with log-sigmoids / logits so they stay finite at |delta| = 100 and beyond.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch.nn import functional as F

from rlkit.errors import ConfigError, InvalidLabelError

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def ordinal_cross_entropy(delta: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """Soft-label cross entropy -z log σ(Δ) - (1-z) log σ(-Δ): unbiased for any ordinal scale
    whose labels have E[z] = P(A > B); a tie is z = 0.5 and pulls Δ towards 0.

    Args:
        delta: ``(N,)`` return differences ``R(A) - R(B)``.
        z: ``(N,)`` labels in [0, 1].

    Returns:
        The mean loss, a scalar tensor.
    """
    return F.binary_cross_entropy_with_logits(delta, z.to(delta.dtype))


def bradley_terry(delta: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """Binary Bradley-Terry; refuses soft labels, which would silently become a different model.

    Args:
        delta: ``(N,)`` return differences ``R(A) - R(B)``.
        z: ``(N,)`` labels, each 0 or 1.

    Returns:
        The mean loss, a scalar tensor.

    Raises:
        InvalidLabelError: when a label is not 0 or 1.
    """
    _check_levels(z, (0.0, 1.0), "bradley_terry")
    return F.binary_cross_entropy_with_logits(delta, z.to(delta.dtype))


def rao_kupper_ties(theta: float) -> LossFn:
    """Bradley-Terry with an explicit tie outcome (Rao-Kupper), for labels z in {0, 0.5, 1}.

    P(A>B) = σ(Δ - ln θ), P(B>A) = σ(-Δ - ln θ), P(tie) = (θ² - 1) σ(Δ - ln θ) σ(-Δ - ln θ);
    θ > 1 sets how much probability ties get around Δ = 0.

    Args:
        theta: the tie parameter θ, finite and > 1.

    Returns:
        A loss ``(delta, z) -> mean loss``; it raises ``InvalidLabelError`` on a label outside
        {0, 0.5, 1}.

    Raises:
        ConfigError: when ``theta`` is not finite and > 1.
    """
    if not (math.isfinite(theta) and theta > 1.0):
        raise ConfigError(f"rao_kupper_ties needs a finite theta > 1, got theta={theta}")
    log_theta = math.log(theta)
    log_tie_scale = math.log(theta**2 - 1.0)

    def loss(delta: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        _check_levels(z, (0.0, 0.5, 1.0), "rao_kupper_ties")
        log_a_wins = F.logsigmoid(delta - log_theta)
        log_b_wins = F.logsigmoid(-delta - log_theta)
        log_tie = log_tie_scale + log_a_wins + log_b_wins
        log_b_or_tie = torch.where(z == 0.0, log_b_wins, log_tie)
        return -torch.where(z == 1.0, log_a_wins, log_b_or_tie).mean()

    return loss


def hinge(margin: float) -> LossFn:
    """z relu(m/2 - Δ) + (1 - z) relu(m/2 + Δ): asks for a return gap of at least m/2 per side.

    Args:
        margin: m, the wanted return gap between a preferred and a rejected segment, finite and
            >= 0.

    Returns:
        A loss ``(delta, z) -> mean loss``; soft labels weigh the two sides.

    Raises:
        ConfigError: when ``margin`` is negative or not finite.
    """
    if not (math.isfinite(margin) and margin >= 0.0):
        raise ConfigError(f"hinge needs a finite margin >= 0, got margin={margin}")

    def loss(delta: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        z = z.to(delta.dtype)
        half = margin / 2.0
        return (z * F.relu(half - delta) + (1.0 - z) * F.relu(half + delta)).mean()

    return loss


def make_loss(name: str, hinge_margin: float = 2.0, rao_kupper_theta: float = 2.0) -> LossFn:
    """The loss for a config's name: "ordinal", "bt", "rao_kupper" or "hinge".

    Args:
        name: the config's loss name.
        hinge_margin: the margin of ``"hinge"``.
        rao_kupper_theta: θ of ``"rao_kupper"``.

    Returns:
        A loss ``(delta, z) -> mean loss``.

    Raises:
        ConfigError: on an unknown name or a bad margin or θ.
    """
    if name == "ordinal":
        return ordinal_cross_entropy
    if name == "bt":
        return bradley_terry
    if name == "rao_kupper":
        return rao_kupper_ties(rao_kupper_theta)
    if name == "hinge":
        return hinge(hinge_margin)
    raise ConfigError(f"loss must be 'ordinal', 'bt', 'rao_kupper' or 'hinge', got {name!r}")


def _check_levels(z: torch.Tensor, levels: tuple[float, ...], loss_name: str) -> None:
    allowed = torch.zeros_like(z, dtype=torch.bool)
    for level in levels:
        allowed |= z == level
    if not bool(allowed.all()):
        bad = z[~allowed][0].item()
        raise InvalidLabelError(f"{loss_name} takes labels z in {set(levels)}, got z={bad}")

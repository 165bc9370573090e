"""Discriminator losses and generator rewards of adversarial imitation, as pure tensor functions.

Convention: a discriminator logit ``x`` gives ``D = sigmoid(x)``, the probability that a
transition came from the expert. Keeping these free of nets makes them checkable by hand.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.nn import functional as F

from rlkit.ail.config import GailReward
from rlkit.errors import ConfigError


def logistic_loss(expert_logits: torch.Tensor, agent_logits: torch.Tensor) -> torch.Tensor:
    """GAIL's discriminator loss ``-E_expert[log D] - E_agent[log(1 - D)]`` (softplus: no overflow).

    Args:
        expert_logits: discriminator logits of expert transitions, any shape (averaged).
        agent_logits: discriminator logits of the generator's transitions, any shape (averaged).

    Returns:
        The loss, a scalar tensor.
    """
    return F.softplus(-expert_logits).mean() + F.softplus(agent_logits).mean()


def airl_logits(f: torch.Tensor, log_pi: torch.Tensor) -> torch.Tensor:
    """AIRL's ``D = exp f / (exp f + pi)`` written as a logit: ``f - log pi``; its loss is logistic.

    Args:
        f: the discriminator's ``f(s, a, s') = g + gamma (1 - done) h(s') - h(s)``, one per
            transition.
        log_pi: the generator's ``log pi(a | s)`` of the same transitions, the same shape.

    Returns:
        The logits ``f - log_pi``, shaped like ``f``.
    """
    return f - log_pi


def maxent_irl_loss(expert_rewards: torch.Tensor, agent_rewards: torch.Tensor) -> torch.Tensor:
    """APEC's max-ent IRL reward loss ``E_agent[r] - E_expert[r]``: push expert reward up.

    Args:
        expert_rewards: the reward net's ``r`` of expert states, any shape (averaged).
        agent_rewards: its ``r`` of the generator's states, any shape (averaged).

    Returns:
        The loss, a scalar tensor (unscaled: ``DiscriminatorConfig.loss_scale`` is applied by the
        discriminator).
    """
    return agent_rewards.mean() - expert_rewards.mean()


def gail_reward(logits: torch.Tensor, form: GailReward = "positive") -> torch.Tensor:
    """Generator reward from discriminator logits.

    ``"positive"``: ``-log(1 - D)`` = ``softplus(x)`` (always > 0, a survival bonus);
    ``"logit"``: ``log D - log(1 - D)`` = ``x`` (unbiased in sign, for envs with early termination).

    Args:
        logits: discriminator logits ``x``, any shape.
        form: ``"positive"`` or ``"logit"``, as above.

    Returns:
        The rewards, shaped like ``logits``.

    Raises:
        ConfigError: when ``form`` is neither ``"positive"`` nor ``"logit"``.
    """
    if form == "positive":
        return F.softplus(logits)
    if form == "logit":
        return logits
    raise ConfigError(f"gail_reward must be 'positive' or 'logit', got {form!r}")


def gradient_penalty(
    score: Callable[[dict[str, torch.Tensor]], torch.Tensor],
    expert: dict[str, torch.Tensor],
    agent: dict[str, torch.Tensor],
    generator: torch.Generator,
) -> torch.Tensor:
    """WGAN-GP style ``E[(||grad score(x_mix)|| - 1)^2]`` on random expert/agent interpolations.

    Only floating inputs and uint8 images are mixed (and differentiated); others (discrete
    actions, done flags) are taken from the expert side; inputs the score ignores add nothing.
    Images are mixed as floats in [0, 255] and their gradients taken per unit of intensity in
    [0, 1] (255 times the per-pixel-value gradient: the scale the nets read after dividing by
    255). Keeps the discriminator smooth so its reward stays informative.

    APEC's pixel reference (DAC, ``apec_dmc/src/agent/dac.py``) penalises its discriminator's
    gradient with respect to 50 features of the generator critic's encoder instead: its
    discriminator has no encoder of its own. rlkit's discriminators do, so the penalty is on
    their input.

    Args:
        score: the discriminator's raw output on a batch (``Discriminator.score``): one value per
            transition.
        expert: an expert batch, tensors keyed ``obs``, ``acts``, ``next_obs``, ``dones`` with the
            batch first.
        agent: a generator batch with the same keys and shapes as ``expert``.
        generator: a CPU torch RNG for the mixing weights (one uniform ``alpha`` per transition,
            moved to the batch's device).

    Returns:
        The penalty, a scalar tensor that keeps its graph (so it can be backpropagated).
    """
    n = next(iter(expert.values())).shape[0]
    alpha = torch.rand(n, generator=generator).to(next(iter(expert.values())).device)
    mixed: dict[str, torch.Tensor] = {}
    inputs: list[torch.Tensor] = []
    scales: list[float] = []
    for name, value in expert.items():
        image = value.dtype == torch.uint8
        if (value.is_floating_point() or image) and name != "dones":
            a = alpha.reshape(n, *([1] * (value.dim() - 1)))
            mix = (a * value.float() + (1 - a) * agent[name].float()).detach().requires_grad_(True)
            inputs.append(mix)
            scales.append(255.0 if image else 1.0)
            mixed[name] = mix
        else:
            mixed[name] = value
    grads = torch.autograd.grad(score(mixed).sum(), inputs, create_graph=True, allow_unused=True)
    squared = sum(((g * scale).reshape(n, -1).pow(2).sum(dim=1)
                   for g, scale in zip(grads, scales, strict=True) if g is not None),
                  alpha.new_zeros(n))
    return (torch.sqrt(squared + 1e-12) - 1.0).pow(2).mean()

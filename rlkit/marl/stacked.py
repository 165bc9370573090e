"""Several agents' actor-critic MLPs evaluated as one batched matmul per layer, for rollouts.

IPPO steps every agent's policy on every env step; calling n small SB3 policies one after the
other costs n times the per-call overhead, which dominates at tens of rows. During a rollout
the weights do not change, so they are stacked once per rollout and each layer becomes a single
``baddbmm`` over agents. Only SB3's plain ``MlpPolicy`` shape is stacked (flatten features,
``Linear`` + elementwise activations, linear heads); anything else keeps per-policy calls.
"""

from __future__ import annotations

import torch
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import FlattenExtractor
from torch import nn

from rlkit.errors import IncompatibleModelError

Layer = tuple[torch.Tensor, torch.Tensor] | nn.Module  # stacked (weight^T, bias) or an activation


def stackable(policies: list[ActorCriticPolicy]) -> bool:
    """True when every policy is a plain MLP actor-critic of one shape (what ``StackedMlp`` runs)."""
    if len(policies) < 2:
        return False
    shapes = set()
    for policy in policies:
        if not isinstance(policy.features_extractor, FlattenExtractor) or not policy.share_features_extractor:
            return False
        extractor = policy.mlp_extractor
        for net in (extractor.policy_net, extractor.value_net):
            if not all(isinstance(m, nn.Linear) or _elementwise(m) for m in net):
                return False
        shapes.add(tuple((name, tuple(p.shape)) for name, p in policy.named_parameters()))
    return len(shapes) == 1


def _elementwise(module: nn.Module) -> bool:
    return isinstance(module, nn.Tanh | nn.ReLU | nn.ELU | nn.LeakyReLU | nn.GELU | nn.SiLU | nn.Sigmoid)


class StackedMlp:
    """Logits and values of ``P`` policies on ``(P, N, D)`` observations; call ``refresh()`` after
    the weights change (each update)."""

    def __init__(self, policies: list[ActorCriticPolicy]) -> None:
        if not stackable(policies):
            raise IncompatibleModelError("policies must be plain MLP actor-critics of one shape")
        self.policies = policies
        self.refresh()

    def refresh(self) -> None:
        policies = self.policies
        self._actor = self._stack([[*p.mlp_extractor.policy_net, p.action_net] for p in policies])
        self._critic = self._stack([[*p.mlp_extractor.value_net, p.value_net] for p in policies])

    @staticmethod
    def _stack(paths: list[list[nn.Module]]) -> list[Layer]:
        layers: list[Layer] = []
        for modules in zip(*paths, strict=True):
            first = modules[0]
            if isinstance(first, nn.Linear):
                weight = torch.stack([m.weight.detach().T for m in modules])  # (P, in, out)
                bias = torch.stack([m.bias.detach() for m in modules]).unsqueeze(1)  # (P, 1, out)
                layers.append((weight, bias))
            else:
                layers.append(first)
        return layers

    @torch.no_grad()
    def __call__(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return _run(self._actor, obs), _run(self._critic, obs).squeeze(-1)


def _run(layers: list[Layer], x: torch.Tensor) -> torch.Tensor:
    for layer in layers:
        x = torch.baddbmm(layer[1], x, layer[0]) if isinstance(layer, tuple) else layer(x)
    return x

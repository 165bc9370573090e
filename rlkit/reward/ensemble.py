"""Reward ensembles: the mean is the reward, the spread is the disagreement that picks queries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
import torch
from torch import nn

from rlkit.errors import InvalidDataError
from rlkit.reward.nets import RewardNet, RewardNetSpec
from rlkit.reward.numpy_rewards import numpy_to_tensors


class RewardEnsemble(nn.Module):
    """Reward nets whose mean is the reward and whose spread is their disagreement.

    Members share their spaces and inputs (so one gathered batch feeds all of them); their
    widths may differ. Members that are all MLPs of one architecture run as one batched model
    (``batched``).

    Args:
        members: at least one reward net, each reading the same observation and action shapes,
            inputs and absorbing flag.

    Raises:
        InvalidDataError: when ``members`` is empty or a member reads other spaces or inputs than
            the first.
    """

    def __init__(self, members: Sequence[RewardNet]) -> None:
        super().__init__()
        if len(members) == 0:
            raise InvalidDataError("an ensemble needs at least one member, got 0")
        first = members[0].spec
        for i, member in enumerate(members[1:], start=1):
            spec = member.spec
            if (spec.obs_shape, spec.act_shape, spec.n_actions, spec.inputs, spec.absorbing_flag) != (
                first.obs_shape, first.act_shape, first.n_actions, first.inputs, first.absorbing_flag
            ):
                raise InvalidDataError(
                    f"ensemble member {i} reads obs {spec.obs_shape}, acts {spec.act_shape}, "
                    f"n_actions {spec.n_actions}, inputs {spec.inputs}, absorbing_flag "
                    f"{spec.absorbing_flag}; member 0 reads {first.obs_shape}, {first.act_shape}, "
                    f"{first.n_actions}, {first.inputs}, {first.absorbing_flag}"
                )
        self.members = nn.ModuleList(members)
        heads = [member.head for member in members]
        self.batched = all(
            member.encoder is None and (member.spec.hidden, member.spec.activation, member.spec.linear_first)
            == (first.hidden, first.activation, first.linear_first) for member in members
        )
        # layer by layer: every member's Linear at that depth, or the (stateless) activation
        self._layers: list[list[nn.Linear] | nn.Module] = [
            [cast(nn.Linear, head[depth]) for head in heads]
            if isinstance(layer, nn.Linear) else layer
            for depth, layer in enumerate(heads[0])
        ] if self.batched else []

    @property
    def spec(self) -> RewardNetSpec:
        """The first member's spec: what the ensemble reads (spaces and inputs)."""
        return cast(RewardNet, self.members[0]).spec  # __init__ holds RewardNets only

    @property
    def specs(self) -> list[RewardNetSpec]:
        return [cast(RewardNet, member).spec for member in self.members]

    def __len__(self) -> int:
        return len(self.members)

    def member_rewards(
        self,
        obs: torch.Tensor | None,
        acts: torch.Tensor | None,
        next_obs: torch.Tensor | None,
        dones: torch.Tensor | None,
        *,
        per_member: bool = False,
    ) -> torch.Tensor:
        """Rewards of every member, stacked on a new first dimension: ``(K, *batch)``.

        When ``batched`` (every member an MLP without an image encoder, all of one width and
        activation) the members run as one model: the input rows are built once and each layer
        is one batched matmul over the members' stacked weights, so one forward (and backward)
        serves all K. Otherwise the members run one after another.

        Args:
            obs, acts, next_obs, dones: step inputs with a shared leading batch shape; those the
                members do not read may be None.
            per_member: the inputs lead with a K axis and member k reads row k of it (each member
                its own batch, as in training); the result is then ``(K, *batch[1:])``.

        Returns:
            The ``(K, ...)`` rewards.
        """
        inputs = (obs, acts, next_obs, dones)
        k = len(self.members)
        if not self.batched:
            if per_member:
                return torch.stack([member(*(None if x is None else x[i] for x in inputs))
                                    for i, member in enumerate(self.members)])
            return torch.stack([member(*inputs) for member in self.members])
        features, lead = cast(RewardNet, self.members[0]).features(*inputs)
        if per_member:
            if lead[:1] != (k,):
                raise InvalidDataError(f"per-member inputs must lead with the {k} members, "
                                       f"got batch shape {lead}")
            lead = lead[1:]
            rows = features.reshape(k, -1, features.shape[-1])
        else:
            rows = features.expand(k, *features.shape)
        first = cast(RewardNet, self.members[0])
        return first.masked(self._stacked_heads(rows).reshape(k, *lead), obs, next_obs)

    def _stacked_heads(self, x: torch.Tensor) -> torch.Tensor:
        """Every member's MLP head on its own rows: ``(K, n, in)`` -> ``(K, n)``."""
        for layer in self._layers:
            if isinstance(layer, list):
                weight = torch.stack([linear.weight for linear in layer])  # (K, out, in)
                bias = torch.stack([cast(torch.Tensor, linear.bias) for linear in layer])
                x = torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))
            else:
                x = layer(x)
        return x.squeeze(-1)

    def forward(
        self,
        obs: torch.Tensor | None,
        acts: torch.Tensor | None,
        next_obs: torch.Tensor | None,
        dones: torch.Tensor | None,
    ) -> torch.Tensor:
        return self.member_rewards(obs, acts, next_obs, dones).mean(dim=0)

    def mean_std(
        self,
        obs: torch.Tensor | None,
        acts: torch.Tensor | None,
        next_obs: torch.Tensor | None,
        dones: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and population std (ddof 0, so one member gives std 0, not NaN) over members."""
        rewards = self.member_rewards(obs, acts, next_obs, dones)
        std, mean = torch.std_mean(rewards, dim=0, correction=0)
        return mean, std

    def mean_std_numpy(
        self, obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray, dones: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``mean_std`` over numpy batches, float32 out, without gradients."""
        with torch.no_grad():
            mean, std = self.mean_std(*numpy_to_tensors(self, obs, acts, next_obs, dones))
        return mean.to(torch.float32).cpu().numpy(), std.to(torch.float32).cpu().numpy()

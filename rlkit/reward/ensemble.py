"""Reward ensembles: the mean is the reward, the spread is the disagreement that picks queries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
import torch
from torch import nn

from rlkit.errors import InvalidDataError
from rlkit.reward.nets import RewardNet, RewardNetSpec, numpy_to_tensors


class RewardEnsemble(nn.Module):
    """Members share their spaces and inputs (so one gathered batch feeds all of them); their
    widths may differ."""

    def __init__(self, members: Sequence[RewardNet]) -> None:
        super().__init__()
        if len(members) == 0:
            raise InvalidDataError("an ensemble needs at least one member, got 0")
        first = members[0].spec
        for i, member in enumerate(members[1:], start=1):
            spec = member.spec
            if (spec.obs_shape, spec.act_shape, spec.n_actions, spec.inputs) != (
                first.obs_shape, first.act_shape, first.n_actions, first.inputs
            ):
                raise InvalidDataError(
                    f"ensemble member {i} reads obs {spec.obs_shape}, acts {spec.act_shape}, "
                    f"n_actions {spec.n_actions}, inputs {spec.inputs}; member 0 reads "
                    f"{first.obs_shape}, {first.act_shape}, {first.n_actions}, {first.inputs}"
                )
        self.members = nn.ModuleList(members)

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
    ) -> torch.Tensor:
        """Rewards of every member, stacked on a new first dimension: ``(K, *batch)``."""
        return torch.stack([member(obs, acts, next_obs, dones) for member in self.members])

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

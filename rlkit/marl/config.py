"""PPO settings of ``rlkit.marl`` (pydantic only, so configs load without torch)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rlkit.config import StrictModel
from rlkit.devices import Device


class MarlConfig(StrictModel):
    """PPO settings shared by every policy; ``batch_size`` counts samples of one policy.

    ``device`` is ``cpu`` unless asked: the policies are small MLPs stepped once per env step, where
    a GPU's per-call cost and the copy of every step's actions back to the env outweigh its speed
    (SB3 says the same of its PPO with an MLP policy). It is written to a saved config only when
    set, so configs and run states saved before it existed read, and resume, as before.
    """

    sharing: Literal["independent", "shared"] = Field(
        "independent",
        description="independent: one policy per agent (IPPO); shared: one policy, agent id in obs",
    )
    n_steps: int = Field(128, ge=1, description="steps per game between updates")
    batch_size: int = Field(256, ge=2)
    n_epochs: int = Field(4, ge=1)
    learning_rate: float = Field(3e-4, gt=0)
    gamma: float = Field(0.99, gt=0, le=1)
    gae_lambda: float = Field(0.95, ge=0, le=1)
    clip_range: float = Field(0.2, gt=0)
    ent_coef: float = Field(0.01, ge=0)
    vf_coef: float = Field(0.5, ge=0)
    max_grad_norm: float = Field(0.5, gt=0)
    net_arch: tuple[int, ...] = (64, 64)
    seed: int = 0
    device: Device = Field("cpu", exclude_if="cpu".__eq__,
                           description="where the policies run; auto: CUDA when present")

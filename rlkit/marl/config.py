"""PPO settings of ``rlkit.marl`` (pydantic only, so configs load without torch)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rlkit.config import StrictModel
from rlkit.devices import Device


class MarlConfig(StrictModel):
    """PPO settings shared by every policy (each one an SB3 ``PPO`` on an MLP policy).

    Attributes:
        sharing: ``"independent"``: one policy per agent (IPPO); ``"shared"``: one policy for
            every agent, a one-hot agent id appended to its observations.
        n_steps: steps per game between updates, >= 1.
        batch_size: samples of one policy per minibatch, >= 2.
        n_epochs: passes over a rollout per update, >= 1.
        learning_rate: the optimiser's learning rate, > 0.
        gamma: the discount, in (0, 1].
        gae_lambda: GAE's lambda, in [0, 1].
        clip_range: PPO's clipping of the probability ratio, > 0.
        ent_coef: the entropy bonus's weight in the loss, >= 0.
        vf_coef: the value loss's weight, >= 0.
        max_grad_norm: the gradients' norm is clipped to this, > 0.
        net_arch: the hidden widths of the policy and value MLPs.
        seed: seeds the policies' initialisation and sampling.
        device: where the policies run (``auto``: CUDA when present). ``cpu`` unless asked: the
            policies are small MLPs stepped once per env step, where a GPU's per-call cost and
            the copy of every step's actions back to the env outweigh its speed (SB3 says the
            same of its PPO with an MLP policy). It is written to a saved config only when it is
            not ``cpu``.
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

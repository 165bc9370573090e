"""The discriminator (GAIL), reward + shaping heads (AIRL) or reward (max-ent IRL) on rlkit reward nets.

Its ``generator_reward`` is a ``RewardFn``: one batched no-grad forward per call, so it plugs
straight into ``RewardVecEnvWrapper`` and replay-buffer relabelling.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
import torch
from gymnasium import spaces
from pydantic import Field, field_validator, model_validator
from torch import nn

from rlkit.ail import losses
from rlkit.config import StrictModel
from rlkit.errors import InvalidDataError
from rlkit.reward import RewardNet, build_reward_net
from rlkit.reward.nets import ACTIVATIONS, numpy_to_tensors

LossKind = Literal["gail", "airl", "maxent"]
Batch = dict[str, torch.Tensor]


class DiscriminatorConfig(StrictModel):
    """How the discriminator is built and trained.

    ``reward_clip`` bounds the raw output (APEC's max-ent reward uses 10); ``gamma`` is AIRL's
    shaping discount; ``grad_penalty`` weighs ``losses.gradient_penalty`` (0 = off).
    ``loss_scale`` multiplies the loss: APEC's reference multiplies its max-ent loss by the
    horizon, 1000 (apec_mjc/f_div.py:101-102); under Adam that only changes how strong the
    weight decay is relative to the data (1000 with decay 1e-3 = 1 with decay ~1e-6).
    ``reward_on``: the generator is paid ``r(s)`` (``"obs"``) or ``r(s')`` (``"next_obs"``, as
    APEC's reference SAC, rl_alg/sac.py:479-480; state-only nets only). The discriminator's own
    loss always scores the states ``s`` of expert and agent transitions.
    """

    invalid_error = InvalidDataError

    loss: LossKind = "gail"
    state_only: bool = False
    hidden: tuple[Annotated[int, Field(ge=1)], ...] = (64, 64)
    activation: str = "relu"
    gamma: float = Field(0.99, ge=0.0, le=1.0)
    gail_reward: losses.GailReward = "positive"
    reward_clip: float | None = Field(None, gt=0)
    grad_penalty: float = Field(0.0, ge=0)
    lr: float = Field(3e-4, gt=0)
    weight_decay: float = Field(0.0, ge=0)
    loss_scale: float = Field(1.0, gt=0)
    reward_on: Literal["obs", "next_obs"] = "obs"
    batch_size: int = Field(256, ge=1)
    updates_per_round: int = Field(1, ge=0)

    @field_validator("activation")
    @classmethod
    def _activation(cls, value: str) -> str:
        if value not in ACTIVATIONS:
            raise InvalidDataError(f"activation must be one of {sorted(ACTIVATIONS)}, got {value!r}")
        return value

    @model_validator(mode="after")
    def _next_state_reward(self) -> DiscriminatorConfig:
        if self.reward_on == "next_obs" and not (self.state_only and self.loss != "airl"):
            raise InvalidDataError("reward_on='next_obs' needs a state-only gail or maxent "
                                   f"discriminator (got loss={self.loss!r}, state_only={self.state_only})")
        return self

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DiscriminatorConfig:
        try:
            return cls(**data)
        except InvalidDataError as error:
            raise InvalidDataError(f"not a discriminator config: {error}") from None


class Discriminator(nn.Module):
    """``reward_net`` is D's logit (GAIL), g (AIRL) or r (max-ent); ``shaping_net`` is AIRL's h."""

    def __init__(self, config: DiscriminatorConfig, reward_net: RewardNet,
                 shaping_net: RewardNet | None = None) -> None:
        super().__init__()
        if (config.loss == "airl") != (shaping_net is not None):
            raise InvalidDataError("shaping_net is needed for loss='airl' and only for it")
        self.config = config
        self.reward_net = reward_net
        self.shaping_net = shaping_net

    def score(self, batch: Batch) -> torch.Tensor:
        """The raw output: GAIL logit, AIRL ``f = g + gamma (1 - done) h(s') - h(s)``, or max-ent r."""
        args = (batch["obs"], batch["acts"], batch["next_obs"], batch["dones"])
        out = self.reward_net(*args)
        if self.config.reward_clip is not None:
            out = out.clamp(-self.config.reward_clip, self.config.reward_clip)
        if self.shaping_net is not None:
            h_now = self.shaping_net(batch["obs"], None, None, None)
            h_next = self.shaping_net(batch["next_obs"], None, None, None)
            out = out + self.config.gamma * (1.0 - batch["dones"].float()) * h_next - h_now
        return out

    def loss(self, expert: Batch, agent: Batch, expert_log_pi: torch.Tensor | None = None,
             agent_log_pi: torch.Tensor | None = None) -> tuple[torch.Tensor, dict[str, float]]:
        """The configured loss and its diagnostics; AIRL needs the generator's ``log pi`` of both."""
        e, a = self.score(expert), self.score(agent)
        if self.config.loss == "maxent":
            loss = losses.maxent_irl_loss(e, a)
            metrics = {"reward_gap": float((e.mean() - a.mean()).detach())}
        else:
            if self.config.loss == "airl":
                if expert_log_pi is None or agent_log_pi is None:
                    raise InvalidDataError("loss='airl' needs expert_log_pi and agent_log_pi")
                e, a = losses.airl_logits(e, expert_log_pi), losses.airl_logits(a, agent_log_pi)
            loss = losses.logistic_loss(e, a)
            accuracy = 0.5 * ((e > 0).float().mean() + (a < 0).float().mean())
            metrics = {"accuracy": float(accuracy)}
        loss = loss * self.config.loss_scale
        if not torch.isfinite(loss):
            raise InvalidDataError(f"the discriminator's {self.config.loss} loss is {float(loss)}")
        return loss, {"loss": float(loss.detach()), **metrics}

    def generator_reward(self, obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray,
                         dones: np.ndarray) -> np.ndarray:
        """The reward the generator is trained on (a ``RewardFn``, one forward per batch).

        GAIL: ``-log(1 - D)`` or the logit; AIRL: ``f`` (its ``- log pi`` term is the entropy
        bonus that SAC, or PPO's ``ent_coef``, already adds); max-ent: the clipped r. With
        ``reward_on="next_obs"`` the (state-only) net scores ``next_obs``.
        """
        if self.config.reward_on == "next_obs":
            obs = next_obs
        tensors = numpy_to_tensors(self.reward_net, obs, acts, next_obs, dones)
        batch = dict(zip(("obs", "acts", "next_obs", "dones"), tensors, strict=True))
        with torch.no_grad():
            out = self.score(batch)
            if self.config.loss == "gail":
                out = losses.gail_reward(out, self.config.gail_reward)
        rewards = out.to(torch.float32).cpu().numpy()
        if not np.isfinite(rewards).all():
            raise InvalidDataError("the discriminator produced NaN or inf rewards")
        return rewards


def build_discriminator(config: DiscriminatorConfig, observation_space: spaces.Space,
                        action_space: spaces.Space, seed: int | None = None) -> Discriminator:
    """Nets for an env's spaces; state-only reads ``obs`` alone, otherwise ``(obs, act)``.

    Args:
        config: the discriminator settings (``loss``, ``state_only``, ``hidden``, ``activation``,
            and the rest the ``Discriminator`` reads).
        observation_space: the env's observation space (a Box).
        action_space: the env's action space (Box or Discrete, starting at 0).
        seed: seeds the reward net's initial weights (AIRL's shaping net takes ``seed + 1``);
            ``None``: torch's global RNG.

    Returns:
        The discriminator, with a shaping net ``h(s)`` only for ``loss="airl"``.

    Raises:
        InvalidDataError: on an observation space that is not a Box, or an action space that is
            neither a Box nor a Discrete starting at 0.
    """
    inputs = ("obs",) if config.state_only else ("obs", "act")
    reward = build_reward_net(observation_space, action_space, inputs, config.hidden,
                              activation=config.activation, seed=seed)
    shaping = None
    if config.loss == "airl":
        shaping = build_reward_net(observation_space, action_space, ("obs",), config.hidden,
                                   activation=config.activation,
                                   seed=None if seed is None else seed + 1)
    return Discriminator(config, reward, shaping)

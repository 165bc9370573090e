"""The discriminator (GAIL), reward + shaping heads (AIRL) or reward (max-ent IRL) on rlkit reward nets.

Its ``generator_reward`` is a ``RewardFn``: one batched no-grad forward per call, so it plugs
straight into ``RewardVecEnvWrapper`` and replay-buffer relabelling.
"""

from __future__ import annotations

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from rlkit.ail import losses
from rlkit.ail.config import DiscriminatorConfig
from rlkit.errors import InvalidDataError
from rlkit.reward import RewardNet, build_reward_net
from rlkit.reward.augment import default_pad, shift_observations
from rlkit.reward.numpy_rewards import forward_in_chunks, numpy_to_tensors

Batch = dict[str, torch.Tensor]


class Discriminator(nn.Module):
    """The discriminator of an AIL run (``build_discriminator`` makes one for an env's spaces).

    Args:
        config: its settings: the loss (``"gail"``, ``"airl"`` or ``"maxent"``), the generator's
            reward, clipping and augmentation.
        reward_net: D's logit (GAIL), AIRL's reward term ``g`` or max-ent IRL's reward ``r``.
        shaping_net: AIRL's state-only shaping term ``h(s)``; given for ``loss="airl"`` and only
            for it.

    Raises:
        InvalidDataError: when ``shaping_net`` is given without ``loss="airl"`` or missing with
            it, or ``config.augment="shift"`` with a reward net that is not a CNN.
    """

    def __init__(self, config: DiscriminatorConfig, reward_net: RewardNet,
                 shaping_net: RewardNet | None = None) -> None:
        super().__init__()
        if (config.loss == "airl") != (shaping_net is not None):
            raise InvalidDataError("shaping_net is needed for loss='airl' and only for it")
        self.config = config
        self.reward_net = reward_net
        self.shaping_net = shaping_net
        spec = reward_net.spec
        images = spec.kind == "cnn"  # every net of a discriminator reads obs
        if config.augment == "shift" and not images:
            raise InvalidDataError("augment='shift' needs image observations (a CNN "
                                   f"discriminator); this one is kind {spec.kind!r}")
        self.shift_pad: int | None = None  # None (or a zero pad): no augmentation
        if images and config.augment != "none":
            pad = config.shift_pad if config.shift_pad is not None else default_pad(*spec.image_size)
            self.shift_pad = pad or None

    def augment(self, batch: Batch, generator: torch.Generator | None) -> Batch:
        """A training batch with its images randomly shifted by up to ``shift_pad`` pixels
        (as it is when ``shift_pad`` is None).

        Args:
            batch: tensors keyed ``obs``, ``acts``, ``next_obs``, ``dones``, the batch first.
            generator: the torch RNG the shifts are drawn from.

        Returns:
            The batch to score; ``obs`` and ``next_obs`` of a transition share their shift.
        """
        if self.shift_pad is None:
            return batch
        return shift_observations(batch, self.shift_pad, generator,
                                  self.reward_net.spec.channels_first)

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
        ``reward_on="next_obs"`` the (state-only) net scores ``next_obs``. The rows go to the
        nets' device ``INFERENCE_ROWS`` at a time (a replay buffer of images in one call is fine).
        """
        if self.config.reward_on == "next_obs":
            obs = next_obs

        def reward(*arrays: np.ndarray) -> torch.Tensor:
            tensors = numpy_to_tensors(self.reward_net, *arrays)
            out = self.score(dict(zip(("obs", "acts", "next_obs", "dones"), tensors, strict=True)))
            return losses.gail_reward(out, self.config.gail_reward) if self.config.loss == "gail" else out

        with torch.no_grad():  # chunks of INFERENCE_ROWS: image batches stay within memory
            rewards = forward_in_chunks(reward, [obs, acts, next_obs, dones])
        if not np.isfinite(rewards).all():
            raise InvalidDataError("the discriminator produced NaN or inf rewards")
        return rewards


def build_discriminator(config: DiscriminatorConfig, observation_space: spaces.Space,
                        action_space: spaces.Space, seed: int | None = None) -> Discriminator:
    """Nets for an env's spaces; state-only reads ``obs`` alone, otherwise ``(obs, act)``.

    Args:
        config: the discriminator settings (``loss``, ``state_only``, ``hidden``, ``activation``,
            ``linear_first``, ``encoder``, and the rest the ``Discriminator`` reads).
        observation_space: the env's observation space (a Box; uint8 images, channel-first
            frame stacks or channel-last frames, get convolutional nets).
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
                              activation=config.activation, seed=seed, encoder=config.encoder,
                              linear_first=config.linear_first)
    shaping = None
    if config.loss == "airl":
        shaping = build_reward_net(observation_space, action_space, ("obs",), config.hidden,
                                   activation=config.activation,
                                   seed=None if seed is None else seed + 1, encoder=config.encoder,
                                   linear_first=config.linear_first)
    return Discriminator(config, reward, shaping)

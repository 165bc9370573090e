"""SAC from pixels, DrQ-style, inside SB3: ``DrQSAC("CnnPolicy", env)``.

What it adds to SB3's SAC (DrQ, Kostrikov et al. 2020, which is SAC; the APEC reference's
DrQ-v2/DAC agents, ``apec_dmc/src/agent/drqv2.py`` and ``dac.py``, share these parts):

- ``PixelEncoder``: the reference's conv stack (``agent/encoder.py``: 3x3 convs of 32 channels,
  ReLU, the first of stride 2, input ``x / 255 - 0.5``) and DrQ's trunk to ``features_dim``
  (Linear, LayerNorm, Tanh; 50 in the reference). It reads channel-first uint8 frame stacks
  ``(k * 3, H, W)``; SB3's preprocessing divides by 255.
- Encoder ownership as in DrQ/DrQ-v2 (``share_encoder=True``): one encoder, in the critic's
  optimiser, trained by the critic loss alone; the actor reads its features detached. The target
  critic keeps its own encoder, Polyak-averaged with the rest of the critic (DrQ; DrQ-v2 feeds
  the online encoder's next-state features to a target that has none). SB3's own
  ``share_features_extractor=True`` does the opposite (the actor's optimiser trains the shared
  extractor, the critic's excludes it); ``share_encoder=False`` gives actor and critic an
  encoder each, each trained by its own loss (SB3's default layout).
- Random-shift augmentation (``rlkit.reward.augment.random_shift``, pad 4 as the reference) of
  every sampled batch, observations and next observations independently, once per gradient step:
  actor, critic and target see the same shifted images.
- Each gradient step encodes the batch 3 times (twice with the fixed ``keypoints`` encoder) and
  backpropagates through one encoder once (SB3's ``SAC.train`` encodes 5 times and backpropagates
  twice; features are reused here).

The replay buffer is SB3's own (uint8 frames, relabelled and saved by rlkit as for any SAC); its
n-step returns are SB3's ``n_steps`` (the reference uses 3; 1 by default here as in SB3). Nothing
of this class is pickled: the policy is the alias ``"CnnPolicy"`` and its settings are plain data,
so ``rlkit.persistence.agents`` saves and loads it. The augmentation RNG is seeded from ``seed``
and starts again from it on load.

Defaults (frame 64x64): encoder strides ``(2, 2, 1, 1)`` where the reference's 84x84 frames take
``(2, 1, 1, 1)``; features 50; buffer 100k steps; the rest SB3's SAC defaults (lr 3e-4, batch 256,
tau 0.005, 1-step returns: DrQ's SAC is 1-step; the reference's DrQ-v2 uses lr 1e-4, tau 0.01,
3-step returns, an update every 2 env steps and action repeat 2, all settable here or in the env).

Why this and not SB3's ``SAC("CnnPolicy")`` (NatureCNN, an extractor each for actor and critic,
no augmentation), measured by ``benchmarks/pixel_generator.py`` on ``rlkit/PixelPointMass-v0``
(9x64x64 stacks, batch 64, one thread, on 2 cores shared with other jobs, so the absolute numbers
are low and noisy; the ratio held): DrQSAC makes 1.23x to 1.33x SB3's gradient updates per second
(2.04 vs 1.66, 1.92 vs 1.48 and 0.61 vs 0.46 updates/s in three runs) and collects env steps at
0.81x to 0.99x SB3's rate (493 vs 541, 790 vs 797 and 145 vs 178 steps/s; a policy forward alone
102 vs 106 per second: the encoders cost about the same per frame). With the reference's
strides ``(2, 1, 1, 1)`` (a 25x25 map instead of 11x11, ~3x the conv work) it makes 0.88x SB3's
updates, hence the extra stride at 64x64. It also brings what DrQ showed matters from pixels:
augmentation and an encoder trained by the critic; and it stays an SB3 SAC, so rlkit's relabelling,
AIRL's ``log pi``, replay persistence and no-pickle checkpoints work unchanged.

Learning was not what decided it: 12k env steps on PixelPointMass with the true reward (1 seed,
batch 32, an update every 2 steps after 1k random steps, both niced on the shared cores) is all
this CPU allowed, and neither variant had learned by then (deterministic evaluation return, 5
episodes: DrQSAC -129 at 0, -123 at 4k, -126 at 8k, -188 at 12k steps; SB3 -99, -127, -147,
-132; doing nothing scores about -100). Wall clock: DrQSAC 12k steps in 3,525 s, SB3 8k in 3,361 s
and 12k in 3,994 s (1.58 vs 1.08 updates/s while both ran).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from gymnasium import spaces
from stable_baselines3 import SAC
from stable_baselines3.common.distributions import SquashedDiagGaussianDistribution
from stable_baselines3.common.policies import BasePolicy, ContinuousCritic
from stable_baselines3.common.preprocessing import is_image_space
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.type_aliases import Schedule
from stable_baselines3.common.utils import polyak_update
from stable_baselines3.sac.policies import LOG_STD_MAX, LOG_STD_MIN, Actor, SACPolicy
from torch import nn

from rlkit.errors import InvalidDataError
from rlkit.factories.keypoints import ColourKeypoints
from rlkit.reward.augment import random_shift

__all__ = ["DrQSAC", "DrQCnnPolicy", "ENCODERS", "ENCODER_SETTINGS", "PixelEncoder", "is_pixel_space"]



def is_pixel_space(space: spaces.Space) -> bool:
    """Whether ``DrQSAC`` can read this observation space.

    Args:
        space: an observation space.

    Returns:
        True for a uint8 Box of 3 dimensions bounded by 0 and 255 (SB3's image test, either
        channel order; SB3 transposes channel-last envs itself).
    """
    return isinstance(space, spaces.Box) and is_image_space(space, check_channels=False)


class PixelEncoder(BaseFeaturesExtractor):
    """Conv stack + Linear/LayerNorm/Tanh trunk for channel-first images scaled to ``[0, 1]``.

    Args:
        observation_space: a channel-first image Box ``(C, H, W)`` (as SB3's policy sees it).
        features_dim: the trunk's output width.
        channels: output channels of every conv layer.
        strides: one stride per 3x3 conv layer.
    """

    def __init__(self, observation_space: spaces.Box, features_dim: int = 50, channels: int = 32,
                 strides: Sequence[int] = (2, 2, 1, 1)) -> None:
        super().__init__(observation_space, features_dim)
        shape = observation_space.shape
        if len(shape) != 3 or not strides or min(strides) < 1 or channels < 1 or features_dim < 1:
            raise InvalidDataError(f"PixelEncoder needs a (C, H, W) space, strides >= 1, channels >= 1 "
                                   f"and features_dim >= 1; got {shape}, {list(strides)}, {channels}, "
                                   f"{features_dim}")
        layers: list[nn.Module] = []
        width = shape[0]
        for stride in strides:
            layers += [nn.Conv2d(width, channels, 3, stride=stride), nn.ReLU()]
            width = channels
        self.convs = nn.Sequential(*layers, nn.Flatten())
        try:
            with torch.no_grad():
                flat = self.convs(torch.zeros(1, *shape)).shape[1]
        except RuntimeError:  # a conv's input smaller than its kernel
            raise InvalidDataError(f"frames of {tuple(shape[1:])} are too small for {len(strides)} "
                                   f"3x3 convs of strides {list(strides)}; pass fewer or smaller "
                                   "strides") from None
        self.trunk = nn.Sequential(nn.Linear(flat, features_dim), nn.LayerNorm(features_dim), nn.Tanh())

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.trunk(self.convs(observations - 0.5))


ENCODERS = {"conv": PixelEncoder, "keypoints": ColourKeypoints}  # DrQCnnPolicy's ``encoder``
ENCODER_SETTINGS = {  # each encoder's settings, in policy_kwargs' features_extractor_kwargs
    "conv": ("features_dim", "channels", "strides"),
    "keypoints": ("colours", "features_dim"),
}


class DrQCnnPolicy(SACPolicy):
    """SAC's actor and critic on a pixel encoder; ``share_encoder`` as in the module docstring.

    Args:
        observation_space: the env's (image) observation space, as for SB3's ``SACPolicy``.
        action_space: the env's continuous action space.
        lr_schedule: the learning rate by remaining progress, as for SB3's ``SACPolicy``.
        share_encoder: one encoder trained by the critic, read detached by the actor (DrQ), or
            one per network.
        encoder: ``"conv"`` (``PixelEncoder``, learned) or ``"keypoints"``
            (``rlkit.factories.keypoints.ColourKeypoints``, fixed: nothing to train; use it with
            ``augment_pad=0``, a shift moves every centroid).
        features_extractor_kwargs: the encoder's settings (``ENCODER_SETTINGS``): ``features_dim``,
            ``channels``, ``strides`` for ``conv``; ``colours`` for ``keypoints``.
        **kwargs: SB3's ``SACPolicy`` arguments (``net_arch``, ``n_critics``, ...).

    Raises:
        InvalidDataError: on an unknown encoder or setting, or SB3's extractor arguments.
    """

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Box,
                 lr_schedule: Schedule, share_encoder: bool = True, encoder: str = "conv",
                 features_extractor_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        for name in ("features_extractor_class", "share_features_extractor"):
            if name in kwargs:
                raise InvalidDataError(f"DrQCnnPolicy sets {name} itself (its encoder is the one "
                                       "encoder names, shared as share_encoder says); leave it unset")
        if encoder not in ENCODERS:
            raise InvalidDataError(f"encoder must be one of {list(ENCODERS)}, got {encoder!r}")
        unknown = sorted(set(features_extractor_kwargs or {}) - set(ENCODER_SETTINGS[encoder]))
        if unknown:
            raise InvalidDataError(f"features_extractor_kwargs {unknown} are not settings of the "
                                   f"{encoder!r} encoder {list(ENCODER_SETTINGS[encoder])}")
        self.share_encoder = share_encoder
        self.encoder = encoder
        super().__init__(observation_space, action_space, lr_schedule,
                         features_extractor_class=ENCODERS[encoder],
                         features_extractor_kwargs=features_extractor_kwargs,
                         share_features_extractor=False, **kwargs)

    def _build(self, lr_schedule: Schedule) -> None:
        if self.share_encoder:
            encoder = self.make_features_extractor()
            self.actor = self.make_actor(features_extractor=encoder)
            self.critic = self.make_critic(features_extractor=encoder)
            actor_params = [p for name, p in self.actor.named_parameters()
                            if not name.startswith("features_extractor.")]
        else:
            self.actor = self.make_actor()
            self.critic = self.make_critic()
            actor_params = list(self.actor.parameters())
        self.actor.optimizer = self.optimizer_class(actor_params, lr=lr_schedule(1),  # type: ignore[call-arg]
                                                    **self.optimizer_kwargs)
        self.critic.optimizer = self.optimizer_class(self.critic.parameters(), lr=lr_schedule(1),  # type: ignore[call-arg]
                                                     **self.optimizer_kwargs)
        self.critic_target = self.make_critic()
        self.critic_target.load_state_dict(self.critic.state_dict())
        self.critic_target.set_training_mode(False)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.pop("features_extractor_class", None)
        data.pop("share_features_extractor", None)
        data["share_encoder"] = self.share_encoder
        data["encoder"] = self.encoder
        return data


class DrQSAC(SAC):
    """SB3's SAC with ``DrQCnnPolicy`` as ``"CnnPolicy"`` and augmented, feature-reusing updates.

    Args:
        policy: ``"CnnPolicy"`` (or the class).
        env: the env or VecEnv of image observations.
        augment_pad: the random shift's largest offset in pixels (0: no augmentation; required
            with ``policy_kwargs`` ``encoder: keypoints``).
        buffer_size: replay capacity in transitions (frames are stored twice per transition by
            SB3's buffer: 100k stacks of 9x64x64 take 7.4 GB when full).
        **kwargs: SB3's SAC arguments; gSDE is not supported.

    Raises:
        InvalidDataError: on a negative ``augment_pad`` or ``use_sde=True``.
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {"CnnPolicy": DrQCnnPolicy}
    policy: DrQCnnPolicy

    def __init__(self, policy: str | type[DrQCnnPolicy], env: Any, augment_pad: int = 4,
                 buffer_size: int = 100_000, **kwargs: Any) -> None:
        if augment_pad < 0:
            raise InvalidDataError(f"augment_pad must be >= 0, got {augment_pad}")
        if kwargs.get("use_sde"):
            raise InvalidDataError("DrQSAC does not support gSDE (use_sde=True)")
        if augment_pad and (kwargs.get("policy_kwargs") or {}).get("encoder") == "keypoints":
            raise InvalidDataError(f"augment_pad={augment_pad} with the keypoints encoder: a shift moves "
                                   "every keypoint; set augment_pad=0")
        self.augment_pad = augment_pad
        super().__init__(policy, env, buffer_size=buffer_size, **kwargs)

    def _setup_model(self) -> None:
        super()._setup_model()
        seed = self.seed if isinstance(self.seed, int) else int(np.random.SeedSequence().generate_state(1)[0])
        self.augment_rng = torch.Generator().manual_seed(seed)

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "augment_rng"]

    def _augment(self, images: torch.Tensor) -> torch.Tensor:
        if self.augment_pad == 0:
            return images
        return random_shift(images, self.augment_pad, self.augment_rng)

    def train(self, gradient_steps: int, batch_size: int = 64) -> None:
        """SB3's SAC update (same losses, entropy tuning, target updates and logs) on augmented
        batches, with the encoder features computed once per batch (see the module docstring)."""
        self.policy.set_training_mode(True)
        optimizers = [self.actor.optimizer, self.critic.optimizer]
        if self.ent_coef_optimizer is not None:
            optimizers += [self.ent_coef_optimizer]
        self._update_learning_rate(optimizers)
        ent_coef_losses, ent_coefs, actor_losses, critic_losses = [], [], [], []
        shared = self.policy.share_encoder
        fixed = self.policy.encoder == "keypoints"  # no weights: the target's encoder is the actor's
        for gradient_step in range(gradient_steps):
            data = self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)  # type: ignore[union-attr]
            discounts = data.discounts if data.discounts is not None else self.gamma
            obs, next_obs = self._augment(data.observations), self._augment(data.next_observations)
            critic_features = self.critic.extract_features(obs, self.critic.features_extractor)
            with torch.no_grad():
                target = self.critic_target
                target_features = target.extract_features(next_obs, target.features_extractor)
                next_actor_features = (target_features if fixed else  # one function: encode once
                                       self.actor.extract_features(next_obs, self.actor.features_extractor))
            actor_features = (critic_features.detach() if shared
                              else self.actor.extract_features(obs, self.actor.features_extractor))
            actions_pi, log_prob = _action_log_prob(self.actor, actor_features)
            log_prob = log_prob.reshape(-1, 1)

            ent_coef_loss = None
            if self.ent_coef_optimizer is not None and self.log_ent_coef is not None:
                ent_coef = torch.exp(self.log_ent_coef.detach())
                assert isinstance(self.target_entropy, float)
                ent_coef_loss = -(self.log_ent_coef * (log_prob + self.target_entropy).detach()).mean()
                ent_coef_losses.append(ent_coef_loss.item())
                self.ent_coef_optimizer.zero_grad()
                ent_coef_loss.backward()
                self.ent_coef_optimizer.step()
            else:
                ent_coef = self.ent_coef_tensor
            ent_coefs.append(ent_coef.item())

            with torch.no_grad():
                next_actions, next_log_prob = _action_log_prob(self.actor, next_actor_features)
                next_q = torch.cat(_q_values(self.critic_target, target_features, next_actions), dim=1)
                next_q = next_q.min(dim=1, keepdim=True).values - ent_coef * next_log_prob.reshape(-1, 1)
                target_q = data.rewards + (1 - data.dones) * discounts * next_q
            current_q = _q_values(self.critic, critic_features, data.actions)
            critic_loss = 0.5 * sum(F.mse_loss(q, target_q) for q in current_q)
            assert isinstance(critic_loss, torch.Tensor)
            critic_losses.append(critic_loss.item())
            self.critic.optimizer.zero_grad()
            critic_loss.backward()
            self.critic.optimizer.step()

            q_pi = torch.cat(_q_values(self.critic, critic_features.detach(), actions_pi), dim=1)
            actor_loss = (ent_coef * log_prob - q_pi.min(dim=1, keepdim=True).values).mean()
            actor_losses.append(actor_loss.item())
            self.actor.optimizer.zero_grad()
            actor_loss.backward()
            self.actor.optimizer.step()

            if gradient_step % self.target_update_interval == 0:
                polyak_update(self.critic.parameters(), self.critic_target.parameters(), self.tau)
                polyak_update(self.batch_norm_stats, self.batch_norm_stats_target, 1.0)

        self._n_updates += gradient_steps
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/ent_coef", np.mean(ent_coefs))
        self.logger.record("train/actor_loss", np.mean(actor_losses))
        self.logger.record("train/critic_loss", np.mean(critic_losses))
        if ent_coef_losses:
            self.logger.record("train/ent_coef_loss", np.mean(ent_coef_losses))


def _action_log_prob(actor: Actor, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``Actor.action_log_prob`` from features already extracted (no gSDE)."""
    latent = actor.latent_pi(features)
    log_std = torch.clamp(actor.log_std(latent), LOG_STD_MIN, LOG_STD_MAX)  # type: ignore[operator]
    dist = actor.action_dist
    assert isinstance(dist, SquashedDiagGaussianDistribution)  # DrQSAC refuses gSDE
    return dist.log_prob_from_params(actor.mu(latent), log_std)


def _q_values(critic: ContinuousCritic, features: torch.Tensor, actions: torch.Tensor) -> list[torch.Tensor]:
    """``ContinuousCritic.forward`` from features already extracted."""
    inputs = torch.cat([features, actions], dim=1)
    return [q_net(inputs) for q_net in critic.q_networks]

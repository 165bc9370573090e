"""SB3 generator glue: build PPO/SAC on the relabelled env, its ``log pi`` for AIRL, buffer relabelling.

On image observations (uint8 frame stacks) ``"sac"`` builds ``DrQSAC`` (``rlkit.factories.pixel_sac``:
SB3's SAC with a conv encoder trained by the critic and random-shift augmentation).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3 import SAC
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from rlkit.errors import InvalidDataError
from rlkit.factories.algorithms import ALGORITHMS
from rlkit.factories.pixel_sac import DrQSAC, is_pixel_space
from rlkit.types import RewardFn
from rlkit.wrappers import relabel_replay_buffer

Generator = OnPolicyAlgorithm | OffPolicyAlgorithm
GeneratorFactory = Callable[[VecEnv], Generator]
GENERATORS = ("ppo", "sac", "drqsac")  # lower-case class names; make_generator's ``algo``


def make_generator(algo: str, venv: VecEnv, steps_per_round: int, seed: int,
                   device: str | torch.device = "cpu", kwargs: Mapping[str, Any] | None = None) -> Generator:
    """PPO or SAC with an MLP policy, or on image observations SAC from pixels (``DrQSAC``). PPO's
    rollout defaults to one round of steps, so each round is exactly one rollout collected under
    one (fixed) discriminator.

    Args:
        algo: ``"ppo"``, ``"sac"`` (``DrQSAC`` when the observations are images) or ``"drqsac"``
            (images only), any case.
        venv: the env it trains on, normally wrapped to pay the discriminator's reward.
        steps_per_round: env steps per AIL round, summed over envs; PPO's ``n_steps`` defaults to
            ``steps_per_round // venv.num_envs`` (at least 2) and its ``batch_size`` to
            ``min(64, n_steps * num_envs)``.
        seed: SB3's seed.
        device: where the networks run (a name SB3 takes, or a ``torch.device``).
        kwargs: further SB3 constructor arguments; they override the PPO defaults above. For
            ``DrQSAC`` also ``augment_pad`` and ``policy_kwargs`` ``share_encoder``, ``encoder``
            (``conv`` or ``keypoints``) and ``features_extractor_kwargs`` (the encoder's settings).

    Returns:
        The untrained SB3 algorithm.

    Raises:
        InvalidDataError: when ``algo`` is not one of ``GENERATORS``, or is ``"drqsac"`` on
            observations that are not images.
    """
    name = algo.lower()
    if name not in GENERATORS:
        raise InvalidDataError(f"generator must be one of {list(GENERATORS)}, got {algo!r}")
    options = dict(kwargs or {})
    pixels = is_pixel_space(venv.observation_space)
    if name == "drqsac" or (name == "sac" and pixels):
        if not pixels:
            raise InvalidDataError(f"generator {algo!r} needs image observations (uint8, 3 dimensions); "
                                   f"got {venv.observation_space}")
        return DrQSAC("CnnPolicy", venv, seed=seed, device=device, **options)
    if name == "ppo":
        n_steps = options.setdefault("n_steps", max(steps_per_round // venv.num_envs, 2))
        options.setdefault("batch_size", min(64, n_steps * venv.num_envs))
    generator = ALGORITHMS[name]("MlpPolicy", venv, seed=seed, device=device, **options)
    assert isinstance(generator, OnPolicyAlgorithm | OffPolicyAlgorithm)
    return generator


def policy_log_prob(generator: Generator, obs: np.ndarray, acts: np.ndarray) -> torch.Tensor:
    """``log pi(a | s)`` of env actions under the current generator (no grad), for AIRL's logit.

    Args:
        generator: a SAC or on-policy (PPO) SB3 generator.
        obs: a batch of observations, ``(n, *obs_shape)``.
        acts: the actions taken, in the env's units, ``(n, *act_shape)``; for SAC they are
            scaled to the policy's ``[-1, 1]`` and clipped to it before scoring.

    Returns:
        ``log pi(a | s)``, shape ``(n,)``, on the policy's device.

    Raises:
        InvalidDataError: when ``generator`` is neither a SAC nor an on-policy algorithm.
    """
    policy = generator.policy
    obs_tensor, _ = policy.obs_to_tensor(obs)
    with torch.no_grad():
        if isinstance(generator, SAC):
            scaled = np.clip(policy.scale_action(np.asarray(acts)), -1.0, 1.0)
            actor = generator.actor
            mean, log_std, sde = actor.get_action_dist_params(obs_tensor)  # sde: {} without gSDE
            dist = actor.action_dist.proba_distribution(mean, log_std, **sde)
            log_prob = dist.log_prob(torch.as_tensor(scaled, device=policy.device).float())
        elif isinstance(generator, OnPolicyAlgorithm):
            acts_tensor = torch.as_tensor(np.asarray(acts), device=policy.device)
            if isinstance(generator.action_space, spaces.Box):
                acts_tensor = acts_tensor.float()
            _, log_prob, _ = generator.policy.evaluate_actions(obs_tensor, acts_tensor)
        else:
            raise InvalidDataError(f"AIRL needs a PPO/SAC-like generator, got {type(generator).__name__}")
    return log_prob.reshape(-1)


def relabel_generator_buffer(generator: Generator, reward_fn: RewardFn) -> int:
    """Give an off-policy generator's stored transitions the current reward (on-policy: no-op).

    Args:
        generator: the SB3 generator; only an off-policy one has a buffer to relabel.
        reward_fn: the current reward (``Discriminator.generator_reward``), one batched call per
            chunk of stored transitions.

    Returns:
        The transitions relabelled (0 for an on-policy generator).

    Raises:
        StateError: when an off-policy generator has no replay buffer.
    """
    if not isinstance(generator, OffPolicyAlgorithm):
        return 0
    return relabel_replay_buffer(generator, reward_fn)

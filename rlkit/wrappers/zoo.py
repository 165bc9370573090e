"""Learned rewards in rl-zoo3: wrapper classes that its hyperparameter YAML names by class path.

rl-zoo3's ``env_wrapper`` and ``vec_env_wrapper`` entries hold a dotted class path with keyword
arguments, never a callable object, so these classes load the saved reward model themselves
from its directory (what ``save_reward_model`` / ``rlkit train-reward`` write)::

    Pendulum-v1:
      vec_env_wrapper:
        - rlkit.wrappers.zoo.LearnedRewardVecWrapper:
            reward_model: runs/train-reward/model

Where rl-zoo3 puts them (``ExperimentManager.create_envs``): ``make_vec_env`` wraps each env in a
``Monitor`` first and in ``env_wrapper`` after it, and ``vec_env_wrapper`` wraps the VecEnv of
those Monitors, before ``VecNormalize`` and frame stacking. Either way the Monitor is below the
learned reward: ``monitor.csv``, SB3's ``rollout/ep_rew_mean`` and the evaluation callback report
the env's TRUE return, while the agent (and ``VecNormalize`` with ``normalize: true``) gets the
learned one. See ``docs/zoo.md``.
"""

from __future__ import annotations

import os

import gymnasium as gym
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv

from rlkit.devices import resolve_device
from rlkit.reward.serialization import load_reward_model
from rlkit.types import RewardFn
from rlkit.wrappers.gym_wrapper import RewardWrapper, validate_mode
from rlkit.wrappers.vec_wrapper import RewardVecEnvWrapper


def load_reward_fn(
    reward_model: str | os.PathLike[str],
    observation_space: spaces.Space,
    action_space: spaces.Space,
    device: str,
) -> RewardFn:
    """The reward model saved in a folder, as a numpy ``RewardFn``, checked against the env.

    Args:
        reward_model: the folder ``save_reward_model`` wrote (``model.json`` + ``model.safetensors``).
        observation_space: the env's observation space the model must read.
        action_space: the env's action space the model must read.
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``, where the model runs.

    Returns:
        The model's reward, normalised by its saved (frozen) statistics when it has them.

    Raises:
        IncompatibleModelError: the model reads other shapes than the env's (the first named).
        FileFormatError: the folder holds no readable reward model.
    """
    loaded = load_reward_model(reward_model, observation_space, action_space,
                               device=str(resolve_device(device)))
    return loaded.reward_fn()


class LearnedRewardWrapper(RewardWrapper):
    """``env_wrapper``: one env's reward replaced or shaped by a saved model, one step per call.

    The true reward stays in ``info["original_reward"]`` and in the Monitor below. ``device``
    defaults to the CPU: a batch of one per step costs more on a GPU, and every env of a
    ``SubprocVecEnv`` loads its own copy.

    Args:
        env: the env rl-zoo3 built (already inside its ``Monitor``).
        reward_model: the saved model's folder.
        mode: ``replace`` (the learned reward) or ``add`` (the env's reward plus the learned one).
        device: where the model runs.
    """

    def __init__(self, env: gym.Env, reward_model: str, mode: str = "replace",
                 device: str = "cpu") -> None:
        reward_fn = load_reward_fn(reward_model, env.observation_space, env.action_space, device)
        super().__init__(env, reward_fn, validate_mode(mode))


class LearnedRewardVecWrapper(RewardVecEnvWrapper):
    """``vec_env_wrapper``: the same over all envs, one batched model call per step.

    The faster choice; ``device: auto`` runs the model on CUDA when torch sees a GPU.

    Args:
        venv: the VecEnv of rl-zoo3's monitored envs.
        reward_model: the saved model's folder.
        mode: ``replace`` (the learned reward) or ``add`` (the env's reward plus the learned one).
        device: where the model runs.
    """

    def __init__(self, venv: VecEnv, reward_model: str, mode: str = "replace",
                 device: str = "auto") -> None:
        reward_fn = load_reward_fn(reward_model, venv.observation_space, venv.action_space, device)
        super().__init__(venv, reward_fn, validate_mode(mode))

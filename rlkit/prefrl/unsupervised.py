"""PEBBLE's unsupervised pre-training: before the first labels, an off-policy agent explores by
maximising a particle estimate of the entropy of the states it visits, so the first queries compare
diverse behaviour instead of random flailing (Lee et al., ICML 2021, section 4.1; the estimator is
APT's, Liu & Abbeel 2021).

``StateEntropyReward`` pays each transition the distance from its next observation to that
observation's k-th nearest neighbour among the observations in the agent's replay buffer (a far
neighbour: a rarely visited state). The loop normalises it with a running mean and standard
deviation (as PEBBLE's ``s_ent_stats``) and, once the agent has trained on it for
``query.unsupervised_steps`` steps, re-initialises the critic (PEBBLE's ``reset_critic``): the
values it learnt belong to the exploration reward, not to the learned one that replaces it.

How this follows PEBBLE (github rll-research/BPref, ``train_PEBBLE.py``, ``agent/sac.py``): the
same estimator, k and normalisation; PEBBLE draws each update's intrinsic rewards anew against the
whole buffer, here each transition is paid once, against the buffer as it is when the transition
is first sampled (``LazyRewardReplayBuffer``), so early transitions keep the reward of a smaller
buffer; PEBBLE measures the batch's observations, this their next observations (the reward of
arriving somewhere new).
"""

from __future__ import annotations

import numpy as np
import torch
from stable_baselines3.common.buffers import ReplayBuffer

from rlkit.errors import InvalidDataError

__all__ = ["StateEntropyReward", "reset_critic"]


class StateEntropyReward:
    """A ``RewardFn``: each next observation's (k+1)-th smallest distance to the observations
    stored in ``buffer``, i.e. its distance to its k-th nearest other state when it is stored there
    itself, as every transition the agent is paid for is (it is labelled from the buffer).

    Args:
        buffer: the agent's replay buffer, read at each call (it grows as the agent explores).
        k: which neighbour (PEBBLE: 5); fewer stored observations: the farthest one.
        chunk: buffer rows per distance block (bounds the memory of one call).

    Raises:
        InvalidDataError: when ``k < 1``.
    """

    def __init__(self, buffer: ReplayBuffer, k: int = 5, chunk: int = 16_384) -> None:
        if k < 1:
            raise InvalidDataError(f"k must be >= 1, got {k}")
        self.buffer, self.k, self.chunk = buffer, k, chunk

    def __call__(self, obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray,
                 dones: np.ndarray) -> np.ndarray:
        """The k-NN distances of ``next_obs``, float32, one per row.

        Args:
            obs, acts, dones: unused (a ``RewardFn``'s signature).
            next_obs: the observations to score, ``(n, *obs_shape)``.

        Returns:
            ``(n,)`` distances; 0 while the buffer holds no observation.
        """
        queries = torch.as_tensor(np.asarray(next_obs, np.float32).reshape(len(next_obs), -1))
        size = self.buffer.buffer_size if self.buffer.full else self.buffer.pos
        if size == 0:
            return np.zeros(len(queries), np.float32)
        stored = self.buffer.observations[:size].reshape(size * self.buffer.n_envs, -1)
        k = min(self.k + 1, len(stored))  # + 1: a stored query's nearest neighbour is itself
        nearest = torch.full((len(queries), 0), 0.0)
        for start in range(0, len(stored), self.chunk):
            block = torch.as_tensor(np.asarray(stored[start:start + self.chunk], np.float32))
            distances = torch.cat([nearest, torch.cdist(queries, block)], dim=1)
            nearest = torch.topk(distances, min(k, distances.shape[1]), dim=1, largest=False).values
        return nearest[:, -1].numpy().astype(np.float32)


def reset_critic(agent: object) -> None:
    """Re-initialise an SB3 SAC/TD3-style agent's critic, copy it to its target and clear the
    critic optimizer's moments (the actor and the entropy coefficient are kept).

    Args:
        agent: an SB3 off-policy algorithm with ``critic``, ``critic_target`` and
            ``critic.optimizer``.

    Raises:
        InvalidDataError: when the agent has no critic.
    """
    critic = getattr(agent, "critic", None)
    target = getattr(agent, "critic_target", None)
    if critic is None or target is None:
        raise InvalidDataError(f"{type(agent).__name__} has no critic to reset")
    for module in critic.modules():
        if module is not critic and hasattr(module, "reset_parameters"):
            module.reset_parameters()
    target.load_state_dict(critic.state_dict())
    critic.optimizer.state.clear()

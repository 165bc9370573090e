"""Per-agent learned or shaped rewards for a PettingZoo ``ParallelEnv`` (e.g. M3HF reward pools)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np
from pettingzoo.utils.env import ActionType, AgentID, ObsType, ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

from rlkit.errors import InvalidDataError
from rlkit.types import RewardFn
from rlkit.wrappers.gym_wrapper import RewardMode, validate_array_space, validate_mode
from rlkit.wrappers.reward_batch import transition_rewards


class PettingZooRewardWrapper(BaseParallelWrapper[AgentID, ObsType, ActionType]):
    """Replace or shape the reward of the agents named in ``reward_fns``; others keep the env's.

    Each agent's ``reward_fn`` sees that agent's own transition as a batch of one (``dones`` is its
    true termination). Its action is the one the env carried out when the env says so through
    ``actions_in_effect()`` (one per possible agent; Overcooked's macros run over several steps,
    ignoring what is sent meanwhile, and a busy agent may send nothing), else the action sent.
    The env reward stays in ``info[agent]["original_reward"]``, and when an agent's episode ends
    ``info[agent]["original_episode"] = {"r": ..., "l": ...}`` holds its true return and length.
    Everything else is the wrapped ``ParallelEnv``'s API, unchanged.

    At that episode end ``info[agent]["episode"]`` is also set to SB3's ``{"r", "l", "t"}`` with the
    TRUE return (unless the env reported one already), and an agent with a ``reward_fn`` gets
    ``info[agent]["learned_episode_return"]``, as ``RewardVecEnvWrapper`` does. SuperSuit's
    ``pettingzoo_env_to_vec_env_v1`` + ``concat_vec_envs_v1`` pass infos through, so SB3's
    ``rollout/ep_rew_mean`` shows each agent's true return with no monitor. Do not add SB3's
    ``VecMonitor`` on top: it sums the rewards it sees (the learned ones) and overwrites
    ``"episode"`` with that sum.

    Args:
        env: the ``ParallelEnv`` to wrap.
        reward_fns: a reward per agent it replaces or shapes, each a name in the env's
            ``possible_agents`` whose observations are arrays.
        mode: ``"replace"`` pays each named agent ``reward_fn``'s reward, ``"add"`` the env's
            plus it.

    Raises:
        InvalidDataError: on an unknown ``mode``, an agent not in ``possible_agents`` or a Dict
            or Tuple observation space.
    """

    def __init__(
        self,
        env: ParallelEnv[AgentID, ObsType, ActionType],
        reward_fns: Mapping[AgentID, RewardFn],
        mode: RewardMode = "replace",
    ) -> None:
        super().__init__(env)
        self.mode = validate_mode(mode)
        self.set_reward_fns(reward_fns)
        for agent in self.reward_fns:
            validate_array_space(env.observation_space(agent), f"observation_space({agent!r})")
        self._in_effect = getattr(env, "actions_in_effect", None)
        self._prev_obs: dict[AgentID, np.ndarray] = {}
        self._returns: dict[AgentID, float] = {}
        self._learned_returns: dict[AgentID, float] = {}
        self._lengths: dict[AgentID, int] = {}
        self._t_start = time.time()

    def set_reward_fns(self, reward_fns: Mapping[AgentID, RewardFn]) -> None:
        """Swap the per-agent reward models between steps (M3HF reweights its pools each phase)."""
        unknown = [agent for agent in reward_fns if agent not in self.env.possible_agents]
        if unknown:
            raise InvalidDataError(
                f"reward_fns names agents {unknown} that are not in possible_agents "
                f"{list(self.env.possible_agents)}"
            )
        self.reward_fns = dict(reward_fns)

    # Explicit pass-throughs: ParallelEnv declares these names, so __getattr__ alone is fragile.
    @property
    def agents(self) -> list[AgentID]:
        return self.env.agents

    @property
    def possible_agents(self) -> list[AgentID]:
        return self.env.possible_agents

    @property
    def metadata(self) -> dict[str, Any]:
        return self.env.metadata

    @property
    def render_mode(self) -> str | None:
        return getattr(self.env, "render_mode", None)

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, ObsType], dict[AgentID, dict[str, Any]]]:
        obs, infos = self.env.reset(seed=seed, options=options)
        self._prev_obs = {agent: np.array(obs[agent]) for agent in self.reward_fns if agent in obs}
        self._returns = dict.fromkeys(self.env.agents, 0.0)
        self._learned_returns = dict.fromkeys(self.env.agents, 0.0)
        self._lengths = dict.fromkeys(self.env.agents, 0)
        return obs, infos

    def step(
        self, actions: dict[AgentID, ActionType]
    ) -> tuple[
        dict[AgentID, ObsType],
        dict[AgentID, float],
        dict[AgentID, bool],
        dict[AgentID, bool],
        dict[AgentID, dict[str, Any]],
    ]:
        obs, env_rewards, terminations, truncations, infos = self.env.step(actions)
        if self._in_effect is not None:  # what the env carried out, asked once per step
            actions = dict(zip(self.env.possible_agents, self._in_effect(), strict=True))
        rewards: dict[AgentID, float] = {}
        new_infos: dict[AgentID, dict[str, Any]] = dict(infos)  # keeps extra keys like "common"
        for agent, env_reward in env_rewards.items():
            true_reward = float(env_reward)
            reward = true_reward
            if agent in self.reward_fns:
                learned = self._learned_reward(agent, actions, obs, terminations)
                reward = learned if self.mode == "replace" else true_reward + learned
                self._learned_returns[agent] = self._learned_returns.get(agent, 0.0) + learned
            rewards[agent] = reward

            self._returns[agent] = self._returns.get(agent, 0.0) + true_reward
            self._lengths[agent] = self._lengths.get(agent, 0) + 1
            # A fresh dict: envs often hand out the same info dict every step.
            info = {**infos.get(agent, {}), "original_reward": true_reward}
            if terminations.get(agent, False) or truncations.get(agent, False):
                self._close_episode(agent, info)
            new_infos[agent] = info
        return obs, rewards, terminations, truncations, new_infos

    def _close_episode(self, agent: AgentID, info: dict[str, Any]) -> None:
        """Report the agent's finished episode: its true return, also in SB3's format."""
        true_return, length = self._returns[agent], self._lengths[agent]
        info["original_episode"] = {"r": true_return, "l": length}
        info.setdefault("episode", {"r": true_return, "l": length,
                                    "t": round(time.time() - self._t_start, 6)})
        if agent in self.reward_fns:
            info["learned_episode_return"] = self._learned_returns[agent]

    def _learned_reward(
        self,
        agent: AgentID,
        actions: Mapping[AgentID, ActionType],
        obs: Mapping[AgentID, ObsType],
        terminations: Mapping[AgentID, bool],
    ) -> float:
        if agent not in actions or agent not in self._prev_obs:
            raise InvalidDataError(
                f"the env rewarded agent {agent!r}, which took no action this step (or reset() "
                "was not called); its learned reward is undefined"
            )
        if agent not in obs:
            raise InvalidDataError(f"the env returned no observation for acting agent {agent!r}")
        next_obs = np.array(obs[agent])
        where = f"for agent {agent!r} at step {self._lengths.get(agent, 0)} of its episode"
        transition = (self._prev_obs[agent][None], np.asarray(actions[agent])[None], next_obs[None],
                      np.array([bool(terminations.get(agent, False))]))
        learned = transition_rewards(self.reward_fns[agent], transition, 1, where)[0, 0]
        self._prev_obs[agent] = next_obs
        return float(learned)

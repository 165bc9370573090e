"""An SB3 ``VecEnvWrapper`` that gives the agent a learned reward with one batched call per step."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, VecNormalize
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn

from rlkit.data.rollout import array_obs
from rlkit.errors import InvalidDataError, StateError
from rlkit.types import RewardFn
from rlkit.wrappers.gym_wrapper import RewardMode, validate_array_space, validate_mode
from rlkit.wrappers.reward_batch import transition_rewards


class StepObserver(Protocol):
    """Watches every vectorised step, e.g. a trajectory recorder for online preference learning.

    All arrays are batches over envs: ``obs`` before the step, ``next_obs`` after it (the terminal
    observation for envs that just ended), ``true_rews`` the env's reward, ``dones`` every episode
    end and ``terminal`` only the true terminations (a time-limit truncation is not terminal).
    The arrays are not reused by the wrapper afterwards, so an observer may keep views of them.
    """

    def __call__(
        self,
        obs: np.ndarray,
        acts: np.ndarray,
        next_obs: np.ndarray,
        true_rews: np.ndarray,
        dones: np.ndarray,
        terminal: np.ndarray,
        infos: list[dict[str, Any]],
    ) -> None: ...


class RewardVecEnvWrapper(VecEnvWrapper):
    """Replace (``mode="replace"``) or shape (``mode="add"``) the reward of every env in a VecEnv.

    Per step: one ``reward_fn(obs, acts, next_obs, dones)`` call over all envs, where ``next_obs``
    of an env that just ended is its ``terminal_observation`` (the VecEnv has already reset it)
    and ``dones`` marks only true terminations. The env's reward stays in
    ``infos[i]["original_reward"]``.
    SB3 logs ``rollout/ep_rew_mean`` from ``info["episode"]``; that must be the TRUE return, so an
    inner ``Monitor``'s entry is kept and, without one, this wrapper adds
    ``{"r", "l", "t"}`` itself. ``info["learned_episode_return"]`` is the sum of ``reward_fn``
    over the episode (the learned part alone, also in ``mode="add"``).

    ``reward_fn=None`` leaves the learned reward to be evaluated later, in batches, by whoever
    fills the algorithm's buffer (``per_sample_reward``): the step reward is then 0 (``"replace"``)
    or the env's (``"add"``), and no ``learned_episode_return`` is reported.

    The true reward is the env's raw reward wherever a ``VecNormalize`` sits: below this wrapper,
    the innermost one's ``get_original_reward()`` is taken, not its normalised output. (SB3's
    off-policy algorithms store that same ``get_original_reward()`` in their replay buffer, so
    they would train on the env's reward there; ``check_reward_env`` refuses that combination.)

    Observations are held by reference between steps (no copy): every SB3 VecEnv returns a fresh
    array per step, and nothing here writes into arrays it has handed out.

    Args:
        venv: the VecEnv whose rewards are replaced or shaped; its observations must be arrays
            (not a Dict or Tuple space).
        reward_fn: the learned or shaping reward, or None to leave it to the algorithm's buffer.
        mode: ``"replace"`` pays ``reward_fn``'s reward, ``"add"`` pays the env's plus it.
        observers: called after every step with its transitions (``StepObserver``), e.g. a
            trajectory recorder.

    Raises:
        InvalidDataError: on an unknown ``mode`` or a Dict or Tuple observation space.
    """

    def __init__(
        self,
        venv: VecEnv,
        reward_fn: RewardFn | None,
        mode: RewardMode = "replace",
        observers: Sequence[StepObserver] = (),
    ) -> None:
        super().__init__(venv)
        validate_array_space(venv.observation_space, "observation_space")
        self.mode = validate_mode(mode)
        self.reward_fn = reward_fn
        self.observers = tuple(observers)
        self.vec_normalize = innermost_vec_normalize(venv)
        self._prev_obs: np.ndarray | None = None
        self._actions: np.ndarray | None = None
        self._true_returns = np.zeros(self.num_envs, dtype=np.float64)
        self._learned_returns = np.zeros(self.num_envs, dtype=np.float64)
        self._lengths = np.zeros(self.num_envs, dtype=np.int64)
        self._t_start = time.time()
        self._total_steps = 0

    def set_reward_fn(self, reward_fn: RewardFn | None) -> None:
        """Swap the reward model while the agent trains (online preference RL refits it)."""
        self.reward_fn = reward_fn

    def episode_state(self) -> dict[str, np.ndarray] | None:
        """What the next step depends on (``rlkit.persistence.env_state``), the observers' too
        (``observer<i>.<field>``); None before the first reset, or when an observer cannot hand
        its state over."""
        if self._prev_obs is None:
            return None
        state = {"prev_obs": self._prev_obs, "true_returns": self._true_returns.copy(),
                 "learned_returns": self._learned_returns.copy(), "lengths": self._lengths.copy(),
                 "total_steps": np.asarray(self._total_steps)}
        for index, observer in enumerate(self.observers):
            saves = getattr(observer, "episode_state", None)
            if saves is None:
                return None
            state |= {f"observer{index}.{field}": value for field, value in saves().items()}
        return state

    def load_episode_state(self, state: Mapping[str, np.ndarray]) -> None:
        """Take back what ``episode_state`` gave."""
        prev_obs = np.asarray(state["prev_obs"], dtype=self.observation_space.dtype)
        shape = (self.num_envs, *(self.observation_space.shape or ()))
        if prev_obs.shape != shape:
            raise InvalidDataError(f"observations of shape {prev_obs.shape}, this env's are {shape}")
        for name in ("true_returns", "learned_returns", "lengths"):
            values = np.asarray(state[name])
            if values.shape != (self.num_envs,):
                raise InvalidDataError(f"{name} of shape {values.shape}, this env has {self.num_envs} envs")
            getattr(self, f"_{name}")[:] = values
        self._prev_obs, self._total_steps = prev_obs, int(state["total_steps"])
        for index, observer in enumerate(self.observers):
            prefix = f"observer{index}."
            observer.load_episode_state(  # type: ignore[attr-defined]  # episode_state saved it
                {k.removeprefix(prefix): v for k, v in state.items() if k.startswith(prefix)})

    def reset(self) -> VecEnvObs:
        obs = array_obs(self.venv.reset())  # an array: the space was checked in __init__
        self._prev_obs = obs
        self._true_returns[:] = 0.0
        self._learned_returns[:] = 0.0
        self._lengths[:] = 0
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions
        self.venv.step_async(actions)

    def step_wait(self) -> VecEnvStepReturn:
        if self._prev_obs is None or self._actions is None:
            raise StateError("call reset() before stepping a RewardVecEnvWrapper")
        stepped, true_rews, dones, infos = self.venv.step_wait()
        if self.vec_normalize is not None:  # its output is normalised; the env's reward is not
            true_rews = self.vec_normalize.get_original_reward()
        obs = array_obs(stepped)
        ended = np.flatnonzero(dones)
        next_obs, terminal = self._transition_ends(obs, dones, ended, infos)

        if self.reward_fn is None:
            learned = np.zeros(self.num_envs, dtype=np.float32)
        else:
            learned = transition_rewards(
                self.reward_fn, (self._prev_obs, self._actions, next_obs, terminal),
                self.num_envs, f"at vectorised step {self._total_steps}",
            )[0]
        rewards = learned if self.mode == "replace" else true_rews + learned

        self._true_returns += true_rews
        self._learned_returns += learned
        self._lengths += 1
        for info, true_reward in zip(infos, true_rews.tolist(), strict=True):
            info["original_reward"] = true_reward
        if ended.size:
            self._close_episodes(ended, infos)
        for observer in self.observers:
            observer(self._prev_obs, self._actions, next_obs, true_rews, dones, terminal, infos)

        self._prev_obs = obs
        self._total_steps += 1
        return obs, rewards.astype(np.float32, copy=False), dones, infos

    def _transition_ends(
        self,
        obs: np.ndarray,
        dones: np.ndarray,
        ended: np.ndarray,
        infos: list[dict[str, Any]],
    ) -> tuple[np.ndarray, np.ndarray]:
        """``next_obs`` with terminal observations swapped in, and the true-termination flags.

        Without an episode end (most steps) the VecEnv's own arrays are used as they are.
        """
        if not ended.size:
            return obs, dones
        next_obs = obs.copy()
        terminal = dones.copy()
        for i in ended.tolist():
            info = infos[i]
            if "terminal_observation" not in info:
                raise InvalidDataError(
                    f"env {i} ended an episode but infos[{i}] has no 'terminal_observation'; "
                    "the learned reward of its last step would use the next episode's first obs"
                )
            next_obs[i] = info["terminal_observation"]
            terminal[i] = not info.get("TimeLimit.truncated", False)
        return next_obs, terminal

    def _close_episodes(self, ended: np.ndarray, infos: list[dict[str, Any]]) -> None:
        """Report the finished episodes' true (and learned) returns, then restart their counters."""
        elapsed = round(time.time() - self._t_start, 6)
        for i in ended.tolist():
            info = infos[i]
            if "episode" not in info:  # an inner Monitor already reported the true return
                info["episode"] = {
                    "r": float(self._true_returns[i]),
                    "l": int(self._lengths[i]),
                    "t": elapsed,
                }
            if self.reward_fn is not None:
                info["learned_episode_return"] = float(self._learned_returns[i])
        self._true_returns[ended] = 0.0
        self._learned_returns[ended] = 0.0
        self._lengths[ended] = 0


def innermost_vec_normalize(venv: VecEnv) -> VecNormalize | None:
    """The ``VecNormalize`` nearest the envs in a chain of VecEnv wrappers, if there is one.

    Args:
        venv: the outermost VecEnv of the chain.

    Returns:
        The innermost ``VecNormalize`` (its ``get_original_reward()`` is the envs' own reward), or
        ``None`` when the chain has none.
    """
    found = None
    while isinstance(venv, VecEnvWrapper):
        if isinstance(venv, VecNormalize):
            found = venv
        venv = venv.venv
    return found

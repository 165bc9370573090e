"""Learned rewards written into SB3's buffers: replay buffers relabelled after a refit
(off-policy), replay rows labelled lazily in batches (off-policy), and rollouts evaluated once per
rollout instead of per step (on-policy).

Per step, a 256-wide reward MLP on 8 rows costs ~0.5 ms in a PPO run (cold caches between env
steps) — about 10% of PPO's time. PPO only needs the rewards when it computes returns and
advantages at the end of a rollout, so this evaluates all of a rollout's transitions in one
batched call there, adds them to the rollout buffer, and recomputes returns and advantages.
The buffer already holds SB3's time-limit bootstrap (``gamma * V(terminal_obs)``), which is why the
learned rewards are added, not written over it.

Off-policy algorithms train on the replay buffer every step, so there is no rollout end to wait
for. ``LazyRewardReplayBuffer`` stores each transition with a placeholder reward and labels the
unlabelled rows, oldest first, in one batched call when a sampled batch first includes one of
them: with a uniform sample of 256 from a buffer of N rows, that is every ~sqrt(N / 128) steps
(~9 at 10k rows, ~28 at 100k), each a single forward over all the rows waiting.

Every path computes its rewards with ``rlkit.wrappers.reward_batch.transition_rewards``, as the
per-step ``RewardVecEnvWrapper`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.type_aliases import ReplayBufferSamples
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, VecNormalize

from rlkit.errors import ConfigError, StateError, WrongTypeError
from rlkit.types import RewardFn
from rlkit.wrappers.reward_batch import transition_rewards
from rlkit.wrappers.vec_wrapper import RewardVecEnvWrapper, StepObserver, innermost_vec_normalize


class RolloutRewardRelabeller(BaseCallback):
    """Records each step's transition (as a ``RewardVecEnvWrapper`` observer) and, at the end of
    every rollout, writes ``reward_fn`` of all of them into the rollout buffer, in one call.

    ``label_recorded`` evaluates the steps recorded so far at once: call it before the reward
    changes mid-rollout (a refit, a new normaliser), so each step is paid the reward that was
    current when it was taken, as a per-step wrapper would have paid it.

    Args:
        reward_fn: the reward written into the rollout buffer; the algorithm must be on-policy
            (PPO, A2C).
    """

    def __init__(self, reward_fn: RewardFn) -> None:
        super().__init__()
        self.reward_fn = reward_fn
        self._steps: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self._rewards: list[np.ndarray] = []  # (steps, n_envs) blocks of the labelled steps

    def __call__(self, obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray,
                 true_rews: np.ndarray, dones: np.ndarray, terminal: np.ndarray,
                 infos: list[dict[str, Any]]) -> None:
        self._steps.append((obs, acts, next_obs, terminal))

    def _on_training_start(self) -> None:
        self._algorithm()

    def _algorithm(self) -> OnPolicyAlgorithm:
        if not isinstance(self.model, OnPolicyAlgorithm):
            raise WrongTypeError("per-rollout relabelling needs an on-policy algorithm (PPO, A2C); "
                            "use RewardVecEnvWrapper's per-step reward for off-policy ones")
        return self.model

    def _on_rollout_start(self) -> None:
        self._steps.clear()
        self._rewards.clear()

    def _on_step(self) -> bool:
        return True

    def episode_state(self) -> dict[str, np.ndarray] | None:
        """Nothing between rollouts (None within one: its recorded steps are not handed over)."""
        return None if self._steps or self._rewards else {}

    def load_episode_state(self, state: Any) -> None:
        """Between rollouts there is nothing to take back."""

    @property
    def n_labelled(self) -> int:
        """Steps of the rollout under way whose rewards are computed (``label_recorded``)."""
        return sum(len(block) for block in self._rewards)

    @property
    def n_unlabelled(self) -> int:
        """Steps of the rollout under way recorded and still waiting for their rewards."""
        return len(self._steps)

    def label_recorded(self) -> None:
        """Compute the reward of every step recorded and not yet labelled, in one call, with the
        reward as it is now; they are written into the rollout buffer at the rollout's end."""
        if not self._steps:
            return
        n_steps, n_envs = len(self._steps), len(self._steps[0][0])
        obs, acts, next_obs, terminal = (np.stack(column) for column in zip(*self._steps,
                                                                            strict=True))
        flat = n_steps * n_envs
        self._rewards.append(transition_rewards(
            self.reward_fn,
            (obs.reshape(flat, *obs.shape[2:]), acts.reshape(flat, *acts.shape[2:]),
             next_obs.reshape(flat, *next_obs.shape[2:]), terminal.reshape(flat)),
            n_envs, f"in the rollout ending at timestep {self.num_timesteps}",
        ))
        self._steps.clear()

    def _on_rollout_end(self) -> None:
        buffer = self._algorithm().rollout_buffer
        self.label_recorded()
        if self.n_labelled != buffer.buffer_size:
            raise StateError(
                f"recorded {self.n_labelled} steps for a rollout of {buffer.buffer_size}: is the "
                "relabeller an observer of the algorithm's RewardVecEnvWrapper?"
            )
        # the buffer holds SB3's time-limit bootstrap, gamma * V(terminal obs): added to, kept
        buffer.rewards += np.concatenate(self._rewards)
        buffer.compute_returns_and_advantage(last_values=self.locals["values"],
                                             dones=self.locals["dones"])
        self._rewards.clear()


def per_rollout_reward(venv: VecEnv, reward_fn: RewardFn, observers: Sequence[StepObserver] = (),
                       ) -> tuple[RewardVecEnvWrapper, RolloutRewardRelabeller]:
    """The env to train on and the callback to pass to ``learn``: the agent sees ``reward_fn``,
    evaluated per rollout; ``info["original_reward"]`` and SB3's ``ep_rew_mean`` stay true (an
    episode's learned return is not known when it ends, so ``learned_episode_return`` is not
    reported). ``observers`` see every step too (e.g. AIL's buffer of recent agent transitions).

    Args:
        venv: the envs of an on-policy algorithm (PPO, A2C).
        reward_fn: the learned reward the agent trains on.
        observers: more observers of every step.

    Returns:
        The wrapped env and the ``RolloutRewardRelabeller`` callback, which raises
        ``WrongTypeError`` at training start if the algorithm is not on-policy.
    """
    relabeller = RolloutRewardRelabeller(reward_fn)
    return RewardVecEnvWrapper(venv, None, observers=[relabeller, *observers]), relabeller


def relabel_replay_buffer(agent: OffPolicyAlgorithm, reward_fn: RewardFn,
                          chunk: int = 65_536) -> int:
    """Recompute every stored reward with the current model; returns the transitions relabelled.

    A ``LazyRewardReplayBuffer``'s waiting rows are labelled here too (with ``reward_fn``).

    Args:
        agent: an off-policy algorithm with a replay buffer.
        reward_fn: the reward to write, called on the stored transitions as the reward wrapper
            saw them (see ``buffer_transitions``).
        chunk: transitions per ``reward_fn`` call, rounded down to whole buffer rows of
            ``n_envs`` transitions (at least one row).

    Returns:
        The number of transitions relabelled: filled rows times ``n_envs``.

    Raises:
        StateError: when the agent has no replay buffer.
        InvalidDataError: when ``reward_fn`` gives misshapen or non-finite rewards.
    """
    buffer = agent.replay_buffer
    if buffer is None:
        raise StateError(f"{type(agent).__name__} has no replay buffer to relabel")
    size = buffer.buffer_size if buffer.full else buffer.pos
    step = max(chunk // buffer.n_envs, 1)
    for start in range(0, size, step):
        rows = np.arange(start, min(start + step, size))
        buffer.rewards[rows] = transition_rewards(
            reward_fn, buffer_transitions(buffer, rows), buffer.n_envs,
            f"relabelling replay rows {start} to {rows[-1]}", stepwise=False)
    if isinstance(buffer, LazyRewardReplayBuffer):
        buffer.mark_labelled()
    return size * buffer.n_envs


def buffer_transitions(buffer: ReplayBuffer, rows: np.ndarray,
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The ``RewardFn`` inputs of replay rows, as the reward wrapper saw them at the step.

    Args:
        buffer: an SB3 replay buffer.
        rows: buffer positions; every env's transition at each is returned, row by row.

    Returns:
        ``(obs, acts, next_obs, terminal)`` flattened to ``len(rows) * n_envs`` transitions: Box
        actions back in the env's range (SB3 stores them scaled to [-1, 1]), and ``terminal``
        true only for true terminations (SB3's ``dones`` less its time-limit ``timeouts``).
    """
    n = len(rows) * buffer.n_envs
    obs = buffer.observations[rows].reshape(n, *buffer.obs_shape)
    acts = buffer.actions[rows].reshape(n, *(buffer.action_space.shape or ()))
    if isinstance(buffer.action_space, spaces.Box):
        # SB3's BasePolicy.unscale_action, the very expression that made the env's action
        low, high = buffer.action_space.low, buffer.action_space.high
        acts = low + (0.5 * (acts + 1.0) * (high - low))
    if buffer.optimize_memory_usage:
        next_obs = buffer.observations[(rows + 1) % buffer.buffer_size].reshape(obs.shape)
    else:
        next_obs = buffer.next_observations[rows].reshape(obs.shape)
    terminal = (buffer.dones[rows] * (1 - buffer.timeouts[rows])).reshape(n).astype(bool)
    return obs, acts, next_obs, terminal


class LazyRewardReplayBuffer(ReplayBuffer):
    """An SB3 replay buffer whose rewards are ``reward_fn``'s, evaluated in batches when needed.

    Pair it with ``RewardVecEnvWrapper(venv, None)`` (``per_sample_reward`` makes both): each
    transition is stored with the wrapper's placeholder reward and waits; when a sampled batch
    first includes a waiting row, every waiting row is labelled, oldest first, in one
    ``reward_fn`` call, so the algorithm only ever trains on labelled rewards. They equal the
    per-step wrapper's: the same model on the same transitions (actions unscaled as SB3 scaled
    them). A ``NormalizedReward`` that updates its statistics is applied step row by step row,
    exactly as the per-step calls would have updated and applied them.

    SB3 makes the buffer: pass ``replay_buffer_class=LazyRewardReplayBuffer`` and
    ``replay_buffer_kwargs={"reward_fn": ...}`` to the algorithm.

    Args:
        buffer_size: the most transitions per env kept (SB3's ``ReplayBuffer``).
        observation_space: the env's observation space.
        action_space: the env's action space.
        device: where sampled batches go (``"auto"``: CUDA when present).
        n_envs: the number of envs adding a transition each step.
        optimize_memory_usage: SB3's option to keep observations only once (next observations
            read from the following row).
        handle_timeout_termination: SB3's option to treat time-limit truncations as not
            terminal.
        reward_fn: the reward evaluated on the stored transitions.
    """

    def __init__(self, buffer_size: int, observation_space: spaces.Space,
                 action_space: spaces.Space, device: Any = "auto", n_envs: int = 1,
                 optimize_memory_usage: bool = False, handle_timeout_termination: bool = True,
                 *, reward_fn: RewardFn) -> None:
        super().__init__(buffer_size, observation_space, action_space, device=device,
                         n_envs=n_envs, optimize_memory_usage=optimize_memory_usage,
                         handle_timeout_termination=handle_timeout_termination)
        self.reward_fn = reward_fn
        self.n_waiting = 0  # rows before ``pos`` (cyclically) still holding the placeholder
        self.n_labelled_calls = 0

    def add(self, obs: np.ndarray, next_obs: np.ndarray, action: np.ndarray, reward: np.ndarray,
            done: np.ndarray, infos: list[dict[str, Any]]) -> None:
        if self.n_waiting == self.buffer_size:  # the oldest waiting row is about to be overwritten
            self.label_waiting()
        super().add(obs, next_obs, action, reward, done, infos)
        self.n_waiting += 1

    def waiting_rows(self) -> np.ndarray:
        """Positions of the rows still waiting for their reward, oldest first."""
        return (self.pos - self.n_waiting + np.arange(self.n_waiting)) % self.buffer_size

    def label_waiting(self) -> None:
        """Label every waiting row now, in one ``reward_fn`` call (e.g. before saving the buffer)."""
        if not self.n_waiting:
            return
        rows = self.waiting_rows()
        where = f"labelling {len(rows) * self.n_envs} replay transitions"
        self.rewards[rows] = transition_rewards(self.reward_fn, buffer_transitions(self, rows),
                                                self.n_envs, where)
        self.n_labelled_calls += 1
        self.mark_labelled()

    def mark_labelled(self) -> None:
        """Declare every row labelled (``relabel_replay_buffer`` has written them all)."""
        self.n_waiting = 0

    def _get_samples(self, batch_inds: np.ndarray, env: VecNormalize | None = None
                     ) -> ReplayBufferSamples:
        if env is not None and env.norm_reward:
            raise ConfigError("VecNormalize(norm_reward=True) with lazily labelled replay rewards: "
                              "its return statistics saw only placeholder rewards; normalise the "
                              "learned reward itself (agent.normalize_reward) instead")
        if self.n_waiting:
            first = self.pos - self.n_waiting
            if (((batch_inds - first) % self.buffer_size) < self.n_waiting).any():
                self.label_waiting()
        return super()._get_samples(batch_inds, env=env)


def per_sample_reward(venv: VecEnv, reward_fn: RewardFn, observers: Sequence[StepObserver] = (),
                      ) -> tuple[RewardVecEnvWrapper, dict[str, Any]]:
    """The env to train an off-policy algorithm on and the keyword arguments to build it with,
    so that it trains on ``reward_fn`` labelled in batches (``LazyRewardReplayBuffer``).

    Args:
        venv: the envs; their reward stays in ``info["original_reward"]`` and SB3's ``ep_rew_mean``.
        reward_fn: the learned reward the agent trains on.
        observers: see every step (e.g. a trajectory recorder).

    Returns:
        The wrapped env and ``{"replay_buffer_class": ..., "replay_buffer_kwargs": ...}`` for the
        algorithm's constructor.
    """
    wrapped = RewardVecEnvWrapper(venv, None, observers=observers)
    return wrapped, {"replay_buffer_class": LazyRewardReplayBuffer,
                     "replay_buffer_kwargs": {"reward_fn": reward_fn}}


def check_reward_env(agent: OffPolicyAlgorithm) -> None:
    """Refuse an off-policy agent whose env has a ``VecNormalize`` below a reward wrapper.

    SB3's off-policy algorithms store ``VecNormalize.get_original_reward()`` in the replay buffer;
    below the reward wrapper that is the env's own reward, so the agent would never see the
    learned one. Above the wrapper it is the learned reward, as it should be.

    Args:
        agent: the algorithm, already built on its env.

    Raises:
        ConfigError: when the combination would train on the env's reward.
    """
    venv = agent.get_env()
    while isinstance(venv, VecEnvWrapper):
        if isinstance(venv, RewardVecEnvWrapper) and innermost_vec_normalize(venv.venv) is not None:
            raise ConfigError(
                f"{type(agent).__name__} stores VecNormalize.get_original_reward() in its replay "
                "buffer, and with VecNormalize inside the reward wrapper that is the env's reward, "
                "not the learned one: wrap VecNormalize around RewardVecEnvWrapper instead"
            )
        venv = venv.venv

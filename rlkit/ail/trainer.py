"""The adversarial loop: the generator (SB3 PPO or SAC) trains on the discriminator's reward,
then the discriminator learns to tell its recent experience from the demonstrations.

One round = ``steps_per_round`` generator env steps (rewards from the discriminator: for PPO in
one batched call per rollout, for SAC one per vectorised step), then ``updates_per_round``
discriminator steps on the last ``agent_buffer`` agent transitions, then (off-policy) the replay
buffer relabelled, then the round callbacks and, every N rounds, a checkpoint.

The discriminator and the generator live on ``config.device``. The demonstrations are copied there
once and the agent's transitions once a round; each discriminator step gathers its batch there,
so only the drawn row indices cross between host and device.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from rlkit.ail.checkpoints import CheckpointStore
from rlkit.ail.config import AILConfig
from rlkit.ail.demos import check_demos
from rlkit.ail.discriminator import build_discriminator
from rlkit.ail.generator import (
    Generator,
    GeneratorFactory,
    make_generator,
    policy_log_prob,
    relabel_generator_buffer,
)
from rlkit.ail.losses import gradient_penalty
from rlkit.ail.resume import (
    EPISODE_FILE,
    REPLAY_FILE,
    load_replay,
    point_config,
    read_resume_folder,
    restore_generator_rngs,
    restore_trainer_state,
    save_resume_folder,
    trainer_state,
)
from rlkit.ail.transitions import TransitionBuffer, Transitions, take_rows
from rlkit.data import Trajectory
from rlkit.devices import resolve_device
from rlkit.errors import InvalidDataError, StateError
from rlkit.persistence.sb3_state import episode_state, restore_episode
from rlkit.reward.nets import action_shape
from rlkit.wrappers import RewardVecEnvWrapper
from rlkit.wrappers.relabel import RolloutRewardRelabeller, per_rollout_reward


@dataclass(frozen=True)
class AILRound:
    """Diagnostics of one round. Never used for training.

    Attributes:
        round: the round's index, from 0.
        timesteps: the generator's env steps after the round.
        disc: the discriminator update's metrics, by name.
        expert_reward: the generator's mean reward on a sample of expert transitions.
        agent_reward: the generator's mean reward on a sample of recent agent transitions.
        true_return: the mean env return of the episodes that finished during the round (None
            when none did).
        n_episodes: the episodes that finished during the round.
    """

    round: int
    timesteps: int
    disc: dict[str, float]
    expert_reward: float
    agent_reward: float
    true_return: float | None
    n_episodes: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


RoundCallback = Callable[[AILRound, "AILTrainer"], None]


class AILTrainer:
    """GAIL / AIRL / max-ent IRL on an SB3 generator; ``train`` runs the configured rounds.

    ``generator`` is ``"ppo"``, ``"sac"`` (built with ``generator_kwargs``) or a factory that builds
    any PPO/SAC-like algorithm on the env it is given (the reward-relabelling wrapper).

    Args:
        config: rounds, steps per round, the discriminator, seed and device.
        venv: the env; its reward is replaced by the discriminator's for the generator.
        demos: the expert's trajectories, on ``venv``'s spaces.
        generator: ``"ppo"``, ``"sac"``, ``"drqsac"`` (``make_generator``) or a factory
            ``venv -> algorithm``.
        generator_kwargs: further SB3 constructor arguments of a named generator
            (``make_generator``'s ``kwargs``).
        checkpoints: where the rounds' checkpoints go (None: none are saved, nothing to resume).
        callbacks: each called with every round's record and the trainer, after the round.

    Raises:
        InvalidDataError: when the demos do not fit ``venv``'s spaces, or its observations have no
            fixed shape.
    """

    def __init__(
        self,
        config: AILConfig,
        venv: VecEnv,
        demos: Sequence[Trajectory],
        generator: str | GeneratorFactory = "ppo",
        generator_kwargs: Mapping[str, Any] | None = None,
        checkpoints: CheckpointStore | None = None,
        callbacks: Sequence[RoundCallback] = (),
    ) -> None:
        check_demos(demos, venv.observation_space, venv.action_space)
        self.config = config
        self.device = resolve_device(config.device)
        self.rng = np.random.default_rng(config.seed)
        self.torch_rng = torch.Generator().manual_seed(config.seed)
        disc_config = config.discriminator
        self.discriminator = build_discriminator(
            disc_config, venv.observation_space, venv.action_space, seed=config.seed
        ).to(self.device)
        self.optimizer = torch.optim.Adam(self.discriminator.parameters(), lr=disc_config.lr,
                                          weight_decay=disc_config.weight_decay)
        self.expert = Transitions.from_trajectories(demos)
        self.expert_tensors = self.expert.to_torch(self.device)
        act_shape, n_actions = action_shape(venv.action_space)
        obs_shape = venv.observation_space.shape
        if obs_shape is None:
            raise InvalidDataError(f"AIL needs observations of a fixed shape, got {venv.observation_space}")
        self.agent = TransitionBuffer(
            config.agent_buffer or config.steps_per_round, tuple(obs_shape),
            act_shape, np.dtype(np.int64) if n_actions is not None else np.dtype(np.float32),
            np.dtype(venv.observation_space.dtype),
        )
        # PPO's rewards matter only at the end of a rollout, under one fixed discriminator: one
        # batched reward call per rollout there is exact and saves a forward per env step.
        self.relabeller: RolloutRewardRelabeller | None = None
        if isinstance(generator, str) and generator.upper() == "PPO":
            self.venv, self.relabeller = per_rollout_reward(
                venv, self.discriminator.generator_reward, observers=[self.agent])
        else:
            self.venv = RewardVecEnvWrapper(venv, self.discriminator.generator_reward,
                                            observers=[self.agent])
        self.generator: Generator = (
            make_generator(generator, self.venv, config.steps_per_round, config.seed,
                           self.device, generator_kwargs)
            if isinstance(generator, str) else generator(self.venv)
        )
        self.checkpoints = checkpoints
        self.callbacks = list(callbacks)
        self.round = 0
        self.records: list[AILRound] = []

    def train(self) -> list[AILRound]:
        """Run the rounds still to go (all of them on a fresh trainer)."""
        while self.round < self.config.rounds:
            self.run_round()
        return self.records

    def run_round(self) -> AILRound:
        self.generator.learn(self.config.steps_per_round, reset_num_timesteps=False,
                             progress_bar=False, callback=self.relabeller)
        agent = self.agent.transitions()
        disc_metrics = self.update_discriminator(agent)
        relabel_generator_buffer(self.generator, self.discriminator.generator_reward)
        returns = self.agent.pop_episode_returns()
        probe = min(len(agent), 1024)
        expert_probe, agent_probe = self.expert.sample(self.rng, probe), agent.sample(self.rng, probe)
        record = AILRound(
            round=self.round,
            timesteps=int(self.generator.num_timesteps),
            disc=disc_metrics,
            expert_reward=float(self._reward(expert_probe).mean()),
            agent_reward=float(self._reward(agent_probe).mean()),
            true_return=float(np.mean(returns)) if returns else None,
            n_episodes=len(returns),
        )
        self.records.append(record)
        for callback in self.callbacks:
            callback(record, self)
        if self.checkpoints is not None and self.checkpoints.wants(self.round):
            self._checkpoint(record)
        self.round += 1
        return record

    def resume(self) -> int | None:
        """Continue from the checkpoint ``resume/`` belongs to (``rlkit.ail.resume``; the latest
        checkpoint where no ``resume/`` names one): generator (policy, optimisers,
        timestep count), discriminator and its optimiser, RNGs, the replay buffer of an off-policy
        generator, the episode in progress where it was kept, and the records so far. Returns the
        round resumed from, None when nothing is saved."""
        if self.checkpoints is None or (latest := self.checkpoints.latest()) is None:
            return None
        resume_dir = self.checkpoints.resume_dir
        kept, episode = read_resume_folder(resume_dir, point_config(self.config, self.generator))
        start = latest if kept is None else kept  # later checkpoints are trained again, the same
        checkpoint = self.checkpoints.load(start, self.device, env=self.venv)
        # In place: the env wrapper holds this discriminator's reward method.
        self.discriminator.load_state_dict(checkpoint.discriminator.state_dict())
        generator_rngs = restore_trainer_state(self.checkpoints.path(start), self.optimizer, self.rng,
                                               self.torch_rng)
        self.generator = checkpoint.generator
        replay = resume_dir / REPLAY_FILE
        if isinstance(self.generator, OffPolicyAlgorithm) and replay.is_file():
            load_replay(_replay_buffer(self.generator), replay)
        if episode is not None:  # else learn() starts a new episode
            restore_generator_rngs(self.generator, generator_rngs, self.checkpoints.path(start))
            restore_episode(self.generator, episode, resume_dir / EPISODE_FILE)
        self.records = [AILRound(**self.checkpoints.meta(r)["diagnostics"])
                        for r in self.checkpoints.rounds() if r <= start]
        self.round = start + 1
        return start

    def updates(self) -> dict[str, int]:
        """What both learners have done so far, a resumed run's earlier rounds included:
        ``agent_updates`` is the generator's ``_n_updates`` (PPO epochs over rollouts, SAC
        gradient steps), ``reward_updates`` the discriminator's Adam steps (its optimiser's own
        count, restored with it on resume)."""
        steps = [int(state["step"]) for state in self.optimizer.state.values() if "step" in state]
        return {"agent_updates": int(self.generator._n_updates), "reward_updates": max(steps, default=0)}

    def _checkpoint(self, record: AILRound) -> None:
        assert self.checkpoints is not None
        self.checkpoints.save(self.round, self.generator, self.discriminator, record.to_dict(),
                              trainer_state(self.optimizer, self.rng, self.torch_rng, self.generator))
        replay = _replay_buffer(self.generator) if isinstance(self.generator, OffPolicyAlgorithm) else None
        save_resume_folder(self.checkpoints.resume_dir, self.round, replay, episode_state(self.generator),
                           point_config(self.config, self.generator))

    def update_discriminator(self, agent: Transitions) -> dict[str, float]:
        """``updates_per_round`` Adam steps on fresh expert/agent batches (their images randomly
        shifted when the discriminator augments, from ``torch_rng``); mean metrics back."""
        config = self.config.discriminator
        totals: dict[str, float] = {}
        agent_tensors = agent.to_torch(self.device)
        for _ in range(config.updates_per_round):
            expert_rows = self.expert.draw(self.rng, config.batch_size)
            agent_rows = agent.draw(self.rng, config.batch_size)
            expert_t = self.discriminator.augment(take_rows(self.expert_tensors, expert_rows),
                                                  self.torch_rng)
            agent_t = self.discriminator.augment(take_rows(agent_tensors, agent_rows),
                                                 self.torch_rng)
            log_pis: tuple[torch.Tensor | None, torch.Tensor | None] = (None, None)
            if config.loss == "airl":
                log_pis = (self._log_pi(self.expert.take(expert_rows)), self._log_pi(agent.take(agent_rows)))
            loss, metrics = self.discriminator.loss(expert_t, agent_t, *log_pis)
            if config.grad_penalty > 0:
                penalty = gradient_penalty(self.discriminator.score, expert_t, agent_t, self.torch_rng)
                loss = loss + config.grad_penalty * penalty
                metrics["grad_penalty"] = float(penalty.detach())
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            for key, value in metrics.items():
                totals[key] = totals.get(key, 0.0) + value / config.updates_per_round
        return totals

    def _log_pi(self, batch: Transitions) -> torch.Tensor:
        return policy_log_prob(self.generator, batch.obs, batch.acts).to(self.device)

    def _reward(self, batch: Transitions) -> np.ndarray:
        return self.discriminator.generator_reward(batch.obs, batch.acts, batch.next_obs, batch.dones)


def _replay_buffer(agent: OffPolicyAlgorithm) -> ReplayBuffer:
    """The agent's replay buffer (SB3 creates it with the model, before any of this runs)."""
    if agent.replay_buffer is None:
        raise StateError(f"{type(agent).__name__} has no replay buffer yet")
    return agent.replay_buffer

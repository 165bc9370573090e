"""Online preference-based RL (PEBBLE / PrefPPO style) on any SB3 algorithm.

The agent trains on the learned reward through ``RewardVecEnvWrapper``; a recorder keeps its
experience. Every ``query.every_steps`` steps, candidate pairs are drawn from that experience,
the most informative are labelled by a teacher, the reward model is refit, and an off-policy
replay buffer is relabelled with the new reward. Neither kind of agent pays a reward call per env
step: an on-policy one has its rollout's rewards computed in one call at the rollout's end
(``per_rollout_reward``; a round mid-rollout first labels the steps taken so far, so each step
gets the reward that was current when it was taken); an off-policy one stores its transitions
unlabelled and has them labelled in batches when it first samples them (``per_sample_reward``):
the same rewards as a call per step, at a fraction of the cost.

The teacher is simulated, or any ``Teacher`` passed in. A teacher with several annotators
(``AnnotatedTeacher``, e.g. people through ``rlkit.human.HumanTeacher``, which
``rlkit.runners.prefrl`` wires for ``teacher.kind=human``) gives each person's label a row of its
own in the dataset, with its annotator and interface; pairs nobody answered are NaN (skipped),
never guessed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from rlkit.data import TrajectoryRecorder, TrajectoryStore, collect_trajectories, sample_pairs
from rlkit.data.segments import SegmentPairs
from rlkit.errors import ConfigError, InvalidDataError
from rlkit.factories.agent import EpisodeLog, EpisodeLogCallback, StopAtBudget, train_on_env_reward
from rlkit.factories.algorithms import ALGORITHMS
from rlkit.factories.budget import agent_updates
from rlkit.factories.builders import (
    build_reward_model,
    make_agent,
    make_teacher,
    make_venv,
    trainer_config,
)
from rlkit.factories.configs import AgentConfig, PrefRLConfig
from rlkit.feedback import OrdinalScale, PreferenceDataset, SimulatedTeacher, TeacherConfig
from rlkit.feedback.answers import AnnotatedTeacher, Answers
from rlkit.logging import Logger
from rlkit.logging.segments import log_segment_pair
from rlkit.prefrl import resume as prefrl_resume
from rlkit.prefrl.query import make_selector
from rlkit.prefrl.rollout_start import RolloutStart
from rlkit.prefrl.rollout_start import capture as capture_rollout_start
from rlkit.prefrl.unsupervised import StateEntropyReward, reset_critic
from rlkit.reward import RewardEnsemble, RewardTrainer, RunningNorm
from rlkit.reward.metrics import evaluate_reward
from rlkit.reward.normalize import NormalizedReward
from rlkit.reward.numpy_rewards import TorchRewardFn
from rlkit.types import RewardFn, Teacher
from rlkit.wrappers import (
    LazyRewardReplayBuffer,
    RolloutRewardRelabeller,
    per_rollout_reward,
    per_sample_reward,
    relabel_replay_buffer,
)

log = logging.getLogger(__name__)


@dataclass
class QueryRound:
    timestep: int
    n_labels: int
    val_accuracy: float
    fresh_accuracy: float
    return_pearson: float
    refit: bool = True  # False: no labels came (all skipped or unanswered), the model stayed


@dataclass
class PrefRLResult:
    agent: BaseAlgorithm
    dataset: PreferenceDataset
    rounds: list[QueryRound] = field(default_factory=list)
    episodes: EpisodeLog = field(default_factory=EpisodeLog)
    reward: str = "learned"  # what the agent trained on: learned, or env (the env's own, true reward)

    def summary(self, true_return: tuple[float, float]) -> dict[str, Any]:
        """What ``rlkit pref-rl`` reports (its ``summary.json``), the same fields for either reward.

        Args:
            true_return: the mean and std of the trained agent's evaluation episodes.

        Returns:
            ``reward``, ``true_return`` (mean, std), ``labels``, ``agent_updates`` (SB3's
            ``_n_updates``: PPO epochs over rollouts, off-policy gradient steps), ``env_steps``,
            ``refits`` (rounds whose labels refit the reward model), ``reward_model`` (the last
            round's ``fresh_accuracy``: the model before that refit on the pairs just labelled,
            and the last refit's ``val_accuracy``; None with the env's reward) and ``rounds``.
        """
        accuracy = None
        if self.rounds:
            fitted = [r.val_accuracy for r in self.rounds if r.refit and np.isfinite(r.val_accuracy)]
            accuracy = {"fresh_accuracy": _finite(self.rounds[-1].fresh_accuracy),
                        "val_accuracy": fitted[-1] if fitted else None}
        return {"reward": self.reward, "true_return": {"mean": true_return[0], "std": true_return[1]},
                "labels": len(self.dataset), "agent_updates": agent_updates(self.agent),
                "env_steps": int(self.agent.num_timesteps), "refits": sum(r.refit for r in self.rounds),
                "reward_model": accuracy, "rounds": [vars(r) for r in self.rounds]}


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


class PreferenceRL:
    """Wires env, recorder, reward model, teacher and agent; ``learn`` runs the loop.

    ``teacher`` defaults to the one ``config.teacher`` describes (people need ``run_dir``, whose
    label store and media ``rlkit serve`` serves); pass any ``Teacher`` to replace it.
    """

    def __init__(self, config: PrefRLConfig, logger: Logger | None = None,
                 teacher: Teacher | None = None, run_dir: str | Path | None = None) -> None:
        """With ``run_dir``, each round first saves a resume point there, and a run directory
        holding one resumes from it (``rlkit.prefrl.resume``)."""
        self.config = config
        self.logger = logger
        self.run_dir = None if run_dir is None else Path(run_dir)
        point = None
        if self.run_dir is not None:
            point = prefrl_resume.load(self.resume_dir, config.model_dump(mode="json"))
        self.resume_point = point
        self.rng = np.random.default_rng(config.seed)
        torch.manual_seed(config.seed)
        people_watch = config.teacher.kind == "human" and config.teacher.human.render_media
        self.venv = make_venv(config.env, record_states=people_watch)  # MuJoCo states: their videos
        budget, n_envs = config.agent.total_timesteps, self.venv.num_envs
        if budget % n_envs:
            raise ConfigError(f"agent.total_timesteps={budget} is not a whole number of steps of the "
                              f"env.n_envs={n_envs} envs (each step takes one per env): use a multiple "
                              f"of {n_envs}, e.g. {budget - budget % n_envs or n_envs}")
        # the random steps that seed the first query are env steps of the budget, as the agent's are
        self.random_steps = -(-config.query.every_steps // n_envs) * n_envs
        if self.random_steps >= budget:
            raise ConfigError(f"query.every_steps={config.query.every_steps}: the random steps collected "
                              f"for the first query ({self.random_steps}) leave none of "
                              f"agent.total_timesteps={budget} for the agent; lower every_steps or "
                              "raise the budget")
        # PEBBLE's exploration: the last unsupervised_steps of them are the agent's own
        self.unsupervised_steps = -(-config.query.unsupervised_steps // n_envs) * n_envs
        if self.unsupervised_steps and not issubclass(ALGORITHMS[config.agent.algo], OffPolicyAlgorithm):
            raise ConfigError(f"query.unsupervised_steps={config.query.unsupervised_steps} needs an "
                              f"off-policy agent (PEBBLE's SAC); agent.algo={config.agent.algo} is on-policy")
        scale = OrdinalScale.get(config.teacher.scale)
        self.dataset = point.dataset if point is not None else PreferenceDataset(TrajectoryStore(), scale)
        self.store = self.dataset.store
        self.model = build_reward_model(config.model, self.venv.observation_space,
                                        self.venv.action_space, config.seed)
        self.trainer = RewardTrainer(self.model, trainer_config(config.trainer, config.seed))
        members = self.model.members if isinstance(self.model, RewardEnsemble) else [self.model]
        self.selector = make_selector(config.query.selector, [TorchRewardFn(m) for m in members])
        raw: RewardFn = TorchRewardFn(self.model)
        normalize = config.agent.normalize_reward
        self.reward_fn = NormalizedReward(raw, RunningNorm()) if normalize else raw
        recorder = TrajectoryRecorder(self.store, self.venv.num_envs,
                                      max_length=max(config.query.segment_length, 200))
        agent_config = config.agent
        self.relabeller: RolloutRewardRelabeller | None = None  # an on-policy agent's rewards
        if issubclass(ALGORITHMS[agent_config.algo], OffPolicyAlgorithm):
            agent_config = self._lazy_rewards(agent_config, recorder)
        else:
            self.wrapped, self.relabeller = per_rollout_reward(self.venv, self.reward_fn,
                                                               observers=[recorder])
        self.agent = make_agent(agent_config, self.wrapped, config.seed)
        if isinstance(self.agent, OffPolicyAlgorithm):  # (make_agent checked its reward env)
            # its clock starts after the random steps, so its own random start comes on top
            self.agent.learning_starts += self.random_steps
        if teacher is None and config.teacher.kind == "human":
            raise ConfigError("teacher.kind=human: pass the people's teacher in "
                              "(rlkit.runners.prefrl.build_preference_rl makes it from the config)")
        self.teacher: Teacher | None = teacher
        self.result = PrefRLResult(self.agent, self.dataset)
        self.rollout_start: RolloutStart | None = None  # of the rollout under way
        if point is not None:
            self._restore(point)

    def _lazy_rewards(self, config: AgentConfig, recorder: TrajectoryRecorder) -> AgentConfig:
        """Set ``self.wrapped`` up for an off-policy agent whose replay buffer labels its rows in
        batches; returns the agent config that builds that buffer."""
        kwargs = dict(config.kwargs)
        if "replay_buffer_class" in kwargs:
            raise ConfigError(f"agent.kwargs.replay_buffer_class={kwargs['replay_buffer_class']!r}: "
                              "pref-rl gives off-policy agents its own replay buffer, which labels "
                              "their transitions with the learned reward; leave it out")
        self.wrapped, buffer = per_sample_reward(self.venv, self.reward_fn, observers=[recorder])
        kwargs["replay_buffer_class"] = buffer["replay_buffer_class"]
        kwargs["replay_buffer_kwargs"] = {**kwargs.get("replay_buffer_kwargs", {}),
                                          **buffer["replay_buffer_kwargs"]}
        return config.model_copy(update={"kwargs": kwargs})

    def _restore(self, point: prefrl_resume.ResumePoint) -> None:
        self.model.load_state_dict(point.reward.model.state_dict())
        self.trainer.optimizer.load_state_dict(point.tensors["reward_optimizer"])
        self.trainer.mark_fitted(self.dataset)  # a steps refit counts labels added since this fit
        if isinstance(self.reward_fn, NormalizedReward) and point.reward.norm is not None:
            self.reward_fn.norm = point.reward.norm
        point.restore_agent(self.agent)
        point.restore_rngs(self.rng)  # a bad state is refused naming its file
        teacher = point.state["teacher"]
        if self.teacher is None and teacher["kind"] == "simulated":
            self.teacher = SimulatedTeacher(TeacherConfig(**teacher["config"]), self.rng)
        if isinstance(self.teacher, AnnotatedTeacher) and teacher["kind"] == "annotated":
            self.teacher.restore_state(teacher["state"])
        self.result.rounds = [QueryRound(**record) for record in point.state["rounds"]]
        start = point.rollout_start
        self.result.episodes = EpisodeLog(**(point.state if start is None else start)["episodes"])
        if self.run_dir is not None:  # what the killed run logged after the point is logged again
            dropped = point.rewind_metrics(self.run_dir)
            if dropped:
                log.info("dropped %d metric rows logged after step %d", dropped, point.timestep)
        log.info("resuming %s at step %d: its round of %d pairs is asked again", self.run_dir,
                 point.timestep, point.state["pending_pairs"])

    @property
    def resume_dir(self) -> Path:
        if self.run_dir is None:
            raise InvalidDataError("a pref-rl run without a run directory keeps no resume point")
        return self.run_dir / prefrl_resume.RESUME_DIR

    @property
    def reward_norm(self) -> RunningNorm | None:
        return self.reward_fn.norm if isinstance(self.reward_fn, NormalizedReward) else None

    def teacher_state(self) -> dict[str, Any]:
        """What a resumed run needs to rebuild the teacher (a custom one is passed in again)."""
        if isinstance(self.teacher, SimulatedTeacher):
            return {"kind": "simulated", "config": self.teacher.config.model_dump()}
        if isinstance(self.teacher, AnnotatedTeacher):
            return {"kind": "annotated", "state": self.teacher.resume_state()}
        return {"kind": "custom" if self.teacher is not None else "not yet made"}

    # -- one round of feedback ------------------------------------------------------------
    def query_and_refit(self, n_pairs: int, save_resume_point: bool = True) -> QueryRound:
        query = self.config.query
        if self.relabeller is not None:  # the steps taken so far are paid the reward before the refit
            self.relabeller.label_recorded()
        if save_resume_point and self.run_dir is not None:
            buffer = getattr(self.agent, "replay_buffer", None)
            if isinstance(buffer, LazyRewardReplayBuffer):
                buffer.label_waiting()  # the saved rows carry their rewards
            if self.rollout_start is None or not self.rollout_start.saved:  # else: the earlier
                prefrl_resume.save(self, self.resume_dir, n_pairs)  # round's point steps to this one
                if self.rollout_start is not None:
                    self.rollout_start.saved = True
        candidates = sample_pairs(self.store, n_pairs * query.candidates_per_query,
                                  query.segment_length, self.rng)
        if self.teacher is None:
            self.teacher = make_teacher(self.config.teacher, candidates, self.rng)
        chosen = candidates.subset(self.selector.select(candidates, n_pairs, self.rng))
        meta: dict[str, Any] = {}
        answers: Answers | None = None  # set by people's answers, each label a row of its own
        if isinstance(self.teacher, SimulatedTeacher):
            labels, meta["oracle_p"] = self.teacher.label_with_oracle(chosen)
        elif isinstance(self.teacher, AnnotatedTeacher):
            answers = self.teacher.answers(chosen)
            chosen, labels = chosen.subset(answers.pair), answers.value
        else:
            labels = self.teacher.label(chosen)
        fresh = evaluate_reward(self.model, chosen, labels)  # before the refit: generalisation
        meta["timestep"] = self.agent.num_timesteps
        if answers is not None:
            self._append_by_person(chosen, answers, meta)
        else:
            self.dataset.append(chosen, labels, source=type(self.teacher).__name__, meta=meta)
        val_accuracy = np.nan
        if np.isfinite(labels).any():  # nothing new (all skipped or unanswered): the model stays
            report = self.trainer.fit(self.dataset, rng=self.rng)
            val_accuracy = report.val_accuracy[report.best_epoch] if report.val_accuracy else np.nan
            if isinstance(self.reward_fn, NormalizedReward):
                self.reward_fn.norm = RunningNorm()  # the refit model's scale is new
            if isinstance(self.agent, OffPolicyAlgorithm):
                relabel_replay_buffer(self.agent, self.reward_fn)
        else:
            log.warning("no labels for the %d pairs asked at step %d; the reward model is not refit",
                        len(chosen), self.agent.num_timesteps)
        record = QueryRound(
            timestep=self.agent.num_timesteps, n_labels=len(self.dataset), val_accuracy=val_accuracy,
            fresh_accuracy=fresh["accuracy"], return_pearson=fresh["return_pearson"],
            refit=bool(np.isfinite(labels).any()),
        )
        self.result.rounds.append(record)
        if self.logger is not None:
            self.logger.log({f"prefrl/{k}": float(v) for k, v in vars(record).items() if k != "refit"},
                            step=record.timestep)
            if len(chosen) and self.run_dir is not None:  # the round's first pair, to look at
                left, right = chosen.subset(np.arange(1)).gather()
                log_segment_pair(self.logger, "prefrl/query", left.obs[0], right.obs[0], record.timestep,
                                 self.run_dir / "media", label=float(labels[0]))
        return record

    def _append_by_person(self, pairs: SegmentPairs, answers: Answers, meta: dict[str, Any]) -> None:
        """Append each response under its person (source ``human/<interface>``), as the store's
        ``export`` names them; pairs nobody answered go under ``human/unanswered``."""
        origins = list(zip(answers.interface, answers.annotator, strict=True))
        for interface, annotator in dict.fromkeys(origins):
            rows = np.flatnonzero([o == (interface, annotator) for o in origins])
            self.dataset.append(pairs.subset(rows), answers.value[rows], source=f"human/{interface}",
                                annotator=annotator, meta=meta)

    # -- the loop -------------------------------------------------------------------------
    def learn(self) -> PrefRLResult:
        query = self.config.query
        point = self.resume_point
        if point is None:
            # Seed the store with random behaviour so the first queries have something to compare;
            # those env steps count toward the budget: the agent's clock starts after them.
            seed_steps = self.random_steps - self.unsupervised_steps
            self.store.extend(collect_trajectories(
                self.venv, None, self.rng, n_steps=seed_steps, max_length=200,
                seed=self.config.env.seed + 1,
            ))
            self.agent.num_timesteps = seed_steps
            if self.unsupervised_steps:
                self.explore()
            self.query_and_refit(query.initial_pairs)
        elif point.rollout_start is None:  # the round the run was killed in, asked again at once
            self.query_and_refit(int(point.state["pending_pairs"]), save_resume_point=False)
        asker = _QueryCallback(self)
        asker.last = self.agent.num_timesteps
        if point is not None and point.rollout_start is not None:  # stepped again up to the round
            asker.last, asker.replay = int(point.rollout_start["last_round"]), point
        remaining = self.config.agent.total_timesteps - self.agent.num_timesteps
        if remaining > 0:
            budget = StopAtBudget(self.config.agent.total_timesteps)
            callbacks = [EpisodeLogCallback(self.result.episodes, self.logger), asker, budget]
            if self.relabeller is not None:
                callbacks.append(self.relabeller)
            self.agent.learn(remaining, callback=callbacks, reset_num_timesteps=False)
        return self.result

    def explore(self) -> None:
        """PEBBLE's unsupervised pre-training (``rlkit.prefrl.unsupervised``): the agent trains for
        ``unsupervised_steps`` env steps on the normalised state-entropy reward of its replay
        buffer (after its own ``learning_starts`` random steps), its steps recorded for the first
        queries; then the buffer is handed back to the learned reward (the first refit relabels
        every row) and the critic is re-initialised."""
        agent = self.agent
        assert isinstance(agent, OffPolicyAlgorithm)  # __init__ refused the others
        buffer = agent.replay_buffer
        assert isinstance(buffer, LazyRewardReplayBuffer)  # _lazy_rewards built it
        own_start = agent.learning_starts - self.random_steps  # the agent's configured random start
        agent.learning_starts = agent.num_timesteps + own_start
        learned = buffer.reward_fn
        buffer.reward_fn = NormalizedReward(StateEntropyReward(buffer), RunningNorm())
        agent.learn(self.unsupervised_steps, reset_num_timesteps=False,
                    callback=[EpisodeLogCallback(self.result.episodes, self.logger)])
        buffer.label_waiting()  # the rows explored are paid what they were explored for
        buffer.reward_fn = learned
        agent.learning_starts = min(agent.learning_starts, agent.num_timesteps)  # no second random start
        reset_critic(agent)

    def wants_query(self) -> bool:
        limit = self.config.query.max_pairs
        return limit is None or len(self.dataset) < limit


def train_on_true_reward(config: PrefRLConfig, logger: Logger | None = None) -> PrefRLResult:
    """``reward=env``: the agent ``PreferenceRL`` would train (same settings, seed and envs) for
    the same budget of env steps, all of them its own, on the env's own reward
    (``train_on_env_reward``); no queries, labels or reward model. The baseline that tells what
    learning the reward costs.

    Args:
        config: the command's config (its ``query``, ``teacher``, ``model`` and ``trainer`` unused).
        logger: where the episode returns and SB3's metrics go, when given.

    Returns:
        The result: the agent, an empty dataset, no rounds, its episodes' returns.
    """
    agent, episodes = train_on_env_reward(config.env, config.agent, config.seed, logger)
    dataset = PreferenceDataset(TrajectoryStore(), OrdinalScale.get(config.teacher.scale))
    return PrefRLResult(agent, dataset, episodes=episodes, reward="env")


class _QueryCallback(BaseCallback):
    """Asks a round every ``query.every_steps`` env steps; keeps the run's state at each rollout's
    start for that round's point. ``replay``: a point resumed, its RNGs put back at that start."""

    def __init__(self, loop: PreferenceRL) -> None:
        super().__init__()
        self.loop = loop
        self.last = 0
        self.replay: prefrl_resume.ResumePoint | None = None

    def _on_rollout_start(self) -> None:
        if self.replay is not None:
            self.replay.restore_rollout_rngs(self.model)
            self.replay = None
        self.loop.rollout_start = capture_rollout_start(self.loop, self.last)

    def _on_step(self) -> bool:
        if self.num_timesteps - self.last >= self.loop.config.query.every_steps:
            self.last = self.num_timesteps
            if self.loop.wants_query():
                self.loop.query_and_refit(self.loop.config.query.pairs_per_round)
        return True

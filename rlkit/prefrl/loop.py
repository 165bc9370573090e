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

``PreferenceRL`` takes its parts built (envs, agent, reward model and trainer, teacher, selector,
query settings, RNG); ``PreferenceRL.from_config`` builds them from a ``PrefRLConfig``
(``rlkit.prefrl.from_config``). The teacher is simulated, or any ``Teacher``. A teacher with
several annotators (``AnnotatedTeacher``, e.g. people through ``rlkit.human.HumanTeacher``, which
``rlkit.runners.prefrl`` wires for ``teacher.kind=human``) gives each person's label a row of its
own in the dataset, with its annotator and interface; pairs nobody answered are NaN (skipped),
never guessed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from rlkit.data import TrajectoryRecorder, TrajectoryStore, collect_trajectories, sample_pairs
from rlkit.data.segments import SegmentPairs
from rlkit.errors import ConfigError, InvalidDataError
from rlkit.factories.agent import EpisodeLog, EpisodeLogCallback, StopAtBudget, train_on_env_reward
from rlkit.factories.configs import PrefRLConfig, QueryConfig
from rlkit.feedback import OrdinalScale, PreferenceDataset, SimulatedTeacher, TeacherConfig
from rlkit.feedback.answers import AnnotatedTeacher, Answers
from rlkit.logging import Logger
from rlkit.logging.segments import log_segment_pair
from rlkit.prefrl import resume as prefrl_resume
from rlkit.prefrl.parts import check_parts, give_lazy_buffer
from rlkit.prefrl.query import QuerySelector
from rlkit.prefrl.result import PrefRLResult, QueryRound
from rlkit.prefrl.rollout_start import RolloutStart
from rlkit.prefrl.rollout_start import capture as capture_rollout_start
from rlkit.prefrl.unsupervised import StateEntropyReward, reset_critic
from rlkit.reward import RewardEnsemble, RewardNet, RewardTrainer, RunningNorm
from rlkit.reward.metrics import evaluate_reward
from rlkit.reward.normalize import NormalizedReward
from rlkit.reward.numpy_rewards import TorchRewardFn
from rlkit.types import RewardFn, Teacher
from rlkit.wrappers import (
    LazyRewardReplayBuffer,
    RewardVecEnvWrapper,
    RolloutRewardRelabeller,
    per_rollout_reward,
    per_sample_reward,
    relabel_replay_buffer,
)
from rlkit.wrappers.relabel import check_reward_env

log = logging.getLogger(__name__)


TeacherFactory = Callable[[SegmentPairs], Teacher]


class PreferenceRL:
    """The loop over built parts: the agent trains on the reward model's reward, a recorder keeps
    its experience, and every ``query.every_steps`` env steps the selector chooses pairs of it, the
    teacher labels them and the reward trainer refits the model; ``learn`` runs it.

    ``from_config`` builds every part from a ``PrefRLConfig`` (what ``rlkit pref-rl`` runs). By hand,
    on Pendulum with PPO, one reward net and a simulated teacher::

        venv = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
        net = build_reward_net(venv.observation_space, venv.action_space, hidden=(32, 32), seed=0)
        rng = np.random.default_rng(0)
        loop = PreferenceRL(
            venv, PPO("MlpPolicy", venv, n_steps=64, batch_size=64, seed=0),
            net, RewardTrainer(net, TrainerConfig(max_epochs=3)),
            SimulatedTeacher(TeacherConfig(beta=0.05), rng), UniformSelector(),
            QueryConfig(every_steps=200, initial_pairs=40, pairs_per_round=20, segment_length=10),
            total_timesteps=600, rng=rng,
        )
        result = loop.learn()  # 200 random steps, then the agent's 400; a round every 200 steps

    The loop puts the agent on the reward env it makes around ``venv`` (``set_env``): an
    on-policy agent has each rollout's rewards computed at the rollout's end; an off-policy one
    gets a ``LazyRewardReplayBuffer`` of its buffer's settings in place of its empty SB3
    ``ReplayBuffer``, and its ``learning_starts`` starts after the loop's random steps.
    """

    def __init__(self, venv: VecEnv, agent: BaseAlgorithm, reward_model: RewardNet | RewardEnsemble,
                 reward_trainer: RewardTrainer, teacher: Teacher | TeacherFactory,
                 selector: QuerySelector, query: QueryConfig, total_timesteps: int,
                 rng: np.random.Generator, *, normalize_reward: bool = True,
                 dataset: PreferenceDataset | None = None, random_steps_seed: int | None = None,
                 logger: Logger | None = None, run_dir: str | Path | None = None,
                 config: PrefRLConfig | None = None) -> None:
        """The loop over these parts, resumed where ``run_dir`` holds a resume point.

        Args:
            venv: the envs, unwrapped (the loop wraps them with the learned reward).
            agent: an SB3 agent built on ``venv``, not yet trained.
            reward_model: the reward the agent trains on, ``reward_trainer.model``.
            reward_trainer: what refits it on the labels after each round.
            teacher: what labels the chosen pairs, or a function of the first round's candidate
                pairs that makes it then (a simulated teacher whose ``beta`` is fitted on them).
            selector: what chooses the pairs to ask among the candidates.
            query: when and how many pairs are asked, and of what segments.
            total_timesteps: the budget: env steps in all, the random ones included.
            rng: the loop's randomness: random steps, candidate pairs, selection, refits.
            normalize_reward: whether the agent sees the reward standardised by running
                statistics (reset at each refit).
            dataset: the labelled pairs so far and the store their trajectories are in, which
                the recorder extends; default empty, binary labels.
            random_steps_seed: the seed the random steps' envs are reset with.
            logger: where the rounds' metrics and the episodes' returns go.
            run_dir: where each round first saves a resume point, and from whose point the loop
                resumes; needs ``config``.
            config: the settings the parts were built from, which a resume point records and
                checks (its ``query`` and ``agent.total_timesteps`` are ``query`` and
                ``total_timesteps``).

        Raises:
            ConfigError: on a budget or query settings that do not fit the envs or the agent,
                a reward trainer of another model, an off-policy agent with a replay buffer of
                its own, or a run directory without its config.
        """
        self.query, self.total_timesteps, self._config = query, total_timesteps, config
        self.logger = logger
        self.run_dir = None if run_dir is None else Path(run_dir)
        self.random_steps_seed = random_steps_seed
        check_parts(venv, agent, query, total_timesteps, config, self.run_dir)
        if reward_trainer.model is not reward_model:
            raise ConfigError("reward_trainer: it trains another model than reward_model")
        point = None
        if self.run_dir is not None:
            assert config is not None  # check_parts refused a run directory without it
            point = prefrl_resume.load(self.resume_dir, config.model_dump(mode="json"))
        self.resume_point = point
        self.rng = rng
        self.venv = venv
        n_envs = venv.num_envs
        # the random steps that seed the first query are env steps of the budget, as the agent's are
        self.random_steps = -(-query.every_steps // n_envs) * n_envs
        # PEBBLE's exploration: the last unsupervised_steps of them are the agent's own
        self.unsupervised_steps = -(-query.unsupervised_steps // n_envs) * n_envs
        if point is not None:
            self.dataset = point.dataset
        else:
            self.dataset = dataset if dataset is not None else PreferenceDataset(TrajectoryStore())
        self.store = self.dataset.store
        self.model = reward_model
        self.trainer = reward_trainer
        self.selector = selector
        raw: RewardFn = TorchRewardFn(self.model)
        self.reward_fn = NormalizedReward(raw, RunningNorm()) if normalize_reward else raw
        recorder = TrajectoryRecorder(self.store, n_envs, max_length=max(query.segment_length, 200))
        self.relabeller: RolloutRewardRelabeller | None = None  # an on-policy agent's rewards
        self.wrapped: RewardVecEnvWrapper
        if isinstance(agent, OffPolicyAlgorithm):
            self.wrapped, buffer = per_sample_reward(venv, self.reward_fn, observers=[recorder])
            agent.set_env(self.wrapped)
            give_lazy_buffer(agent, buffer["replay_buffer_kwargs"])
            check_reward_env(agent)  # VecNormalize inside the reward wrapper: the env's reward stored
            # its clock starts after the random steps, so its own random start comes on top
            agent.learning_starts += self.random_steps
        else:
            self.wrapped, self.relabeller = per_rollout_reward(venv, self.reward_fn, observers=[recorder])
            agent.set_env(self.wrapped)
        self.agent = agent
        self.teacher: Teacher | None = teacher if isinstance(teacher, Teacher) else None
        self._make_teacher: TeacherFactory | None = None if isinstance(teacher, Teacher) else teacher
        self.result = PrefRLResult(self.agent, self.dataset)
        self.rollout_start: RolloutStart | None = None  # of the rollout under way
        if point is not None:
            self._restore(point)

    @classmethod
    def from_config(cls, config: PrefRLConfig, logger: Logger | None = None,
                    teacher: Teacher | None = None, run_dir: str | Path | None = None) -> PreferenceRL:
        """The loop ``config`` describes, every part built from it (``rlkit.prefrl.from_config``).

        Args:
            config: the command's config.
            logger: where the rounds' metrics and the episodes' returns go.
            teacher: replaces the one ``config.teacher`` describes (people's, for
                ``teacher.kind=human``: ``rlkit.runners.prefrl.build_preference_rl`` makes it).
            run_dir: where each round first saves a resume point; a run directory holding one
                resumes from it (``rlkit.prefrl.resume``).

        Returns:
            The loop, resumed where ``run_dir`` holds a resume point.
        """
        from rlkit.prefrl.from_config import build

        return build(cls, config, logger, teacher, run_dir)

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
    def config(self) -> PrefRLConfig:
        """The settings the parts were built from, which a resume point records."""
        if self._config is None:
            raise InvalidDataError("this pref-rl loop was built from parts without their config")
        return self._config

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
        query = self.query
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
            assert self._make_teacher is not None  # __init__ was given one or the other
            self.teacher = self._make_teacher(candidates)
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
        query = self.query
        point = self.resume_point
        if point is None:
            # Seed the store with random behaviour so the first queries have something to compare;
            # those env steps count toward the budget: the agent's clock starts after them.
            seed_steps = self.random_steps - self.unsupervised_steps
            self.store.extend(collect_trajectories(
                self.venv, None, self.rng, n_steps=seed_steps, max_length=200,
                seed=self.random_steps_seed,
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
        remaining = self.total_timesteps - self.agent.num_timesteps
        if remaining > 0:
            budget = StopAtBudget(self.total_timesteps)
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
        limit = self.query.max_pairs
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
        if self.num_timesteps - self.last >= self.loop.query.every_steps:
            self.last = self.num_timesteps
            if self.loop.wants_query():
                self.loop.query_and_refit(self.loop.query.pairs_per_round)
        return True

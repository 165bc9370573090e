"""Online preference-based RL (PEBBLE / PrefPPO style) on any SB3 algorithm.

The agent trains on the learned reward through ``RewardVecEnvWrapper``; a recorder keeps its
experience. Every ``query.every_steps`` steps, candidate pairs are drawn from that experience,
the most informative are labelled by a teacher, the reward model is refit, and an off-policy
replay buffer is relabelled with the new reward.

The teacher is simulated, or people (``teacher.kind=human``): the queries then go to the run
directory's label store and media folder, which ``rlkit serve --run-dir <run dir>`` serves; each
person's label is a row of its own in the dataset, with its annotator and interface, and pairs
nobody answered before the timeout are NaN (skipped), never guessed.
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
from rlkit.errors import InvalidDataError
from rlkit.feedback import OrdinalScale, PreferenceDataset, SimulatedTeacher, make_selector
from rlkit.human.store import LabelStore
from rlkit.human.teacher import Answers, HumanTeacher, HumanTeacherConfig
from rlkit.logging import Logger
from rlkit.pipeline.agent import EpisodeLog, EpisodeLogCallback
from rlkit.pipeline.configs import PrefRLConfig, PrefRLTeacherSettings
from rlkit.pipeline.steps import (
    build_reward_model,
    make_agent,
    make_teacher,
    make_venv,
    trainer_config,
)
from rlkit.reward import RewardEnsemble, RewardTrainer, RunningNorm
from rlkit.reward.metrics import evaluate_reward
from rlkit.reward.nets import TorchRewardFn
from rlkit.reward.normalize import NormalizedReward
from rlkit.types import RewardFn, Teacher
from rlkit.wrappers import RewardVecEnvWrapper, relabel_replay_buffer

log = logging.getLogger(__name__)


@dataclass
class RoundRecord:
    timestep: int
    n_labels: int
    val_accuracy: float
    fresh_accuracy: float
    return_pearson: float


@dataclass
class PrefRLResult:
    agent: BaseAlgorithm
    dataset: PreferenceDataset
    rounds: list[RoundRecord] = field(default_factory=list)
    episodes: EpisodeLog = field(default_factory=EpisodeLog)


class PreferenceRL:
    """Wires env, recorder, reward model, teacher and agent; ``learn`` runs the loop.

    ``teacher`` defaults to the one ``config.teacher`` describes (people need ``run_dir``, whose
    label store and media ``rlkit serve`` serves); pass any ``Teacher`` to replace it.
    """

    def __init__(self, config: PrefRLConfig, logger: Logger | None = None,
                 teacher: Teacher | None = None, run_dir: str | Path | None = None) -> None:
        self.config = config
        self.logger = logger
        self.rng = np.random.default_rng(config.seed)
        torch.manual_seed(config.seed)
        self.venv = make_venv(config.env)
        self.store = TrajectoryStore()
        self.dataset = PreferenceDataset(self.store, OrdinalScale.get(config.teacher.scale))
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
        self.wrapped = RewardVecEnvWrapper(self.venv, self.reward_fn, observers=[recorder])
        self.agent = make_agent(config.agent, self.wrapped, config.seed)
        if teacher is None and config.teacher.kind == "human":
            teacher = make_human_teacher(config.teacher, run_dir)
        self.teacher: Teacher | None = teacher
        self.result = PrefRLResult(self.agent, self.dataset)

    # -- one round of feedback ------------------------------------------------------------
    def query_and_refit(self, n_pairs: int) -> RoundRecord:
        query = self.config.query
        candidates = sample_pairs(self.store, n_pairs * query.candidates_per_query,
                                  query.segment_length, self.rng)
        if self.teacher is None:
            self.teacher = make_teacher(self.config.teacher, candidates, self.rng)
        chosen = candidates.subset(self.selector.select(candidates, n_pairs, self.rng))
        meta: dict[str, Any] = {}
        if isinstance(self.teacher, SimulatedTeacher):
            labels, meta["oracle_p"] = self.teacher.label_with_oracle(chosen)
        elif isinstance(self.teacher, HumanTeacher):  # each person's label is a row of its own
            answers = self.teacher.answers(chosen)
            chosen, labels = chosen.subset(answers.pair), answers.value
        else:
            labels = self.teacher.label(chosen)
        fresh = evaluate_reward(self.model, chosen, labels)  # before the refit: generalisation
        meta["timestep"] = self.agent.num_timesteps
        if isinstance(self.teacher, HumanTeacher):
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
        record = RoundRecord(
            timestep=self.agent.num_timesteps, n_labels=len(self.dataset), val_accuracy=val_accuracy,
            fresh_accuracy=fresh["accuracy"], return_pearson=fresh["return_pearson"],
        )
        self.result.rounds.append(record)
        if self.logger is not None:
            self.logger.log({f"prefrl/{k}": float(v) for k, v in vars(record).items()},
                            step=record.timestep)
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
        # Seed the store with random behaviour so the first queries have something to compare.
        self.store.extend(collect_trajectories(
            self.venv, None, self.rng, n_steps=query.every_steps, max_length=200,
            seed=self.config.env.seed + 1,
        ))
        self.query_and_refit(query.initial_pairs)
        callbacks = [EpisodeLogCallback(self.result.episodes, self.logger),
                     _QueryCallback(self)]
        self.agent.learn(self.config.agent.total_timesteps, callback=callbacks)
        return self.result

    def wants_query(self) -> bool:
        limit = self.config.query.max_pairs
        return limit is None or len(self.dataset) < limit


def make_human_teacher(settings: PrefRLTeacherSettings, run_dir: str | Path | None) -> HumanTeacher:
    """People at ``rlkit serve --run-dir run_dir``: queries in its label store, videos in its media/."""
    if run_dir is None:
        raise InvalidDataError("teacher.kind=human needs a run directory: the one `rlkit serve --run-dir` "
                               "serves to annotators")
    store = LabelStore(run_dir)
    if store.n_queries():
        raise InvalidDataError(
            f"{run_dir}: its label store already holds {store.n_queries()} queries of an earlier run; "
            "pref-rl keeps no trajectories to resume with, so their labels would be read as labels of "
            "other segments: use a new run directory"
        )
    store.set_scale(OrdinalScale.get(settings.scale))
    log.info("queries wait for labels at `rlkit serve --run-dir %s`", run_dir)
    return HumanTeacher(store, HumanTeacherConfig(**settings.human.model_dump()),
                        media_dir=Path(run_dir) / "media")


class _QueryCallback(BaseCallback):
    def __init__(self, loop: PreferenceRL) -> None:
        super().__init__()
        self.loop = loop
        self.last = 0

    def _on_step(self) -> bool:
        if self.num_timesteps - self.last >= self.loop.config.query.every_steps:
            self.last = self.num_timesteps
            if self.loop.wants_query():
                self.loop.query_and_refit(self.loop.config.query.pairs_per_round)
        return True


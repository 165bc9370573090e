"""The pref-rl loop a ``PrefRLConfig`` describes: each of ``PreferenceRL``'s parts built from its
section of the config (``PreferenceRL.from_config``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from rlkit.data import TrajectoryStore
from rlkit.data.segments import SegmentPairs
from rlkit.errors import ConfigError
from rlkit.factories.algorithms import ALGORITHMS
from rlkit.factories.builders import (
    build_reward_model,
    make_agent,
    make_teacher,
    make_venv,
    trainer_config,
)
from rlkit.factories.configs import PrefRLConfig
from rlkit.feedback import OrdinalScale, PreferenceDataset
from rlkit.logging import Logger
from rlkit.prefrl.query import make_selector
from rlkit.reward import RewardEnsemble, RewardTrainer
from rlkit.reward.numpy_rewards import TorchRewardFn
from rlkit.types import Teacher

if TYPE_CHECKING:
    from rlkit.prefrl.loop import PreferenceRL


def build(loop_class: type[PreferenceRL], config: PrefRLConfig, logger: Logger | None = None,
          teacher: Teacher | None = None, run_dir: str | Path | None = None) -> PreferenceRL:
    """``loop_class`` over the parts ``config`` describes, seeded by ``config.seed``: the envs
    (recording MuJoCo states when people watch videos of them), the reward model and its trainer,
    the selector over the model's members, the agent, and, unless ``teacher`` is given, the
    simulated teacher (made from the first round's candidate pairs, on which ``beta="auto"`` is
    fitted).

    Args:
        loop_class: ``PreferenceRL`` or a subclass.
        config: the command's config.
        logger: where the rounds' metrics and the episodes' returns go.
        teacher: replaces the one ``config.teacher`` describes; needed for ``teacher.kind=human``.
        run_dir: where each round first saves a resume point, and from whose point the loop resumes.

    Returns:
        The loop.

    Raises:
        ConfigError: for people without their teacher, an off-policy agent given a replay buffer
            class, and the settings ``PreferenceRL`` refuses.
    """
    if teacher is None and config.teacher.kind == "human":
        raise ConfigError("teacher.kind=human: pass the people's teacher in "
                          "(rlkit.runners.prefrl.build_preference_rl makes it from the config)")
    kwargs = config.agent.kwargs
    if issubclass(ALGORITHMS[config.agent.algo], OffPolicyAlgorithm) and "replay_buffer_class" in kwargs:
        raise ConfigError(f"agent.kwargs.replay_buffer_class={kwargs['replay_buffer_class']!r}: "
                          "pref-rl gives off-policy agents its own replay buffer, which labels "
                          "their transitions with the learned reward; leave it out")
    rng = np.random.default_rng(config.seed)
    torch.manual_seed(config.seed)
    people_watch = config.teacher.kind == "human" and config.teacher.human.render_media
    venv = make_venv(config.env, record_states=people_watch)  # MuJoCo states: their videos
    model = build_reward_model(config.model, venv.observation_space, venv.action_space, config.seed)
    trainer = RewardTrainer(model, trainer_config(config.trainer, config.seed))
    members = model.members if isinstance(model, RewardEnsemble) else [model]
    selector = make_selector(config.query.selector, [TorchRewardFn(m) for m in members])
    agent = make_agent(config.agent, venv, config.seed)

    def simulated(candidates: SegmentPairs) -> Teacher:
        return make_teacher(config.teacher, candidates, rng)

    dataset = PreferenceDataset(TrajectoryStore(), OrdinalScale.get(config.teacher.scale))
    return loop_class(
        venv, agent, model, trainer, teacher if teacher is not None else simulated, selector,
        config.query, config.agent.total_timesteps, rng,
        normalize_reward=config.agent.normalize_reward, dataset=dataset,
        random_steps_seed=config.env.seed + 1, logger=logger, run_dir=run_dir, config=config,
    )

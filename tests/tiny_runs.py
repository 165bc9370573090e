"""Whole runs on a tiny budget: a pref-rl config and an M3HF config that finish in seconds, the
overrides of an APEC run on the Point env, a counter of the env steps a run takes, and a stand-in
that kills a pref-rl run in a chosen query round."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvStepReturn

from rlkit.config import load_config
from rlkit.data import SegmentPairs
from rlkit.factories.configs import PrefRLConfig
from rlkit.m3hf.run_config import M3HFConfig
from rlkit.prefrl import loop as prefrl_loop
from tests.tiny_envs import POINT_ID

SCRIPT = {  # the scripted M3HF feedback of tiny_config: phase -> texts
    1: ["Agent 0 should pick up the tomato and chop it."],
    2: ["Be faster!"],
}

APEC_TINY = [  # APEC on the Point env: demonstrator, AIL, pairs, D-REX, reward and policy in seconds each
    f"env.id={POINT_ID}", "env.horizon=20", "env.n_envs=2",
    "demos.algo=ppo", "demos.total_timesteps=2048", "demos.checkpoint_every=512",
    "demos.baseline=random", "demos.eval_episodes=4",
    "demos.kwargs={n_steps: 64, batch_size: 64, learning_rate: 0.001}",
    "ail.rounds=4", "ail.steps_per_round=256", "ail.generator=ppo", "ail.generator_kwargs={}",
    "ail.discriminator.hidden=[16, 16]",  # linear_first (the default): one hidden ReLU layer
    "ail.discriminator.batch_size=64", "ail.agent_buffer=256",
    "rollouts.per_checkpoint=2", "pairs.n_pairs=24", "pairs.gap=1", "pairs.ot_threshold=0",
    "drex.noise_levels=[0.0, 0.25, 0.5, 0.75]", "drex.rollouts_per_level=2", "drex.bc_epochs=5",
    "reward.hidden=[16, 16]", "reward.trainer.max_epochs=3",
    "heldout.episodes_per_policy=1", "heldout.random_episodes=2", "heldout.n_pairs=64",
    "heldout.segment_length=10",
    "policy.methods=[apec]", "policy.agent.algo=ppo", "policy.agent.total_timesteps=256",
    "policy.agent.eval_episodes=2", "policy.agent.kwargs={n_steps: 64, batch_size: 64}",
]


def small_config(algo: str, **extra: str) -> PrefRLConfig:
    """Pref-rl on Pendulum for 600 steps, querying every 200.

    Args:
        algo: ``ppo`` or ``sac`` (each gets small kwargs of its own).
        **extra: more overrides, ``key=value`` as on the command line.

    Returns:
        The config.
    """
    kwargs = ("{n_steps: 64, batch_size: 64, n_epochs: 2}" if algo == "ppo"
              else "{learning_starts: 100, batch_size: 64, buffer_size: 5000}")
    overrides = [
        "env.id=Pendulum-v1", "env.n_envs=2", f"agent.algo={algo}", f"agent.kwargs={kwargs}",
        "agent.total_timesteps=600", "query.every_steps=200", "query.initial_pairs=40",
        "query.pairs_per_round=20", "query.segment_length=10", "model.hidden=[32, 32]",
        # three whole passes per refit (a steps refit would give 20 new labels one step here)
        "trainer.max_epochs=3", "trainer.refit=epochs", *(f"{k}={v}" for k, v in extra.items()),
    ]
    return load_config(PrefRLConfig, None, overrides)


def count_env_steps(venv: VecEnv) -> Callable[[], int]:
    """Counts every step of ``venv``'s envs from now on, whoever takes it.

    Args:
        venv: the vector env whose ``step_wait`` is wrapped.

    Returns:
        A reader of the count so far.
    """
    steps = [0]
    step_wait = venv.step_wait

    def counted() -> VecEnvStepReturn:
        steps[0] += venv.num_envs
        return step_wait()

    venv.step_wait = counted  # type: ignore[method-assign]
    return lambda: steps[0]


def tiny_config(**changes: object) -> M3HFConfig:
    """M3HF on the tomato recipe: two phases of 64 steps, scripted feedback (:data:`SCRIPT`).

    Args:
        **changes: top-level fields that replace the base's.

    Returns:
        The config.
    """
    base = {
        "env": {"recipe": "tomato", "max_steps": 20},
        "num_games": 2,
        "generation_steps": 64,
        "phases": 2,
        "marl": {"n_steps": 16, "batch_size": 32, "n_epochs": 1},
        "feedback": {"source": "scripted", "texts": SCRIPT},
        "parser": "rule",
        "eval_games": 2,
        "video_cell_px": 8,
    }
    return M3HFConfig.model_validate(base | changes)


class KilledInRound:
    """Stands in for ``evaluate_reward``: records each round's pairs and labels, and kills the run
    in round ``kill_at`` (after the teacher answered, before the refit).

    Args:
        kill_at: the round (counted from 1) that raises ``KeyboardInterrupt``; 0 never does.
        real: what answers the rounds it lets through (``evaluate_reward`` as imported here, not
            as patched).
    """

    def __init__(self, kill_at: int, real: Callable[..., Any] = prefrl_loop.evaluate_reward) -> None:
        self.kill_at, self.real = kill_at, real
        self.rounds: list[tuple[np.ndarray, np.ndarray]] = []

    def __call__(self, model: Any, pairs: SegmentPairs, labels: np.ndarray) -> Any:
        self.rounds.append((np.concatenate([pairs.left, pairs.right], axis=1), labels.copy()))
        if len(self.rounds) == self.kill_at:
            raise KeyboardInterrupt
        return self.real(model, pairs, labels)

"""Whole runs on a tiny budget: a pref-rl config and an M3HF config that finish in seconds, and a
counter of the env steps a run takes."""

from __future__ import annotations

from collections.abc import Callable

from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvStepReturn

from rlkit.config import load_config
from rlkit.factories.configs import PrefRLConfig
from rlkit.m3hf.run_config import M3HFConfig

SCRIPT = {  # the scripted M3HF feedback of tiny_config: phase -> texts
    1: ["Agent 0 should pick up the tomato and chop it."],
    2: ["Be faster!"],
}


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

"""Evaluate a ``MultiAgentPPO`` on fresh games: the ORIGINAL env return beside the shaped one.

A shaped reward can rise while the task gets worse (the reward is what the feedback said, not
what the env pays); model selection and learning curves therefore read ``original_return``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rlkit.marl.ppo import MultiAgentPPO
from rlkit.marl.rows import AgentRows, RowStep


def evaluate(
    trainer: MultiAgentPPO,
    rows: AgentRows,
    seed: int = 0,
    deterministic: bool = False,
    on_step: Callable[[RowStep], None] | None = None,
) -> dict[str, float]:
    """Play one episode in each of ``rows``' games (a separate env from the training one).

    Returns the means over games of the original return (per agent, averaged over agents: the
    team return when the env pays a team reward), the shaped return, the episode length, and the
    share of games the env ended itself (``terminated``, not a time limit; Overcooked: delivered).
    ``on_step`` sees every step (e.g. to record frames); sampled actions advance the trainer's RNG.

    Args:
        trainer: the policies to evaluate.
        rows: the evaluation games, ``num_games * n_agents`` rows; reset here.
        seed: passed to ``rows.reset`` (``ParallelEnvRows``: game g starts from ``seed + g``;
            Overcooked has no randomness).
        deterministic: take each policy's most likely action instead of sampling.
        on_step: called with each ``RowStep``, the rows of games already finished included.

    Returns:
        ``eval/original_return`` and its standard deviation over games
        (``eval/original_return_std``), ``eval/shaped_return``, ``eval/episode_length`` and
        ``eval/terminated``.
    """
    n_games, n_agents = rows.num_games, rows.n_agents
    obs = rows.reset(seed=seed)
    finished = np.zeros(n_games, dtype=bool)
    sums = np.zeros((2, n_games * n_agents))
    lengths = np.zeros(n_games, dtype=np.int64)
    terminated = np.zeros(n_games, dtype=bool)
    while not finished.all():
        step = rows.step(trainer.predict(obs, deterministic=deterministic))
        if on_step is not None:
            on_step(step)
        running = np.repeat(~finished, n_agents)
        sums[0] += np.where(running, step.rewards, 0.0)
        sums[1] += np.where(running, step.original, 0.0)
        lengths += ~finished
        terminated |= ~finished & step.dones[::n_agents] & ~step.truncated[::n_agents]
        finished |= step.dones[::n_agents]
        obs = step.obs
    shaped, original = sums.reshape(2, n_games, n_agents).mean(axis=2)
    return {
        "eval/original_return": float(original.mean()),
        "eval/original_return_std": float(original.std()),
        "eval/shaped_return": float(shaped.mean()),
        "eval/episode_length": float(lengths.mean()),
        "eval/terminated": float(terminated.mean()),
    }

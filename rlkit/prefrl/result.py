"""What a pref-rl run returns: its agent, labels, rounds and episodes, and the summary
``rlkit pref-rl`` reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm

from rlkit.factories.agent import EpisodeLog
from rlkit.factories.budget import agent_updates
from rlkit.feedback import PreferenceDataset


@dataclass
class QueryRound:
    """One query round of a pref-rl run: labels asked for, and the reward model's accuracy.

    Attributes:
        timestep: the agent's env steps when the pairs were labelled.
        n_labels: the dataset's labelled rows after the round (all rounds so far).
        val_accuracy: the refit's validation accuracy at its kept epoch, in [0, 1]; NaN without
            a refit or held-out pairs.
        fresh_accuracy: the model's accuracy on the round's new labels before the refit (how
            well it generalises), in [0, 1].
        return_pearson: the Pearson correlation of the model's and the true segment returns of
            the round's pairs, before the refit.
        refit: the round's labels refit the reward model; False when no label came (all skipped
            or unanswered) and the model stayed.
    """

    timestep: int
    n_labels: int
    val_accuracy: float
    fresh_accuracy: float
    return_pearson: float
    refit: bool = True  # False: no labels came (all skipped or unanswered), the model stayed


@dataclass
class PrefRLResult:
    """What a pref-rl run returns.

    Attributes:
        agent: the trained SB3 agent.
        dataset: every label the run collected.
        rounds: the query rounds, in order.
        episodes: the true and learned returns of the agent's training episodes, by the
            timestep each ended.
        reward: what the agent trained on: ``"learned"``, or ``"env"`` (the env's own, true
            reward).
    """

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

"""The reward stages of ``rlkit apec``: each method's preference dataset and reward model, cached
in the run directory, and every learned reward scored on the held-out set (cached in
``reward_metrics.json`` with what they depend on, so a rerun on the same held-out set and
rewards neither scores nor logs them again)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from rlkit.apec.config import ApecConfig, Method
from rlkit.apec.evaluation import heldout_metrics
from rlkit.data import TrajectoryStore
from rlkit.factories.builders import trainer_config
from rlkit.feedback import ORACLE, PreferenceDataset
from rlkit.logging import Logger
from rlkit.persistence import atomic_write_json, read_json
from rlkit.persistence.formats import sha256_file, weights_sha256
from rlkit.reward import RewardNet, RewardTrainer, build_reward_net, load_reward_model, save_reward_model

__all__ = ["absorbing_masked", "cached_dataset", "fitted_reward", "masks_absorbing", "reward_net",
           "score_rewards", "scored_before", "scores_key"]


def cached_dataset(path: Path, build: Callable[[], PreferenceDataset]) -> PreferenceDataset:
    """The preference dataset saved at ``path``, or ``build()``'s, saved there first.

    Args:
        path: where the dataset is (or goes): ``path.npz`` and ``path.json``.
        build: makes the dataset when none is saved.

    Returns:
        The dataset.
    """
    if path.with_suffix(".json").is_file():
        return PreferenceDataset.load(path)
    dataset = build()
    dataset.save(path)
    return dataset


def fitted_reward(directory: Path, config: ApecConfig, dataset: PreferenceDataset,
                  observation_space: Any, action_space: Any) -> tuple[Any, dict[str, Any]]:
    """The reward model fitted to ``dataset`` (saved in ``directory``), fitted and saved first when
    ``directory`` holds none, with its training summary.

    Args:
        directory: the model's folder (its weights, spec and ``training.json``).
        config: the run's config (``reward``: the net and its trainer; ``seed``).
        dataset: the method's preference dataset.
        observation_space: the env's observation space.
        action_space: the env's action space.

    Returns:
        The model and its summary (train pairs, epochs, ``reward_updates``: the trainer's
        gradient steps, final loss, validation accuracy, seconds).
    """
    if (directory / "training.json").is_file():
        return load_reward_model(directory).model, dict(read_json(directory / "training.json"))
    model = reward_net(config, observation_space, action_space)
    settings = config.reward.trainer
    scale = dataset.scale or ORACLE  # without a scale a dataset holds graded (oracle) labels
    if settings.loss == "bt" and tuple(scale.levels) != (0.0, 1.0):
        # Bradley-Terry refuses graded labels; the ordinal cross-entropy is the same loss on
        # binary labels and the unbiased one on graded labels.
        settings = settings.replace(loss="ordinal")
    report = RewardTrainer(model, trainer_config(settings, config.seed)).fit(
        dataset, rng=np.random.default_rng(config.seed))
    save_reward_model(model, directory)
    summary = {"train_pairs": report.n_train, "epochs": len(report.train_loss),
               "reward_updates": report.steps,
               "final_train_loss": float(report.train_loss[-1]),
               "val_accuracy": float(report.val_accuracy[report.best_epoch]) if report.val_accuracy
               else float("nan"), "train_seconds": report.seconds}
    atomic_write_json(directory / "training.json", summary)
    return model, summary


def reward_net(config: ApecConfig, observation_space: Any, action_space: Any) -> RewardNet:
    """A fresh reward model as ``config.reward`` describes it, seeded by the run's seed."""
    return build_reward_net(observation_space, action_space, inputs=config.reward.inputs,
                            hidden=config.reward.hidden, seed=config.seed,
                            encoder=config.reward.encoder, absorbing_flag=masks_absorbing(config),
                            linear_first=config.reward.linear_first)


def masks_absorbing(config: ApecConfig) -> bool:
    """Are the learned rewards 0 on absorbing states (``reward.mask_absorbing`` on a padded task)?"""
    return config.env.horizon is not None and config.reward.mask_absorbing


def absorbing_masked(net: RewardNet) -> RewardNet:
    """A copy of ``net`` that is 0 on absorbing states, as the reference masks them: with the
    generator's episodes ending at termination the discriminator never saw one, so its value
    there would be arbitrary."""
    masked = RewardNet(replace(net.spec, absorbing_flag=True))
    masked.load_state_dict(net.state_dict())
    return masked


def score_rewards(rewards: dict[Method, Any], training: dict[Method, dict[str, Any]], store: TrajectoryStore,
                  pairs: np.ndarray, sources: np.ndarray, absorbing_flag: bool,
                  logger: Logger | None = None) -> dict[str, dict[str, Any]]:
    """Each reward's held-out metrics (``heldout_metrics``) with its training summary, logged as
    ``heldout/<method>/<metric>`` at step 0.

    Args:
        rewards: the learned rewards by method.
        training: each fitted reward's training summary and label agreement (none for raw AIL).
        store: the held-out trajectories.
        pairs: their true-return pairs.
        sources: each trajectory's source (AIL, demonstrator, random).
        absorbing_flag: do the observations end with an absorbing-state flag?
        logger: where the scores are logged, if anywhere.

    Returns:
        The metrics by method.
    """
    scores: dict[str, dict[str, Any]] = {}
    for method, reward in rewards.items():
        scores[method] = heldout_metrics(reward, store, pairs, sources, absorbing_flag)
        scores[method] |= training.get(method, {})
        if logger is not None:
            logger.log({f"heldout/{method}/{k}": v for k, v in scores[method].items()
                        if isinstance(v, float)}, step=0)
    return scores


def scores_key(heldout_store: Path, rewards: dict[Method, Any]) -> str:
    """What a set of held-out scores depends on: the held-out store's file and each reward's
    weights, as one digest.

    Args:
        heldout_store: the held-out set's ``store.npz``.
        rewards: the learned rewards by method.

    Returns:
        The hex SHA-256.
    """
    digest = hashlib.sha256(sha256_file(heldout_store).encode())
    for method in sorted(rewards):
        digest.update(f"{method}={weights_sha256(rewards[method])}".encode())
    return digest.hexdigest()


def scored_before(path: Path, key: str) -> dict[str, Any] | None:
    """The results an earlier sitting wrote to ``path`` (``reward_metrics.json``) when they were
    scored on the same held-out set and rewards (``scores_key``); None otherwise.

    Args:
        path: the run's ``reward_metrics.json``.
        key: ``scores_key`` of this sitting's held-out store and rewards.

    Returns:
        The results, or None.
    """
    if not path.is_file():
        return None
    results = dict(read_json(path))
    return results if results.get("scores_key") == key else None

"""``rlkit label``: pairs labelled by a simulated teacher or by hand in the terminal, with what
was done logged (not an empty ``metrics.jsonl``) and the dataset kept as a W&B artifact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from rlkit.data import TrajectoryStore
from rlkit.errors import ConfigError
from rlkit.factories.builders import label_pairs
from rlkit.factories.configs import LabelConfig
from rlkit.logging import Logger
from rlkit.runners.session import dataset_files, log_outputs


def label_simulated(config: LabelConfig, run_dir: Path, logger: Logger) -> dict[str, Any]:
    """Random pairs of ``config.trajectories`` labelled by the simulated teacher; returns the
    summary the command prints (pairs, skipped, count per level, the dataset's path)."""
    if config.trajectories is None:  # `rlkit label` refuses it before making a run directory
        raise ConfigError("labelling by a simulated teacher needs trajectories=<the .npz of `rlkit collect`>")
    store = TrajectoryStore.load(config.trajectories)
    dataset = label_pairs(store, config, np.random.default_rng(config.seed))
    npz, description = dataset.save(run_dir / "preferences")
    metrics = label_metrics(dataset.labels, dataset.meta["oracle_p"])
    logger.log(metrics, step=0)
    log_outputs(logger, run_dir, preferences=("dataset", [npz, description]))
    return {"pairs": len(dataset), "skipped": int(metrics["label/skipped"]),
            "labels": {key.removeprefix("label/level_"): int(count)
                       for key, count in metrics.items() if key.startswith("label/level_")},
            "path": str(npz.with_suffix(""))}


def label_by_hand(config: LabelConfig, run_dir: Path, logger: Logger) -> dict[str, Any]:
    """``rlkit label --human``: the terminal session (``rlkit.human.terminal``), its counts logged."""
    from rlkit.human.terminal import label_in_terminal

    summary = label_in_terminal(config, run_dir)
    logger.log({"label/answered": summary["answered"], "label/labels_in_store": summary["labels_in_store"]},
               step=0)
    if "path" in summary:
        log_outputs(logger, run_dir, preferences=("dataset", dataset_files(summary["path"])))
    return summary


def label_metrics(labels: np.ndarray, oracle_p: np.ndarray) -> dict[str, float]:
    """What a labelling run did: pairs, skipped, the count at each level, and how often a label
    sides with the true return (the oracle's p, over pairs neither tied nor labelled a tie)."""
    labels, oracle_p = np.asarray(labels, float), np.asarray(oracle_p, float)
    given = np.isfinite(labels)
    decided = given & (labels != 0.5) & (oracle_p != 0.5)
    agree = (labels[decided] > 0.5) == (oracle_p[decided] > 0.5)
    metrics = {"label/pairs": float(len(labels)), "label/skipped": float((~given).sum()),
               "label/agreement": float(agree.mean()) if decided.any() else float("nan"),
               "label/mean_abs_error": float(np.abs(labels[given] - oracle_p[given]).mean())
               if given.any() else float("nan")}
    levels, counts = np.unique(labels[given], return_counts=True)
    return metrics | {f"label/level_{level:g}": float(count)
                      for level, count in zip(levels, counts, strict=True)}

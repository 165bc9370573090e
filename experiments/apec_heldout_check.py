"""Which held-out trajectories does a learned reward rank backwards: those better than the
demonstrations, or those worse?

One command:  python experiments/apec_heldout_check.py [--config FILE] [key=value ...]

For every finished (task, seed) of an APEC experiment (``experiments/apec.py`` or
``experiments/apec_pixels.py``; ``--config`` as theirs, default the pixel one) and every reward
it scored (each method's reward model; ``raw_ail``: the last AIL checkpoint's discriminator, as
the experiment scores it), each held-out trajectory's learned return (the sum of the reward's
step predictions) against its true return. Over the pairs of whole held-out trajectories with
distinct true returns, the accuracy (the one with the larger learned return has the larger true
return) in three groups: both better than the demonstrations' mean return, both worse, one of
each. A reward that pays for looking like the demonstrations ranks the mixed pairs and the worse
ones right and can rank the better ones backwards. Also the Pearson r over all trajectories (the
experiment's ``trajectory_pearson``, recomputed). Writes ``heldout_check.json`` in ``out_dir``
and prints a JSON line per (task, seed, method).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from rlkit.scale.command import exit_status

CONFIG = Path(__file__).parent / "configs" / "apec_pixels.yaml"
GROUPS = ("better", "worse", "mixed")  # both above the demos' mean return, both below, one of each


def group_accuracy(learned: np.ndarray, true: np.ndarray, demo_return: float) -> dict[str, Any]:
    """Accuracy and pair count per group over every pair of trajectories with distinct true returns.

    Args:
        learned: each trajectory's learned return.
        true: each trajectory's true return.
        demo_return: the demonstrations' mean true return, the groups' boundary.

    Returns:
        ``{group: {"accuracy": ..., "n_pairs": ...}}`` (accuracy NaN for a group without pairs).
    """
    left, right = np.triu_indices(len(true), k=1)
    distinct = true[left] != true[right]
    left, right = left[distinct], right[distinct]
    right_order = np.sign(learned[left] - learned[right]) == np.sign(true[left] - true[right])
    above = true > demo_return
    kinds = {"better": above[left] & above[right], "worse": ~above[left] & ~above[right],
             "mixed": above[left] != above[right]}
    return {group: {"accuracy": float(right_order[rows].mean()) if rows.any() else float("nan"),
                    "n_pairs": int(rows.sum())} for group, rows in kinds.items()}


def check_run(run_dir: Path, methods: list[str]) -> list[dict[str, Any]]:
    """Each scored reward's groups in one finished run directory."""
    from rlkit.ail import CheckpointStore
    from rlkit.ail.demos import load_demos
    from rlkit.apec.evaluation import step_predictions
    from rlkit.data import TrajectoryStore
    from rlkit.persistence.arrays import load_npz
    from rlkit.reward import load_reward_model
    from rlkit.reward.metrics import pearson

    store = TrajectoryStore.load(run_dir / "heldout" / "store.npz")
    true = np.array([float(t.ret) for t in store])
    demo_return = float(np.mean([t.ret for t in load_demos(run_dir / "demos" / "demos.npz")]))
    n_better = int((true > demo_return).sum())
    sources = load_npz(run_dir / "heldout" / "sources.npz")["source"]
    rows = []
    for method in methods:
        if method == "raw_ail":
            checkpoints = CheckpointStore(run_dir / "ail")
            reward: Any = checkpoints.load(checkpoints.rounds()[-1]).discriminator.reward_net
        elif (run_dir / "rewards" / method).is_dir():
            reward = load_reward_model(run_dir / "rewards" / method).model
        else:
            continue
        learned = np.array([float(p.sum()) for p in step_predictions(reward, store)])
        rows.append({"method": method, "demo_return": demo_return, "n_trajectories": len(true),
                     "n_better": n_better, "n_sources": np.bincount(sources).tolist(),
                     "trajectory_pearson": pearson(learned, true),
                     **group_accuracy(learned, true, demo_return)})
    return rows


def main(argv: list[str] | None = None) -> int:
    """The held-out check of every finished run of ``argv``'s config; returns the exit status."""
    from experiments.apec_checks import check_finished_runs  # by name: a script puts the repo root first

    return check_finished_runs(argv, __doc__, CONFIG, check_run, lambda pipeline: pipeline.methods,
                               "heldout_check.json")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `experiments` by name
    sys.exit(exit_status(main, Path(__file__).name))

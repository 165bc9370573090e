"""The APEC experiment's rows: one per (task, seed, method), from a run directory's results or
from the committed rows file (``rows:`` in the config), which keeps finished units' rows where
their run directories are gone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from experiments.apec import ApecExperimentConfig, seed_dir
from rlkit.persistence import read_json, read_json_lines
from rlkit.runners.apec import REWARD_METRICS
from rlkit.runners.apec_policy import STOCHASTIC

METRICS = (("accuracy", "held-out accuracy"), ("step_pearson", "per-step reward r"),
           ("return_pearson", "segment return r"), ("trajectory_pearson", "trajectory return r"),
           ("accuracy_outside_ail", "accuracy, non-AIL trajectories"),
           ("trajectory_pearson_outside_ail", "trajectory r, non-AIL"))
PAIR_COUNTS = ("n_pairs", "n_pairs_outside_ail")
DIAGNOSTICS = ("ail_spearman", "label_agreement")
POLICY_RETURNS = (("policy_return", "policy true return"),  # deterministic: the mean action
                  ("policy_return_stochastic", "policy true return, stochastic (the reference's)"))
POLICY_FIELDS = (*(key for key, _ in POLICY_RETURNS), "policy_curve", "policy_trained_on")  # from its policy


def seed_rows(task_id: str, seed: int, results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per method of a (task, seed)'s ``run_apec`` results; without a policy (not trained,
    or not yet: ``reward_metrics.json``) its return is NaN and its curve empty. ``scored_on`` and
    ``policy_trained_on``: the machines that scored the rewards and trained the policy
    (``rlkit.devices.machine``; None in results written before they were recorded)."""
    rows = []
    for method, metrics in results["methods"].items():
        policy = metrics.get("policy", {})
        rows.append({"task": task_id, "seed": seed, "method": method,
                     **{key: metrics[key] for key, _ in METRICS},
                     **{key: metrics[key] for key in PAIR_COUNTS if key in metrics},
                     "ail_spearman": results["ail_progress"]["spearman_checkpoints"],
                     "label_agreement": metrics.get("label_agreement", float("nan")),
                     "policy_return": policy.get("final_true_return", float("nan")),
                     "policy_return_stochastic": policy.get(STOCHASTIC, float("nan")),
                     "policy_curve": {"timesteps": policy.get("eval_timesteps", []),
                                      "true_returns": policy.get("eval_true_returns", [])},
                     "demo_return": float(np.mean(results["demos"]["returns"])),
                     "demo_fraction": results["demos"].get("fraction", float("nan")),
                     "scored_on": results.get("scored_on"), "policy_trained_on": policy.get("trained_on")})
    return rows


def committed_rows(config: ApecExperimentConfig) -> list[dict[str, Any]]:
    """The rows of ``config.rows`` (none when unset or not written yet) of this config's tasks and
    seeds; a damaged file is a FileFormatError naming its line."""
    if config.rows is None or not Path(config.rows).is_file():
        return []
    tasks = {task.id for task in config.tasks}
    return [row for row in read_json_lines(config.rows)
            if isinstance(row, dict) and row.get("task") in tasks and row.get("seed") in config.seeds]


def has_policy_return(row: dict[str, Any]) -> bool:
    """Does a row hold its method's policy return (NaN until the policy is trained)?"""
    value = row.get("policy_return")
    return isinstance(value, (int, float)) and bool(np.isfinite(value))


def collect_rows(config: ApecExperimentConfig, out: Path) -> list[dict[str, Any]]:
    """The rows of every (task, seed) of the config whose rewards are scored, in config order:
    a finished one's ``rows.json``, else, while its policies train, its ``reward_metrics.json``
    with the policies finished so far (``"policies_done": False``; NaN for the others' returns);
    where its run directory has neither, the committed rows' (``config.rows``), whose policy
    returns also fill those a run directory has not trained (again) yet."""
    committed = committed_rows(config)
    rows = []
    for task in config.tasks:
        for seed in config.seeds:
            run_dir = seed_dir(task, seed, out)
            held = [row for row in committed if (row["task"], row["seed"]) == (task.id, seed)]
            if (run_dir / "rows.json").is_file():
                finished = read_json(run_dir / "rows.json")
                rows += [row | {"policies_done": True} for row in finished]
            elif (run_dir / REWARD_METRICS).is_file():
                scored = read_json(run_dir / REWARD_METRICS)
                for method, metrics in scored["methods"].items():
                    result = run_dir / "policies" / method / "result.json"
                    if result.is_file():
                        metrics["policy"] = read_json(result)
                partial = seed_rows(task.id, seed, scored)
                rows += [_with_committed_policy(row, held) | {"policies_done": False} for row in partial]
            else:
                rows += held
    return rows


def _with_committed_policy(row: dict[str, Any], committed: list[dict[str, Any]]) -> dict[str, Any]:
    """``row`` with its method's policy from the committed rows where it has none of its own."""
    if has_policy_return(row):
        return row
    for other in committed:
        if other.get("method") == row["method"] and has_policy_return(other):
            return row | {key: other[key] for key in POLICY_FIELDS if key in other}
    return row

"""The experiments' summaries over seeds: standard errors with ddof = 1 and 95% t-intervals."""

import math

import pytest

from experiments.apec import METRICS, markdown_table, summarise
from experiments.ordinal_feedback import summarise as ordinal_summarise

T_975_DF2 = 4.302652729911275  # scipy.stats.t.ppf(0.975, 2)


def _row(seed: int, value: float, **extra):
    return {"task": "Hopper-v5", "seed": seed, "method": "apec", **{k: value for k, _ in METRICS},
            "policy_return": value, "ail_spearman": value, "label_agreement": value,
            "n_pairs": 1000 + seed, "n_pairs_outside_ail": 1200, **extra}


def test_apec_summary_uses_the_sample_sd_and_a_t_interval_and_names_the_pairs():
    table = summarise([_row(0, 1.0), _row(1, 2.0), _row(2, 3.0)])
    (entry,) = table
    assert entry["accuracy"] == 2.0
    assert entry["accuracy_se"] == pytest.approx(1.0 / math.sqrt(3))  # ddof = 1: sd 1, not 0.816
    low, high = entry["accuracy_ci95"]
    assert (low, high) == pytest.approx((2 - T_975_DF2 / math.sqrt(3), 2 + T_975_DF2 / math.sqrt(3)))
    assert entry["n_pairs"] == [1000, 1002] and entry["n_pairs_outside_ail"] == [1200, 1200]
    text = markdown_table(table)
    assert "1000–1002 / 1200" in text and f"[{low:.3f}, {high:.3f}]" in text


def test_ordinal_summary_uses_the_sample_sd_and_a_t_interval():
    rows = [{"task": "t", "study": "granularity", "setting": "binary", "seed": s,
             "in_dist_accuracy": v} for s, v in enumerate((1.0, 2.0, 3.0))]
    (entry,) = ordinal_summarise(rows)
    assert entry["in_dist_accuracy_se"] == pytest.approx(1.0 / math.sqrt(3))
    assert entry["in_dist_accuracy_ci95"][1] == pytest.approx(2 + T_975_DF2 / math.sqrt(3))


@pytest.mark.parametrize("name", ["apec", "apec_pixels", "apec_pixels_dmc"])
def test_the_apec_experiment_configs_load_and_name_real_arms(name):
    from pathlib import Path

    from experiments.apec import ApecExperimentConfig, task_config
    from rlkit.apec.config import split_method
    from rlkit.config import load_config

    config = load_config(ApecExperimentConfig, Path("experiments/configs") / f"{name}.yaml", [])
    for task in config.tasks:  # every task's overrides apply to the shared pipeline
        pipeline = task_config(config, task, config.seeds[0])
        assert set(pipeline.policy.methods) <= set(pipeline.methods)
    if name == "apec":  # issue 12's arms: OT-only at three margins, graded labels
        margins = [split_method(m)[1] for m in config.pipeline.methods if m.startswith("ot_only")]
        assert margins == [0.05, 0.1, 0.2] and "apec_ordinal" in config.pipeline.methods

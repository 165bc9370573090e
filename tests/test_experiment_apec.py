"""The experiments' summaries over seeds: standard errors with ddof = 1 and 95% t-intervals."""

import json
import math

import pytest

from experiments.apec_report import markdown_table, summarise
from experiments.apec_rows import METRICS
from experiments.ordinal_report import summarise as ordinal_summarise

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


def test_policy_curves_average_the_seeds_at_the_steps_every_seed_reached(tmp_path):
    from experiments.apec_report import curve_table, plot_curves

    def curve_row(seed, method, returns):
        steps = [50_000 * (k + 1) for k in range(len(returns))]
        return _row(seed, 0.0, method=method, policy_curve={"timesteps": steps, "true_returns": returns})

    rows = [curve_row(0, "apec", [1.0, 4.0, 9.0]), curve_row(1, "apec", [2.0, 5.0]),  # seed 1 was cut
            curve_row(2, "apec", [3.0, 6.0, 7.0]), curve_row(0, "drex", [0.0, 1.0]),
            _row(0, 0.0, method="raw_ail")]  # no policy
    curves = curve_table(rows, "Hopper-v5")
    assert list(curves) == ["apec", "drex"]
    assert [p["timesteps"] for p in curves["apec"]] == [50_000, 100_000]
    second = curves["apec"][1]
    assert (second["mean"], second["n"]) == (5.0, 3)
    half = T_975_DF2 / math.sqrt(3)  # sd 1 over seeds 4, 5, 6
    assert (second["low"], second["high"]) == pytest.approx((5 - half, 5 + half))
    assert curves["drex"][0]["n"] == 1 and math.isnan(curves["drex"][0]["low"])
    plot_curves(curves, "Hopper-v5", 3.0, tmp_path / "curves.png")
    assert (tmp_path / "curves.png").stat().st_size > 0


def test_a_shared_held_out_set_is_one_unit_per_task_that_its_seeds_wait_for_and_policies_come_last(tmp_path):
    from experiments.apec import ApecExperimentConfig, TaskSettings, units
    from rlkit.errors import ConfigError

    tasks = [TaskSettings(id="Hopper-v5"), TaskSettings(id="Walker2d-v5")]
    shared = units(ApecExperimentConfig(seeds=[0, 1], tasks=tasks, shared_heldout=True), tmp_path)
    # every task's prerequisites first, then the seeds seed by seed, each after its task's
    hopper = ("demos-0-Hopper-v5", "heldout-0-Hopper-v5")
    walker = ("demos-1-Walker2d-v5", "heldout-1-Walker2d-v5")
    assert [(u.id, u.after) for u in shared[:8]] == [
        ("demos-0-Hopper-v5", ()), ("heldout-0-Hopper-v5", ("demos-0-Hopper-v5",)),
        ("demos-1-Walker2d-v5", ()), ("heldout-1-Walker2d-v5", ("demos-1-Walker2d-v5",)),
        ("apec-0-Hopper-v5-s0", hopper), ("apec-1-Walker2d-v5-s0", walker),
        ("apec-0-Hopper-v5-s1", hopper), ("apec-1-Walker2d-v5-s1", walker)]
    assert [(u.payload["task"], u.payload["seed"]) for u in shared[4:8]] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    # every (task, seed)'s rewards before any policy; then a unit per policy, after its rewards
    assert [(u.id, u.after) for u in shared[8:10]] == [
        ("policy-0-Hopper-v5-s0-apec", ("apec-0-Hopper-v5-s0",)),
        ("policy-0-Hopper-v5-s0-drex", ("apec-0-Hopper-v5-s0",))]
    assert [u.payload["method"] for u in shared[8:]] == ["apec", "drex"] * 4
    assert [u.after[0] for u in shared[8::2]] == [u.id for u in shared[4:8]]
    own = units(ApecExperimentConfig(seeds=[0, 1], tasks=tasks), tmp_path)
    assert [u.payload["kind"] for u in own] == ["demos"] * 2 + ["seed"] * 4 + ["policy"] * 8
    assert [u.after for u in own[2:4]] == [("demos-0-Hopper-v5",), ("demos-1-Walker2d-v5",)]
    # a run that spans sittings finishes what it began first: Walker2d's seed 1 had started
    (tmp_path / "Walker2d-v5" / "seed1" / "ail").mkdir(parents=True)
    resumed = units(ApecExperimentConfig(seeds=[0, 1], tasks=tasks, shared_heldout=True), tmp_path)
    assert [u.id for u in resumed[:8]] == ["apec-1-Walker2d-v5-s1"] + [u.id for u in shared[:7]]
    (tmp_path / "Hopper-v5" / "seed0" / "policies" / "drex").mkdir(parents=True)  # a policy had begun
    resumed = units(ApecExperimentConfig(seeds=[0, 1], tasks=tasks, shared_heldout=True), tmp_path)
    assert [u.id for u in resumed[:2]] == ["apec-1-Walker2d-v5-s1", "policy-0-Hopper-v5-s0-drex"]
    # the shared held-out AIL run (demo seed + 1000 by default) must be none of the seeds
    with pytest.raises(ConfigError, match="seed 1000 is one of the seeds"):
        ApecExperimentConfig(seeds=[0, 1000], tasks=tasks, shared_heldout=True)
    ApecExperimentConfig(seeds=[0, 1000], tasks=tasks, shared_heldout=True,
                         pipeline={"heldout": {"ail_seed": 7}})


def test_a_seed_whose_policies_still_train_counts_for_its_rewards_not_its_policy(tmp_path):
    import json

    from experiments.apec import ApecExperimentConfig
    from experiments.apec_report import markdown_table, summarise
    from experiments.apec_rows import collect_rows, seed_rows
    from rlkit.runners.apec import REWARD_METRICS

    def results(accuracy, policy_return=None):
        metrics = {key: accuracy for key, _ in METRICS} | {"n_pairs": 900, "label_agreement": 0.8}
        if policy_return is not None:
            metrics["policy"] = {"final_true_return": policy_return, "eval_timesteps": [50_000],
                                 "eval_true_returns": [policy_return],
                                 "final_true_return_stochastic": policy_return - 300.0}
        return {"methods": {"apec": metrics}, "ail_progress": {"spearman_checkpoints": 0.9},
                "demos": {"returns": [1000.0], "fraction": 0.65}}

    config = ApecExperimentConfig(seeds=[0, 1, 2])
    for seed, accuracy, policy in ((0, 0.7, 2000.0), (1, 0.8, 2200.0), (2, 0.9, None)):
        run_dir = tmp_path / "Hopper-v5" / f"seed{seed}"
        run_dir.mkdir(parents=True)
        if policy is None:  # its held-out results are in; its policies are training
            (run_dir / REWARD_METRICS).write_text(json.dumps(results(accuracy)))
        else:
            (run_dir / "rows.json").write_text(json.dumps(seed_rows("Hopper-v5", seed,
                                                                    results(accuracy, policy))))
    rows = collect_rows(config, tmp_path)
    assert [(r["seed"], r["policies_done"]) for r in rows] == [(0, True), (1, True), (2, False)]
    (entry,) = summarise(rows)
    assert entry["n"] == 3 and entry["accuracy"] == pytest.approx(0.8) and entry["accuracy_n"] == 3
    assert entry["policy_return"] == 2100.0 and entry["policy_return_n"] == 2
    assert entry["policy_return_stochastic"] == 1800.0 and entry["policy_return_stochastic_n"] == 2
    text = markdown_table([entry])
    assert "2100.000 ± 100.000" in text and "(n=2)" in text and "0.800 ± 0.058" in text
    # a policy of seed 2 finished (its own unit), the other not: its return counts at once
    finished = tmp_path / "Hopper-v5" / "seed2" / "policies" / "apec"
    finished.mkdir(parents=True)
    (finished / "result.json").write_text(json.dumps({"final_true_return": 2400.0}))
    (entry,) = summarise(collect_rows(config, tmp_path))
    assert entry["policy_return"] == 2200.0 and entry["policy_return_n"] == 3
    assert "| 1800.000 ± 100.000 [" in text and "stochastic (the reference's)" in text


def test_the_papers_claims_are_paired_differences_over_the_seeds_with_a_verdict():
    from experiments.apec_report import claims, claims_markdown

    apec = [_row(s, v, demo_return=1.5) for s, v in ((0, 0.9), (1, 0.8), (2, 1.0))]
    drex = [_row(s, v, method="drex", demo_return=1.5) for s, v in ((0, 0.7), (1, 0.5), (2, 0.6))]
    drex[2]["accuracy"] = 1.2  # seed 2's accuracy goes D-REX's way: the accuracy claim is not shown
    found = {(c["task"], c["claim"]): c for c in claims(apec + drex + [_row(3, 5.0, method="drex")])}
    correlation = found["Hopper-v5", "trajectory_pearson: APEC - D-REX"]
    assert correlation["n"] == 3  # seed 3 has no APEC row: not a pair
    assert correlation["mean"] == pytest.approx(0.3) and correlation["sd"] == pytest.approx(0.1)
    half = T_975_DF2 * 0.1 / math.sqrt(3)
    assert (correlation["ci95_low"], correlation["ci95_high"]) == pytest.approx((0.3 - half, 0.3 + half))
    assert correlation["verdict"] == "holds"
    assert found["Hopper-v5", "accuracy: APEC - D-REX"]["verdict"] == "not shown"
    policy = found["Hopper-v5", "policy return: APEC - demo"]  # 0.9, 0.8, 1.0 against 1.5
    assert policy["mean"] == pytest.approx(-0.6) and policy["verdict"] == "reversed" and policy["n"] == 3
    against_drex = found["Hopper-v5", "policy return: APEC - D-REX"]  # the same pairs as the rewards
    assert against_drex["mean"] == pytest.approx(0.3) and against_drex["n"] == 3
    drex[2]["policy_return"] = math.nan  # seed 2's D-REX policy is still training: it drops out
    training = {(c["task"], c["claim"]): c for c in claims(apec + drex)}
    assert training["Hopper-v5", "policy return: APEC - D-REX"]["n"] == 2
    assert training["Hopper-v5", "policy return: APEC - demo"]["n"] == 3
    for row in apec + drex:  # actions sampled, the reference's protocol: 0.5 lower where measured
        row["policy_return_stochastic"] = row["policy_return"] - 0.5
    del apec[0]["policy_return_stochastic"]  # seed 0's result predates that evaluation: it drops out
    sampled = {(c["task"], c["claim"]): c for c in claims(apec + drex)}
    versus_demo = sampled["Hopper-v5", "policy return, stochastic: APEC - demo"]
    assert versus_demo["n"] == 2 and versus_demo["mean"] == pytest.approx((0.8 + 1.0) / 2 - 0.5 - 1.5)
    assert sampled["Hopper-v5", "policy return, stochastic: APEC - D-REX"]["n"] == 1  # seed 1 only
    one_seed = claims([_row(0, 1.0, demo_return=0.5), _row(0, 0.5, method="drex", demo_return=0.5)])
    assert {c["verdict"] for c in one_seed} == {"too few seeds"}
    text = claims_markdown(list(found.values()))
    assert f"| [{0.3 - half:.3f}, {0.3 + half:.3f}] | 3 | holds |" in text
    assert all(c["task"] == "Hopper-v5" for c in found.values())  # one task: nothing to pool


def test_with_several_tasks_the_claims_are_also_pooled_over_every_task_seed_pair():
    from experiments.apec_report import POOLED, claims

    rows = [_row(0, 0.9), _row(0, 0.7, method="drex"), _row(1, 0.8), _row(1, 0.7, method="drex"),
            _row(0, 0.6, task="Walker2d-v5"), _row(0, 0.7, task="Walker2d-v5", method="drex")]
    rows = [row | {"demo_return": 1.0} for row in rows]
    found = {(c["task"], c["claim"]): c for c in claims(rows)}
    assert found["Walker2d-v5", "accuracy: APEC - D-REX"]["n"] == 1
    pooled = found[POOLED, "accuracy: APEC - D-REX"]  # 0.2, 0.1 (Hopper) and -0.1 (Walker2d)
    assert pooled["n"] == 3 and pooled["mean"] == pytest.approx(0.2 / 3)
    assert pooled["sd"] == pytest.approx(math.sqrt(((0.2 - 0.2 / 3) ** 2 + (0.1 - 0.2 / 3) ** 2
                                                    + (0.1 + 0.2 / 3) ** 2) / 2))
    assert pooled["verdict"] == "not shown"


def test_every_ail_runs_curve_is_reported_with_its_progress_against_the_demo(tmp_path):
    import json

    from experiments.apec import ApecExperimentConfig, TaskSettings
    from experiments.apec_report import ail_report, ail_runs
    from rlkit.errors import FileFormatError

    def log(path, prefix, returns, extra=()):
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = [{"step": 5000 * (k + 1), f"{prefix}round": k, f"{prefix}true_return": v}
                for k, v in [*enumerate(returns), *extra]]
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))

    task = tmp_path / "Hopper-v5"
    # seed 0 was cut after round 3 and trained it again: the later row of round 3 counts
    log(task / "seed0" / "metrics.jsonl", "ail/", [0.0, 50.0, 120.0, 10.0], extra=[(3, 90.0)])
    log(task / "heldout" / "metrics.jsonl", "heldout_ail/", [5.0, 30.0, 20.0])
    with (task / "heldout" / "metrics.jsonl").open("a") as file:
        file.write('{"step": 20000, "heldout_ail/ro')  # the run is writing its next row
    config = ApecExperimentConfig(seeds=[0, 1], tasks=[TaskSettings(id="Hopper-v5")], shared_heldout=True)

    heldout, seed0 = ail_runs(config, tmp_path, {"Hopper-v5": 100.0})  # seed 1 has logged nothing yet
    assert (heldout["run"], seed0["run"]) == ("held-out run", "seed 0")
    assert seed0["rounds"] == [0, 1, 2, 3] and seed0["true_returns"] == [0.0, 50.0, 120.0, 90.0]
    assert (seed0["best_return"], seed0["best_round"], seed0["last_return"]) == (120.0, 2, 90.0)
    assert seed0["first_round_past_demo"] == 2 and seed0["spearman"] == pytest.approx(0.8)
    assert heldout["n_rounds"] == 3 and heldout["first_round_past_demo"] is None
    assert heldout["spearman"] == pytest.approx(0.5)

    ail_report([heldout, seed0], tmp_path, "apec")
    text = (tmp_path / "ail_runs.md").read_text()
    assert "| Hopper-v5 | seed 0 | 4 | 0 / 90 | 120 (2) | 2 (100) | 0.80 (n=4) |" in text
    assert "| held-out run | 3 | 5 / 20 | 30 (1) | never (100) | 0.50 (n=3) |" in text
    assert json.loads((tmp_path / "ail_runs.json").read_text())[1]["rounds"] == [0, 1, 2, 3]
    assert (tmp_path / "apec_ail.png").stat().st_size > 0

    log(task / "seed0" / "metrics.jsonl", "ail/", [0.0])
    with (task / "seed0" / "metrics.jsonl").open("a") as file:
        file.write("not json\n" + json.dumps({"ail/round": 1, "ail/true_return": 1.0}) + "\n")
    with pytest.raises(FileFormatError, match="seed0/metrics.jsonl: line 2 is not JSON"):
        ail_runs(config, tmp_path, {"Hopper-v5": 100.0})


def test_committed_rows_count_where_the_run_dirs_are_gone_and_finished_units_stay_done(tmp_path):
    """A fresh machine: the committed rows hold Walker2d seed 0 whole and Hopper seed 0's rewards
    with its APEC policy; only what they lack runs, and the report counts them all."""
    import json

    from experiments.apec import ApecExperimentConfig, TaskSettings, units
    from experiments.apec_rows import collect_rows
    from rlkit.errors import FileFormatError
    from rlkit.runners.apec import REWARD_METRICS

    nan = float("nan")
    held = [_row(0, 0.7), _row(0, 0.6, method="drex", policy_return=nan),
            _row(0, 0.9, task="Walker2d-v5"), _row(0, 0.8, task="Walker2d-v5", method="drex"),
            _row(0, 0.5, task="Ant-v5")]  # not a task of this config
    rows = tmp_path / "apec_rows.jsonl"
    rows.write_text("".join(json.dumps(row) + "\n" for row in held))
    tasks = [TaskSettings(id="Hopper-v5"), TaskSettings(id="Walker2d-v5")]
    config = ApecExperimentConfig(seeds=[0, 1], tasks=tasks, shared_heldout=True, rows=str(rows))
    out = tmp_path / "out"
    listed = [u.id for u in units(config, out)]
    assert [i for i in listed if i.startswith("apec-")] == [  # Hopper s0 refits for its D-REX policy
        "apec-0-Hopper-v5-s1", "apec-1-Walker2d-v5-s1", "apec-0-Hopper-v5-s0"]
    assert [i for i in listed if i.startswith("policy-")] == [
        "policy-0-Hopper-v5-s0-drex", "policy-0-Hopper-v5-s1-apec", "policy-0-Hopper-v5-s1-drex",
        "policy-1-Walker2d-v5-s1-apec", "policy-1-Walker2d-v5-s1-drex"]
    assert [(r["task"], r["method"], r["accuracy"]) for r in collect_rows(config, out)] == [
        ("Hopper-v5", "apec", 0.7), ("Hopper-v5", "drex", 0.6),
        ("Walker2d-v5", "apec", 0.9), ("Walker2d-v5", "drex", 0.8)]
    # Hopper s0's rewards fitted again here: its own scores, the committed APEC policy's return
    run_dir = out / "Hopper-v5" / "seed0"
    run_dir.mkdir(parents=True)
    scored = {method: {key: 0.75 for key, _ in METRICS} for method in ("apec", "drex")}
    (run_dir / REWARD_METRICS).write_text(json.dumps({
        "methods": scored, "ail_progress": {"spearman_checkpoints": 0.9},
        "demos": {"returns": [1000.0], "fraction": 0.65}}))
    hopper = [r for r in collect_rows(config, out) if r["task"] == "Hopper-v5"]
    assert [(r["accuracy"], r["policy_return"]) for r in hopper[:1]] == [(0.75, 0.7)]
    assert math.isnan(hopper[1]["policy_return"]) and not hopper[1]["policies_done"]
    rows.write_text('{"task": "Hopper-v5"}\nnot json\n')
    with pytest.raises(FileFormatError, match="line 2"):
        units(config, out)


def test_apec_is_compared_with_each_ablation_paired_by_unit_and_pooled_over_tasks():
    from experiments.apec_arms import ablation_arms, ablations
    from experiments.apec_report import POOLED

    arms = ablation_arms(["apec", "gap_only", "ot_only@0.05", "ot_only@0.1", "drex", "raw_ail"], 0.1)
    assert arms == {"gap_only": "gap only", "ot_only@0.1": "OT only (0.1)", "raw_ail": "raw AIL reward"}
    assert ablation_arms(["apec", "ot_only", "drex"], 0.1) == {"ot_only": "OT only (0.1)"}  # bare: at 0.1
    rows = [_row(0, 0.9), _row(0, 0.6, method="gap_only"), _row(0, 0.85, method="ot_only@0.1"),
            _row(1, 0.8), _row(1, 0.7, method="gap_only"),  # seed 1 has no OT-only row: it drops out
            _row(1, 0.82, method="ot_only@0.05"),  # another margin: not APEC's, not compared
            _row(0, 0.5, task="Walker2d-v5"), _row(0, 0.6, task="Walker2d-v5", method="gap_only")]
    found = {(c["task"], c["claim"]): c for c in ablations(rows, arms)}
    gap = found["Hopper-v5", "accuracy: APEC - gap only"]
    assert gap["n"] == 2 and gap["mean"] == pytest.approx(0.2) and gap["verdict"] == "not shown"
    ot = found["Hopper-v5", "step_pearson: APEC - OT only (0.1)"]
    assert ot["n"] == 1 and ot["mean"] == pytest.approx(0.05) and ot["verdict"] == "too few seeds"
    assert found["Hopper-v5", "accuracy: APEC - raw AIL reward"]["n"] == 0
    pooled = found[POOLED, "accuracy_outside_ail: APEC - gap only"]  # 0.3, 0.1 and -0.1
    assert pooled["n"] == 3 and pooled["mean"] == pytest.approx(0.1)


def test_the_unit_table_has_a_line_per_unit_an_arm_per_column_and_the_best_in_bold():
    from experiments.apec_arms import unit_table

    rows = [_row(0, 0.9, ail_spearman=0.84), _row(0, 0.95, method="drex", ail_spearman=0.84),
            _row(1, 0.8, ail_spearman=0.5)]  # seed 1's D-REX is missing
    lines = unit_table(rows, ["apec", "drex"], "accuracy").splitlines()
    assert lines[0] == "held-out accuracy, each unit's fits on its task's held-out set:"
    assert lines[2] == "| task | seed | AIL progress (Spearman) | apec | drex |"
    assert lines[4:] == ["| Hopper-v5 | 0 | 0.84 | 0.900 | **0.950** |",
                         "| Hopper-v5 | 1 | 0.50 | **0.800** | — |"]


def test_the_arms_report_writes_every_arm_by_unit_the_ablations_and_their_figure(tmp_path):
    from experiments.apec import ApecExperimentConfig
    from experiments.apec_arms import arms_report

    config = ApecExperimentConfig.model_validate({"pipeline": {"methods": ["apec", "gap_only", "drex"]}})
    rows = [_row(s, v + d, method=m, ail_spearman=v) for s, v in ((0, 0.8), (1, 0.7))
            for m, d in (("apec", 0.1), ("gap_only", 0.0), ("drex", -0.1), ("raw_ail", 0.0))]
    arms_report(config, rows, tmp_path)
    assert "| Hopper-v5 | 1 | 0.70 | **0.800** | 0.700 | 0.600 |" in (tmp_path / "units.md").read_text()
    found = json.loads((tmp_path / "ablations.json").read_text())  # raw_ail is not one of the arms run
    assert {c["claim"].split(": ")[1] for c in found} == {"APEC - gap only"}
    assert all(c["mean"] == pytest.approx(0.1) for c in found)
    assert (tmp_path / "paired.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

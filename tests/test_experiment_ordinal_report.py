"""The ordinal results page's report, from rows: spreads with the sample sd (ddof = 1), paired
differences by seed, statements of what holds, and the page's generated section."""

import json
import math
from pathlib import Path

import pytest
import torch
from stable_baselines3 import PPO

from experiments import ordinal_feedback
from experiments.ordinal_report import END, METRICS, START, comparisons, statements, summarise
from rlkit.persistence.agents import load_agent
from rlkit.scale.command import exit_status

T_975_DF2 = 4.302652729911275  # scipy.stats.t.ppf(0.975, 2)
BASE = {0: 0.5, 1: 0.7, 2: 0.9}  # per seed: the seeds differ a lot, the settings within a seed little
GAIN = {"binary": {0: 0.0, 1: 0.0, 2: 0.0}, "ternary": {0: 0.04, 1: 0.05, 2: 0.06},
        "five": {0: 0.10, 1: 0.11, 2: 0.12}}


def _row(seed: int, setting: str, ood_ce: float | None = None) -> dict:
    value = BASE[seed] + GAIN[setting][seed]
    row = {"task": "Hopper-v5", "seed": seed, "study": "granularity", "setting": setting, "beta": 1.0}
    for split in ("in_dist", "out_dist"):
        row |= {f"{split}_accuracy": value, f"{split}_oracle_ce": 1.0 - value,
                f"{split}_return_pearson": value}
    if ood_ce is not None:
        row["out_dist_oracle_ce"] = ood_ce
    return row


def _rows() -> list[dict]:
    rows = [_row(seed, "binary") for seed in (0, 1, 2)]
    rows += [_row(seed, "ternary", ood_ce=0.9) for seed in (0, 1, 2)]  # worse than binary's OOD CE
    return rows + [_row(seed, "five") for seed in (2, 0, 1)]  # out of seed order


def test_the_summary_gives_the_sample_sd_and_a_t_interval_per_setting():
    (binary, _, _) = summarise(_rows())
    assert binary["n"] == 3 and binary["in_dist_accuracy"] == pytest.approx(0.7)
    assert binary["in_dist_accuracy_sd"] == pytest.approx(0.2)  # ddof = 1 (ddof = 0: 0.163)
    half = T_975_DF2 * 0.2 / math.sqrt(3)
    assert binary["in_dist_accuracy_ci95"] == pytest.approx([0.7 - half, 0.7 + half])


def test_paired_differences_pair_each_seed_with_itself():
    found = {(c["a"], c["b"], c["metric"]): c for c in comparisons(_rows())}
    assert set(found) == {(a, b, m) for a, b in (("ternary", "binary"), ("five", "ternary"),
                                                 ("five", "binary"))
                          for m, _, _ in METRICS}
    five = found["five", "binary", "in_dist_accuracy"]
    assert five["mean"] == pytest.approx(0.11) and five["sd"] == pytest.approx(0.01)
    half = T_975_DF2 * 0.01 / math.sqrt(3)  # unpaired, the seeds' spread (sd 0.2) would hide it
    assert (five["ci95_low"], five["ci95_high"]) == pytest.approx((0.11 - half, 0.11 + half))
    assert five["verdict"] == "better" and five["wins"] == 3
    ce = found["five", "binary", "in_dist_oracle_ce"]  # lower is better: -0.11 is better
    assert ce["mean"] == pytest.approx(-0.11) and ce["verdict"] == "better"
    assert found["ternary", "binary", "out_dist_oracle_ce"]["verdict"] == "worse"


def test_the_statements_name_where_the_order_breaks():
    rows = _rows()
    said = statements(summarise(rows), comparisons(rows))
    assert said[0] == ("Hopper-v5: the mean order five > ternary > binary holds on 5 of 6 metrics; "
                       "it breaks on oracle CE (OOD), ternary 0.900 vs binary 0.300 "
                       "(lower is better).")
    assert said[1] == ("Hopper-v5: of the 12 neighbour differences (finer - next coarser, per "
                       "metric), 11 have a 95% interval on the finer scale's side of 0; the others: "
                       "ternary - binary on oracle CE (OOD) +0.600 [+0.103, +1.097], worse, better in "
                       "0 of 3 seeds.")
    assert said[2] == ("Hopper-v5: five - binary is better on 6 of 6 metrics with the interval clear "
                       "of 0, and better in every seed on every metric.")


def _page(tmp_path, body: str = f"before\n{START}\nstale table\n{END}\nafter\n"):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    page = tmp_path / "page.md"
    page.write_text(body)
    argv = [f"out_dir={tmp_path / 'out'}", "--rows", str(rows), "--page", str(page)]
    return page, exit_status(lambda: ordinal_feedback.main(argv), "ordinal_feedback.py")


def test_the_page_gets_its_marked_section_replaced_and_the_plot_beside_it(tmp_path):
    page, status = _page(tmp_path)
    assert status == 0
    text = page.read_text()
    assert text.startswith(f"before\n{START}\n") and text.endswith(f"{END}\nafter\n")
    assert "stale table" not in text
    assert "| Hopper-v5 | granularity | binary | 3 | 0.700 (sd 0.200) [0.203, 1.197] |" in text
    assert "| Hopper-v5 | five - binary | 3 | +0.110 [+0.085, +0.135] better |" in text
    assert "- Hopper-v5: the mean order five > ternary > binary holds on 5 of 6 metrics" in text
    assert page.with_suffix(".png").stat().st_size > 0
    assert (tmp_path / "out" / "table.md").read_text() in text


def test_a_page_without_the_markers_or_a_row_without_a_metric_is_refused_by_name(tmp_path, capsys):
    page, status = _page(tmp_path, body="no markers\n")
    assert status == 2 and page.read_text() == "no markers\n"
    assert f"{page}: no {START} ... {END} markers" in capsys.readouterr().err
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"task": "t", "seed": 0, "study": "granularity", "setting": "binary"}))
    argv = [f"out_dir={tmp_path / 'out'}", "--rows", str(rows)]
    assert exit_status(lambda: ordinal_feedback.main(argv), "ordinal_feedback.py") == 2
    assert f"{rows}: line 1 has no in_dist_accuracy" in capsys.readouterr().err


def _tiny(per_seed: bool) -> ordinal_feedback.OrdinalExperimentConfig:
    from tests.tiny_envs import POINT_ID

    return ordinal_feedback.OrdinalExperimentConfig(
        seeds=[0, 1], tasks=[ordinal_feedback.TaskConfig(id=POINT_ID, checkpoint_steps=[16])], n_envs=1,
        ppo_kwargs={"n_steps": 16, "batch_size": 16, "n_epochs": 1}, ppo_per_seed=per_seed)


def test_shared_ppo_checkpoints_serve_every_seed_from_one_seed_0_run(tmp_path):
    config = _tiny(per_seed=False)
    units = ordinal_feedback.units(config, tmp_path)
    ppo = [u for u in units if u.payload["kind"] == "ppo"]
    assert [(u.id, u.payload["seed"]) for u in ppo] == [("ppo-0-rlkit-test_Point-v0", 0)]
    assert {u.after for u in units if u.payload["kind"] == "fit"} == {(ppo[0].id,)}


def test_per_seed_ppo_checkpoints_are_trained_with_each_seed_in_its_own_folder(tmp_path):
    config = _tiny(per_seed=True)
    units = {u.id: u for u in ordinal_feedback.units(config, tmp_path)}
    fits = [u for u in units.values() if u.payload["kind"] == "fit"]
    assert [f.after for f in fits] == [("ppo-0-rlkit-test_Point-v0-s0",), ("ppo-0-rlkit-test_Point-v0-s1",)]
    made = [ordinal_feedback.run_unit(units[f.after[0]], None)["checkpoints"] for f in fits]
    folder = tmp_path.absolute() / "policies" / "rlkit-test/Point-v0"
    assert made == [[str(folder / f"seed{s}" / "ppo_16.zip")] for s in (0, 1)]
    weights = [load_agent({"PPO": PPO}, Path(paths[0])).policy.state_dict() for paths in made]
    assert not all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])  # seeded apart
    again = _tiny(per_seed=False)  # one shared run with seed 0: the same weights as seed 0's own
    (shared,) = ordinal_feedback.train_checkpoints(again.tasks[0], again, tmp_path / "shared")
    same = load_agent({"PPO": PPO}, shared).policy.state_dict()
    assert all(torch.equal(same[k], weights[0][k]) for k in same)

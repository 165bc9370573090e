"""experiments/m3hf.py on a tiny budget: every arm runs, and --report-only rebuilds the outputs."""

import csv
import json

import yaml

from experiments.m3hf import main

TINY = [
    "seeds=[0]",
    "run.env.recipe=tomato", "run.env.max_steps=20", "run.num_games=2", "run.generation_steps=64",
    "run.phases=1", "run.marl.n_steps=16", "run.marl.batch_size=32", "run.marl.n_epochs=1",
    "run.eval_games=2", "run.video=none",
]  # fmt: skip


def test_experiment_runs_every_arm_and_rebuilds_its_report(tmp_path, capsys):
    out = tmp_path / "m3hf"
    arms = ("arms={ippo: {feedback: {source: none}},"
            " wrong: {feedback: {source: simulated, rates: {wrong: 1.0}}},"
            " wrong_last: {group: ablation, run: {rollback: last}, label: 'wrong, rollback off',"
            " feedback: {source: simulated, rates: {wrong: 1.0}}}}")
    assert main([f"out_dir={out}", arms, *TINY]) == 0
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [(r["arm"], r["generation"]) for r in rows] == [
        ("ippo", 0), ("ippo", 1), ("wrong", 0), ("wrong", 1), ("wrong_last", 0), ("wrong_last", 1)
    ]  # fmt: skip
    assert yaml.safe_load((out / "wrong_last" / "seed0" / "config.yaml").read_text())["rollback"] == "last"
    # generation 0 is the same training in both arms; the arms part at the first feedback
    assert rows[0]["original_return"] == rows[2]["original_return"]
    assert rows[3]["feedback_wrong"] == 1 and rows[1]["feedback"] == 0
    with open(out / "metrics.csv") as handle:
        assert len(list(csv.DictReader(handle))) == 6
    table = (out / "table.md").read_text()
    assert "IPPO (env reward)" in table and "M3HF, only wrong feedback" in table
    assert "wrong, rollback off" in table
    summary = {e["arm"]: e for e in json.loads((out / "summary.json").read_text())}
    wrong, ippo = (rows[3]["original_return"], rows[2]["original_return"]), (rows[1]["original_return"],)
    assert summary["wrong"]["final"]["mean"] == wrong[0]
    assert summary["wrong"]["final_minus_reference"]["mean"] == wrong[0] - ippo[0]
    assert summary["wrong"]["auc"]["mean"] == (wrong[0] + wrong[1]) / 2  # two generations: one trapezoid
    assert "final_minus_reference" not in summary["ippo"]

    (out / "m3hf.png").unlink()
    capsys.readouterr()
    assert main([f"out_dir={out}", arms, *TINY, "--report-only"]) == 0
    assert (out / "m3hf.png").stat().st_size > 10_000
    assert "only wrong feedback" in capsys.readouterr().out


def test_committed_rows_count_for_runs_whose_directories_are_gone_and_are_not_run_again(tmp_path):
    """A run spanning machines: rows committed from one machine's finished runs stand in for their
    lost run directories, and only the (arm, seed) units they lack are run."""
    import shutil

    import pytest

    from experiments.m3hf import M3HFExperimentConfig, units
    from rlkit.config import load_config
    from rlkit.errors import ConfigError

    out, committed = tmp_path / "m3hf", tmp_path / "rows.jsonl"
    arms = ("arms={ippo: {feedback: {source: none}},"
            " wrong: {feedback: {source: simulated, rates: {wrong: 1.0}}}}")
    assert main([f"out_dir={out}", arms, *TINY, "seeds=[0, 1]"]) == 0
    rows = (out / "metrics.jsonl").read_text().splitlines()
    kept = [line for line in rows if json.loads(line)["seed"] == 0]  # seed 1 was not committed
    committed.write_text("\n".join(kept) + "\n")
    shutil.rmtree(out)  # the machine is gone
    config = load_config(M3HFExperimentConfig, None, [f"out_dir={out}", arms, *TINY, "seeds=[0, 1]",
                                                      f"rows={committed}"])
    assert [u.id for u in units(config, out)] == ["ippo-s1", "wrong-s1"]
    assert main([f"out_dir={out}", arms, *TINY, "seeds=[0, 1]", f"rows={committed}"]) == 0
    assert (out / "metrics.jsonl").read_text().splitlines() == rows  # as the uninterrupted run's
    assert not (out / "ippo" / "seed0").exists()
    committed.write_text("\n".join(kept[1:]) + "\n")  # ippo seed 0 lost its generation 0
    with pytest.raises(ConfigError, match=r"ippo seed 0 has generations \[1\], expected 0 to 1"):
        units(config, out)

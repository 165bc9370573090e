"""A run refused for its input leaves nothing behind, whatever stage finds the fault (issue 36):
the corrected command then runs into the same --run-dir. What was there before stays, and a run
that stored anything keeps it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rlkit.cli import main
from rlkit.errors import ConfigError, InvalidDataError
from rlkit.factories.configs import CollectConfig
from rlkit.runners.session import open_session, refused_runs_leave_nothing

os.environ.setdefault("WANDB_MODE", "offline")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A trajectory store and a labelled dataset made from it (written as the commands do)."""
    from tests.fake_data import make_trajectories

    root = tmp_path_factory.mktemp("inputs")
    trajectories = make_trajectories().save(root / "trajectories")
    assert main(["label", f"trajectories={trajectories}", "n_pairs=20", "segment_length=5",
                 "--run-dir", str(root / "label"), "--logger", "jsonl"]) == 0
    return {"trajectories": trajectories, "dataset": root / "label" / "preferences"}


def refused_then_corrected(tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: list[str],
                           good: list[str], named: str) -> None:
    run_dir = tmp_path / "runs" / "run"  # its parent is made by the command too
    assert main([*bad, "--run-dir", str(run_dir), "--logger", "jsonl,wandb"]) == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists()  # no config, metrics or wandb/ left, nor the parent
    assert main([*good, "--run-dir", str(run_dir), "--logger", "jsonl,wandb"]) == 0
    assert (run_dir / "config.yaml").is_file()


def test_train_reward_with_a_missing_dataset(tmp_path, capsys, inputs):
    # found by the runner, after the run directory and its logger were opened
    refused_then_corrected(tmp_path, capsys, ["train-reward", "dataset=/nonexistent/prefs"],
                           ["train-reward", f"dataset={inputs['dataset']}", "trainer.max_epochs=1"],
                           "/nonexistent/prefs.json")


def test_label_with_a_missing_trajectories_file(tmp_path, capsys, inputs):
    refused_then_corrected(tmp_path, capsys,
                           ["label", f"trajectories={tmp_path / 'none.npz'}", "n_pairs=5"],
                           ["label", f"trajectories={inputs['trajectories']}", "n_pairs=5",
                            "segment_length=5"], "no such file")


def test_label_with_segments_longer_than_every_trajectory(tmp_path, capsys, inputs):
    # found by the sampler inside the run
    refused_then_corrected(tmp_path, capsys,
                           ["label", f"trajectories={inputs['trajectories']}", "segment_length=500"],
                           ["label", f"trajectories={inputs['trajectories']}", "n_pairs=5",
                            "segment_length=5"], "500")


def test_collect_with_an_unknown_env_id(tmp_path, capsys):
    collect = ["collect", "env.n_envs=1", "policies=[{n_steps: 20}]"]
    refused_then_corrected(tmp_path, capsys, [*collect, "env.id=NoSuchEnv-v9"],
                           [*collect, "env.id=Pendulum-v1"], "NoSuchEnv-v9")


def test_a_logging_backend_that_does_not_exist(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert main(["collect", "env.id=Pendulum-v1", "policies=[{n_steps: 20}]", "--run-dir", str(run_dir),
                 "--logger", "jsonl,bogus"]) == 2
    assert "unknown logging backends" in capsys.readouterr().err
    assert not run_dir.exists()


def test_a_directory_that_was_there_keeps_what_it_held(tmp_path, capsys):
    run_dir = tmp_path / "trial"
    run_dir.mkdir()
    (run_dir / "stdout.1.log").write_text("a sweep's log")  # written before the command started
    assert main(["train-reward", "dataset=/nonexistent/prefs", "--run-dir", str(run_dir),
                 "--logger", "jsonl,wandb"]) == 2
    assert sorted(p.name for p in run_dir.iterdir()) == ["stdout.1.log"]
    assert (run_dir / "stdout.1.log").read_text() == "a sweep's log"


def test_a_run_that_stored_something_keeps_it(tmp_path):
    run_dir = tmp_path / "run"
    with pytest.raises(InvalidDataError), refused_runs_leave_nothing():
        path, logger = open_session("collect", CollectConfig(), str(run_dir), logger="jsonl")
        (path / "resume").mkdir()  # a resume point: progress a later run goes on from
        raise InvalidDataError("a fault found after progress")
    assert (run_dir / "resume").is_dir() and (run_dir / "config.yaml").is_file()

    logged = tmp_path / "logged"
    with pytest.raises(ConfigError), refused_runs_leave_nothing():
        path, logger = open_session("collect", CollectConfig(), str(logged), logger="jsonl")
        logger.log({"collect/steps": 20}, 0)
        raise ConfigError("a fault found after a metrics row")
    assert [json.loads(line)["collect/steps"] for line in (logged / "metrics.jsonl").open()] == [20]


def test_a_failure_that_is_no_refusal_keeps_the_run_dir(tmp_path):
    run_dir = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt), refused_runs_leave_nothing():
        open_session("collect", CollectConfig(), str(run_dir), logger="jsonl")
        raise KeyboardInterrupt  # a killed run: whatever it wrote is kept to look at or resume
    assert (run_dir / "config.yaml").is_file()


def test_a_run_beside_it_in_a_parent_it_made_is_not_touched(tmp_path):
    parent = tmp_path / "runs"
    with pytest.raises(ConfigError), refused_runs_leave_nothing():
        open_session("collect", CollectConfig(), str(parent / "a"), logger="jsonl")
        (parent / "b").mkdir()  # another command started beside it meanwhile
        raise ConfigError("refused")
    assert not (parent / "a").exists() and (parent / "b").is_dir()

"""What the `rlkit` command line accepts and how it refuses (issues 35 and 36): overrides anywhere
on the line, a subcommand's own usage on its errors, --version, and bad input ending as
`rlkit <cmd>: error: ...` with status 2, naming what is wrong, never a traceback or exit 0."""

from __future__ import annotations

import json
import os
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml

from rlkit.cli import main

os.environ.setdefault("WANDB_MODE", "offline")
PENDULUM = ["env.id=Pendulum-v1", "env.n_envs=1", "policies=[{n_steps: 20}]"]


def refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run ``argv``; it must end with status 2 and no traceback. Returns its stderr."""
    try:
        code = main(argv)
    except SystemExit as exit_info:  # argparse's own refusals
        code = exit_info.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    return err


def test_overrides_after_the_options_are_taken_in_order(tmp_path, capsys):
    from tests.fake_data import make_trajectories

    trajectories = make_trajectories().save(tmp_path / "trajectories")
    # the line: an override after --run-dir was "unrecognized arguments"
    assert main(["label", f"trajectories={trajectories}", "--run-dir", str(tmp_path / "l"),
                 "n_pairs=10", "--logger", "jsonl", "segment_length=5", "n_pairs=12"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["pairs"] == 12  # the later of two overrides of one key wins, as before
    assert "segment_length: 5" in (tmp_path / "l" / "config.yaml").read_text()


def test_print_config_takes_overrides_on_both_sides_of_its_options(capsys):
    assert main(["collect", "seed=3", "--logger", "jsonl", *PENDULUM, "--print-config",
                 "env.n_envs=2"]) == 0
    config = yaml.safe_load(capsys.readouterr().out)
    assert (config["seed"], config["env"]["n_envs"]) == (3, 2)


@pytest.mark.parametrize("argv, named", [
    (["label", "n_pairs=3", "--bogus"], "unrecognized arguments: --bogus"),
    (["train-reward", "--run-dir"], "argument --run-dir: expected one argument"),
    (["sweep", "label", "--seeds", "2", "n_pairs=3", "--bogus"], "unrecognized arguments: --bogus"),
])
def test_a_usage_error_shows_the_subcommands_usage(capsys, argv, named):
    err = refused(capsys, argv)
    command = argv[0]
    assert err.startswith(f"usage: rlkit {command} "), err
    assert err.rstrip().endswith(f"rlkit {command}: error: {named}"), err


def test_version_is_the_installed_packages(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"rlkit {version('rlkit')}\n"


@pytest.mark.parametrize("threads", ["-1", "0", "two"])
def test_torch_threads_below_one_are_refused(capsys, threads):
    err = refused(capsys, ["collect", *PENDULUM, "--torch-threads", threads, "--print-config"])
    assert "rlkit collect: error: argument --torch-threads:" in err and threads in err


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_a_seed_numpy_cannot_take_is_refused_naming_the_field(tmp_path, capsys, seed):
    run_dir = tmp_path / "run"
    err = refused(capsys, ["collect", *PENDULUM, f"seed={seed}", "--run-dir", str(run_dir)])
    assert "rlkit collect: error: CollectConfig.seed: a seed must be an integer in [0, 2**32)" in err
    assert seed in err and not run_dir.exists()
    err = refused(capsys, ["collect", *PENDULUM, f"env.seed={seed}", "--print-config"])
    assert "env.seed: a seed must be" in err


@pytest.mark.parametrize("url, named", [
    ("bogus://x", "database=bogus://x: no database of the kind 'bogus'"),
    ("postgresql://u@h:port/x", "database=postgresql://u@h:port/x: not a database URL"),
])
def test_serve_refuses_a_database_url_of_no_known_kind(tmp_path, capsys, url, named):
    err = refused(capsys, ["serve", f"database={url}", "--run-dir", str(tmp_path / "run")])
    assert f"rlkit serve: error: {named}" in err
    assert not (tmp_path / "run").exists()


def test_a_config_file_of_non_utf8_bytes_is_refused_naming_it(tmp_path, capsys):
    path = tmp_path / "config.yaml"
    path.write_bytes(b"seed: 1\nenv: {id: \xff\xfe}\n")
    err = refused(capsys, ["collect", "--config", str(path)])
    assert f"rlkit collect: error: config file {path} is not UTF-8 text (byte 18 is 0xff)" in err


def test_a_config_file_that_writes_a_key_twice_is_refused_naming_key_and_lines(tmp_path, capsys):
    path = tmp_path / "config.yaml"
    path.write_text("seed: 1\nenv:\n  id: Pendulum-v1\n  n_envs: 1\n  n_envs: 2\n")
    err = refused(capsys, ["collect", "--config", str(path), "--print-config"])
    assert f"config file {path}: key 'n_envs' is written twice (on lines 4 and 5)" in err
    err = refused(capsys, ["collect", *PENDULUM, "env.kwargs={g: 9.8, g: 1.0}", "--print-config"])
    assert "override 'env.kwargs={g: 9.8, g: 1.0}': key 'g' is written twice (on line 1)" in err


def test_a_run_dir_under_a_file_is_refused_naming_the_file(tmp_path, capsys):
    (tmp_path / "hostname").write_text("x")
    run_dir = tmp_path / "hostname" / "sub"
    err = refused(capsys, ["collect", *PENDULUM, "--run-dir", str(run_dir), "--logger", "jsonl"])
    file = tmp_path / "hostname"
    assert f"rlkit collect: error: --run-dir {run_dir}: {file} is a file, not a directory" in err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_run_dir_that_cannot_be_created_is_refused_naming_it(capsys):
    err = refused(capsys, ["collect", *PENDULUM, "--run-dir", "/proc/self/rlkit", "--logger", "jsonl"])
    assert "rlkit collect: error: --run-dir /proc/self/rlkit: cannot create it" in err

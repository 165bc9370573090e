"""A run directory that holds a run is not run into again by accident (issue 16, item 9): refused
before anything is written, unless the same command resumes the run there, or ``--overwrite``."""

import json
from pathlib import Path

import pytest

from rlkit.cli import _resume_check, main
from rlkit.config import load_config
from rlkit.errors import ConfigError
from rlkit.factories.configs import PrefRLConfig
from rlkit.m3hf.loop import STATE_KIND
from rlkit.m3hf.run_config import M3HFConfig
from rlkit.persistence.run_state import commit
from rlkit.prefrl import resume as prefrl_resume
from rlkit.runners.rundir import make_run_dir

COLLECT = ["env.id=Pendulum-v1", "env.n_envs=1", "policies=[{kind: random, n_steps: 20}]"]


def snapshot(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()}


def test_a_command_run_again_into_its_run_dir_is_refused_before_writing_and_overwrite_replaces_it(
        tmp_path, capsys):
    run_dir = tmp_path / "run"
    command = ["collect", *COLLECT, "--run-dir", str(run_dir), "--logger", "jsonl"]
    again = ["collect", *COLLECT, "seed=1", "--run-dir", str(run_dir), "--logger", "jsonl"]
    assert main(command) == 0
    (run_dir / "notes.txt").write_text("mine")
    before = snapshot(run_dir)
    capsys.readouterr()

    assert main(again) == 2
    error = capsys.readouterr().err
    assert f"--run-dir {run_dir} holds an earlier run" in error and "--overwrite" in error
    assert snapshot(run_dir) == before  # config.yaml, metrics.jsonl, trajectories: untouched

    assert main([*again, "--overwrite"]) == 0
    assert not (run_dir / "notes.txt").exists()  # the old contents went first
    assert len((run_dir / "metrics.jsonl").read_text().splitlines()) == 1  # not appended to
    assert "seed: 1" in (run_dir / "config.yaml").read_text()


def test_a_directory_without_a_run_is_used_and_overwrite_never_empties_one(tmp_path):
    config = load_config(PrefRLConfig, None, [])
    folder = tmp_path / "trial"
    folder.mkdir()
    (folder / "stdout.1.log").write_text("a sweep's log")  # written before the command starts
    assert make_run_dir("collect", str(folder), config) == folder
    assert (folder / "stdout.1.log").is_file() and (folder / "config.yaml").is_file()
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="a file, not a directory"):
        make_run_dir("collect", str(tmp_path / "file"), config, overwrite=True)


@pytest.mark.parametrize("command", ["collect", "label", "train-reward", "eval-reward", "demo"])
def test_commands_that_never_resume_refuse_a_used_run_dir(tmp_path, command):
    assert _resume_check(command, None) is None
    (tmp_path / "config.yaml").write_text("seed: 0\n")
    with pytest.raises(ConfigError, match="holds an earlier run"):
        make_run_dir(command, str(tmp_path), load_config(PrefRLConfig, None, []), resumes=None)


def pref_rl_point(run_dir: Path, config: PrefRLConfig) -> None:
    commit(run_dir / "resume" / "state.json", prefrl_resume.KIND, "pref-rl", config.model_dump(mode="json"), {
        "timestep": 0, "agent_updates": 0, "agent_episodes": 0, "pending_pairs": 1, "numpy_rng": {},
        "rounds": [], "episodes": {}, "generation": 0, "round": "round-0000000", "store_chunks": [],
        "replay": None, "dataset": {}})


def test_pref_rl_goes_on_from_its_resume_point_with_its_settings_only(tmp_path):
    config = load_config(PrefRLConfig, None, ["env.id=Pendulum-v1"])
    make_run_dir("pref-rl", str(tmp_path), config)
    with pytest.raises(ConfigError, match="no point of an `rlkit pref-rl` run to resume"):
        make_run_dir("pref-rl", str(tmp_path), config, resumes=_resume_check("pref-rl", config))
    pref_rl_point(tmp_path, config)
    longer = config.model_copy(update={"agent": config.agent.model_copy(update={"total_timesteps": 9})})
    assert make_run_dir("pref-rl", str(tmp_path), longer, resumes=_resume_check("pref-rl", longer))
    other = load_config(PrefRLConfig, None, ["env.id=Pendulum-v1", "seed=3"])
    before = snapshot(tmp_path)
    with pytest.raises(ConfigError, match=r"other settings for \['seed'\] \(seed: saved 0, now 3\)"):
        make_run_dir("pref-rl", str(tmp_path), other, resumes=_resume_check("pref-rl", other))
    assert snapshot(tmp_path) == before  # config.yaml is still the run's


def test_m3hf_goes_on_from_its_state_with_its_settings_only(tmp_path):
    config = M3HFConfig()
    make_run_dir("m3hf", str(tmp_path), config)
    with pytest.raises(ConfigError, match="no point of an `rlkit m3hf` run"):
        make_run_dir("m3hf", str(tmp_path), config, resumes=_resume_check("m3hf", config))
    saved = config.model_dump(mode="json", exclude={"llm": {"api_key"}})
    commit(tmp_path / "state.json", STATE_KIND, "m3hf", saved,
           {"completed": 0, "history": [{"original_return": 0.0}], "best": None})
    more = config.model_copy(update={"phases": config.phases + 1})
    assert make_run_dir("m3hf", str(tmp_path), more, resumes=_resume_check("m3hf", more))
    other = config.model_copy(update={"seed": config.seed + 1})
    with pytest.raises(ConfigError, match=r"other settings for \['seed'\] \(seed: saved 0, now 1\)"):
        make_run_dir("m3hf", str(tmp_path), other, resumes=_resume_check("m3hf", other))


@pytest.mark.parametrize("command", ["apec", "demos"])
def test_apec_and_demos_go_on_only_with_the_same_config(tmp_path, command):
    from rlkit.cli import command_schema

    config = command_schema(command)()
    make_run_dir(command, str(tmp_path), config)
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 0}) + "\n")
    assert make_run_dir(command, str(tmp_path), config, resumes=_resume_check(command, config))
    other = config.model_copy(update={"seed": config.seed + 1})
    with pytest.raises(ConfigError, match=r"other settings for \['seed'\] \(seed: saved 0, now 1\)"):
        make_run_dir(command, str(tmp_path), other, resumes=_resume_check(command, other))
    assert "seed: 0" in (tmp_path / "config.yaml").read_text()


@pytest.mark.parametrize("command", ["apec", "demos"])
def test_the_command_names_its_allow_list_whatever_class_its_config_is(tmp_path, command):
    from rlkit.cli import command_schema

    class Preset(command_schema(command)):  # type: ignore[misc,valid-type]
        """A config of the command's schema under another class (no command's schema itself)."""

    config = Preset()
    make_run_dir(command, str(tmp_path), config)
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 0}) + "\n")
    assert make_run_dir(command, str(tmp_path), config, resumes=_resume_check(command, config))

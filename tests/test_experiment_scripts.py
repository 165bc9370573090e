"""Every script under ``experiments/`` ends on bad input as ``rlkit`` does: a message naming what
is wrong and status 2, no traceback."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from rlkit.scale.command import exit_status

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.stem for p in (ROOT / "experiments").glob("*.py")
                 if "exit_status(main" in p.read_text())


def test_every_script_with_a_main_runs_it_through_exit_status():
    with_main = sorted(p.stem for p in (ROOT / "experiments").glob("*.py")
                       if 'if __name__ == "__main__":' in p.read_text())
    assert SCRIPTS == with_main and len(SCRIPTS) == 11


# apec_data's verbs and m3hf_pools' flags take no key=value settings: argparse's usage error (status 2)
@pytest.mark.parametrize("script", [s for s in SCRIPTS if s not in ("apec_data", "m3hf_pools")])
def test_a_setting_off_the_scripts_config_names_itself_and_exits_2(script, capsys):
    module = importlib.import_module(f"experiments.{script}")
    assert exit_status(lambda: module.main(["no_such_setting=1"]), f"{script}.py") == 2
    error = capsys.readouterr().err
    assert error.startswith(f"{script}.py: error: ") and "no_such_setting" in error


@pytest.mark.parametrize("script", ["ordinal_feedback", "prefrl_pebble"])
def test_a_report_before_any_run_says_which_file_is_missing(script, tmp_path, capsys):
    module = importlib.import_module(f"experiments.{script}")
    report = [f"out_dir={tmp_path}", "--report-only"]
    assert exit_status(lambda: module.main(report), f"{script}.py") == 2
    rows = tmp_path / "rows.jsonl"
    assert capsys.readouterr().err == f"{script}.py: error: {rows}: not readable: no such file\n"
    rows.write_text('{"seed": 0}\n{"seed": 1, "accur\n')  # damaged, not being written
    assert exit_status(lambda: module.main(report), f"{script}.py") == 2
    assert "rows.jsonl: line 2 is not JSON" in capsys.readouterr().err


def test_a_data_verb_off_the_list_is_a_usage_error(capsys):
    module = importlib.import_module("experiments.apec_data")
    with pytest.raises(SystemExit) as stopped:
        module.main(["no_such_verb"])
    assert stopped.value.code == 2 and "invalid choice: 'no_such_verb'" in capsys.readouterr().err


def test_a_pools_flag_off_the_list_is_a_usage_error(capsys):
    module = importlib.import_module("experiments.m3hf_pools")
    with pytest.raises(SystemExit) as stopped:
        module.main(["--parser", "gpt"])
    assert stopped.value.code == 2 and "invalid choice: 'gpt'" in capsys.readouterr().err


def test_the_script_itself_prints_no_traceback():
    done = subprocess.run([sys.executable, "experiments/apec.py", "--report-only", "no_such_setting=1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    unknown = "ApecExperimentConfig.no_such_setting is not a field of ApecExperimentConfig"
    assert f"apec.py: error: {unknown}" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_script_runs_by_its_path_as_well_as_with_dash_m(script):
    """``python experiments/<script>.py`` finds its sibling modules (``experiments.*``) as
    ``python -m experiments.<script>`` does: its help, no ModuleNotFoundError."""
    done = subprocess.run([sys.executable, f"experiments/{script}.py", "--help"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout and "Traceback" not in done.stderr


def test_an_error_rlkit_did_not_raise_on_purpose_is_not_hidden():
    def broken() -> int:
        raise ZeroDivisionError("a bug")

    with pytest.raises(ZeroDivisionError):
        exit_status(broken, "x.py")
    assert exit_status(lambda: 0, "x.py") == 0

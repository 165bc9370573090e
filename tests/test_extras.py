"""Missing extras are named (pip install 'rlkit[...]'), in Python and through the ``rlkit`` command,
and importing rlkit or asking the command for help loads none of the heavy stacks."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rlkit.cli import main
from rlkit.errors import RlkitError, UnknownKeyError
from rlkit.extras import EXTRAS, MissingExtraError, extra, require

HEAVY = ("torch", "stable_baselines3", "gymnasium", "wandb", "fastapi", "sqlalchemy", "ot",
         "matplotlib", "openai", "tensorboard", "pettingzoo")


def forget(monkeypatch, *prefixes: str) -> None:
    """Drop modules from sys.modules for this test, so the next import runs them again; after it,
    the modules and their parents' attributes are the ones the other tests imported."""
    for name in list(sys.modules):
        if name.startswith(prefixes):
            parent, _, child = name.rpartition(".")
            if parent in sys.modules and hasattr(sys.modules[parent], child):
                monkeypatch.setattr(sys.modules[parent], child, getattr(sys.modules[parent], child))
            monkeypatch.delitem(sys.modules, name)


def test_a_missing_module_of_an_extra_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ot", None)  # as if POT were not installed
    with pytest.raises(MissingExtraError) as info:
        with extra("apec", "APEC's OT filter"):
            import ot  # noqa: F401
    error = info.value
    assert isinstance(error, RlkitError) and isinstance(error, ModuleNotFoundError)
    assert (error.module, error.extra, error.name) == ("ot", "apec", "ot")
    assert "pip install 'rlkit[apec]'" in str(error) and "APEC's OT filter" in str(error)
    with pytest.raises(MissingExtraError, match=r"rlkit\[apec\]"):
        require("ot", "apec")


def test_other_import_errors_pass_unchanged(monkeypatch):
    monkeypatch.setitem(sys.modules, "numpy", None)
    with pytest.raises(ModuleNotFoundError) as info:
        with extra("human"):
            import numpy  # noqa: F401  (a core package: not the extra's to name)
    assert not isinstance(info.value, MissingExtraError)
    with pytest.raises(ZeroDivisionError):
        with extra("human"):
            1 / 0  # noqa: B018
    with pytest.raises(UnknownKeyError, match="unknown rlkit extra 'webapp'"):
        with extra("webapp"):
            pass
    assert require("json", "human").dumps([1]) == "[1]"  # present: the module comes back


@pytest.mark.parametrize(("blocked", "module", "extra_name"), [
    ("fastapi", "rlkit.human.app", "human"),
    ("sqlalchemy", "rlkit.human.store", "human"),
    ("ot", "rlkit.apec.transport", "apec"),
])
def test_the_library_modules_report_their_extra(monkeypatch, blocked, module, extra_name):
    assert blocked in EXTRAS[extra_name]
    forget(monkeypatch, "rlkit.human.", "rlkit.apec.pairs", "rlkit.apec.transport", "rlkit.runners.apec")
    monkeypatch.setitem(sys.modules, blocked, None)
    with pytest.raises(MissingExtraError, match=rf"pip install 'rlkit\[{extra_name}\]'"):
        __import__(module)


def test_the_tensorboard_backend_reports_its_extra(monkeypatch, tmp_path):
    from rlkit.logging import TensorBoardLogger

    forget(monkeypatch, "torch.utils.tensorboard", "tensorboard")
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    with pytest.raises(MissingExtraError, match=r"rlkit\[tensorboard\]"):
        TensorBoardLogger(tmp_path)


def test_the_command_names_the_missing_extra_without_a_traceback(monkeypatch, tmp_path, capsys):
    forget(monkeypatch, "rlkit.human.")
    monkeypatch.setitem(sys.modules, "fastapi", None)
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)
    assert main(["serve", f"run_dir={tmp_path}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rlkit serve: error: ") and "pip install 'rlkit[human]'" in err
    assert "Traceback" not in err


def test_the_installed_command_exits_2_with_one_line(tmp_path):
    # A real process: the console entry point, with the web stack made unimportable.
    code = ("import sys; sys.modules['fastapi'] = sys.modules['sqlalchemy'] = None\n"
            "from rlkit.cli import main; sys.exit(main(sys.argv[1:]))")
    run = subprocess.run([sys.executable, "-c", code, "serve", f"run_dir={tmp_path}"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'rlkit[human]'" in lines[0], run.stderr


def loaded_after(code: str) -> list[str]:
    probe = f"{code}\nimport json, sys; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                         check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("code", [
    "import rlkit",
    "import rlkit.feedback.scale",
    "import rlkit.data.trajectory",
    "import rlkit.reward, rlkit.feedback, rlkit.data, rlkit.wrappers, rlkit.ail, rlkit.apec, "
    "rlkit.m3hf, rlkit.marl, rlkit.prefrl, rlkit.logging, rlkit.human",
    "import contextlib, rlkit.cli\nwith contextlib.suppress(SystemExit): rlkit.cli.main(['--help'])",
    "import contextlib, rlkit.cli\nwith contextlib.suppress(SystemExit): rlkit.cli.main(['serve', '--help'])",
])
def test_importing_rlkit_and_asking_for_help_loads_no_heavy_stack(code):
    assert loaded_after(code) == []


def test_a_name_loads_its_stack_on_first_use():
    assert "torch" in loaded_after("import rlkit\nrlkit.RewardNet")
    assert "ot" in loaded_after("from rlkit.apec import select_pairs")

"""No test module imports from another test module: what tests share lives in ``conftest.py``
(fixtures) or in support modules (``tests/*.py`` not named ``test_*``), and support modules do not
import test modules either. Every import counts, at module level or inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent

# Imports across test modules that wait on a file other work edits (the importer, or the test module
# that defines the helper); each goes once its helpers are imported from the support modules
# (tiny_runs, fake_data, web_client, ...) or moved there.
PENDING = {
    ("test_device_configs.py", "tests.test_ail_trainer"),
    ("test_device_configs.py", "tests.test_m3hf_loop"),
    ("test_device_configs.py", "tests.test_marl"),
    ("test_hostile_artefacts.py", "tests.test_persistence"),
    ("test_human_browser.py", "tests.test_human_m3hf"),
    ("test_human_browser.py", "tests.test_human_render"),
    ("test_human_browser.py", "tests.test_human_store"),
    ("test_human_browser_m3hf.py", "tests.test_human_browser"),
    ("test_human_browser_m3hf.py", "tests.test_human_m3hf"),
    ("test_persistence.py", "tests.test_m3hf_loop"),
    ("test_persistence.py", "tests.test_prefrl"),
    ("test_prefrl_human.py", "tests.test_prefrl_resume"),
    ("test_prefrl_resume.py", "tests.test_prefrl"),
    ("test_resume_m3hf.py", "tests.test_m3hf_loop"),
    ("test_resume_prefrl.py", "tests.test_prefrl"),
    ("test_runner_progress.py", "tests.test_apec_pipeline"),
}


def imported_test_modules(source: str) -> set[str]:
    """The test modules (``tests.test_*``) that ``source``, the text of a module under tests/, imports.

    Args:
        source: Python source.

    Returns:
        Their dotted names (a relative import is resolved against the ``tests`` package).
    """
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = ".".join(part for part in ("tests" if node.level else "", node.module or "") if part)
            names += [f"{module}.{alias.name}" for alias in node.names]  # also `from tests import test_x`
    return {".".join(parts[:2]) for parts in (name.split(".") for name in names)
            if parts[0] == "tests" and len(parts) > 1 and parts[1].startswith("test_")}


def test_no_module_under_tests_imports_a_test_module() -> None:
    crossing = sorted((path.name, module) for path in TESTS.glob("*.py")
                      for module in imported_test_modules(path.read_text())
                      if (path.name, module) not in PENDING)
    assert crossing == [], (
        "these modules import from a test module; move what they share to conftest.py (a fixture) "
        f"or a support module under tests/: {crossing}")


def test_the_check_sees_every_form_of_import() -> None:
    source = """
import tests.test_a
import tests.tiny_envs, tests.test_b as b
from tests.test_c import helper
from tests import test_d, fake_data
from .test_e import helper
from . import test_f


def inside():
    from tests.test_g import helper
"""
    assert imported_test_modules(source) == {f"tests.test_{x}" for x in "abcdefg"}
    assert imported_test_modules("import tests\nfrom tests.fake_data import make_pairs\n"
                                 "from tests import conftest\nimport test_h\n") == set()

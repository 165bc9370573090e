"""No test module imports from another test module: what tests share lives in ``conftest.py``
(fixtures) or in support modules (``tests/*.py`` not named ``test_*``), and support modules do not
import test modules either. Every import counts, at module level or inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent

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
                      for module in imported_test_modules(path.read_text()))
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

"""Layers point one way: no module under rlkit/ or envs/ imports a higher layer (no exceptions).

Every import counts: at module level, inside functions, under ``if TYPE_CHECKING:``, and the
string module names a package hands to ``lazy_exports``, ``importlib.import_module`` or a
``"module:Name"`` table (the CLI's commands) — each is a dependency the moment it is used.
docs/architecture.md describes the same layers.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("rlkit", "envs")

# Lowest first. A module may import its own package and any lower row. Packages on one row do
# not import each other, except along the edges in SAME_ROW.
ROWS: list[tuple[str, ...]] = [
    ("rlkit.errors", "rlkit._lazy"),  # error types; the lazy-export helper every __init__ uses
    ("rlkit.extras",),  # names the extra to install when an optional import is missing
    ("rlkit.devices",),  # device names in configs and the torch.device they mean
    ("rlkit.persistence",),
    ("rlkit.config",),
    ("rlkit.logging",),
    ("envs",),
    ("rlkit.data",),
    ("rlkit.types",),
    ("rlkit.feedback",),
    ("rlkit.reward",),
    ("rlkit.wrappers",),
    ("rlkit.factories",),
    ("rlkit.prefrl", "rlkit.ail", "rlkit.marl", "rlkit.apec", "rlkit.m3hf", "rlkit.human"),
    ("rlkit.runners",),
    ("rlkit.scale",),  # sweeps and experiment units on a process pool or Ray; runs commands as subprocesses
    ("rlkit.cli",),
]
SAME_ROW = {
    ("rlkit.apec", "rlkit.ail"),  # APEC ranks adversarial-imitation checkpoints
    ("rlkit.m3hf", "rlkit.marl"),  # M3HF reshapes multi-agent PPO
    ("rlkit.human", "rlkit.m3hf"),  # the web app takes M3HF feedback
}
# rlkit/__init__.py is the package façade: it names (lazily) what a user imports first from
# any layer, so it sits on no row. It may import eagerly only from the bottom row, and no module
# of rlkit or envs may take a name from it (that would hide an edge to the name's layer).
FACADE = "rlkit"
ROW_OF = {unit: i for i, row in enumerate(ROWS) for unit in row}
MODULE_STRING = re.compile(r"^((?:rlkit|envs)(?:\.\w+)*):\w+$")


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (or module.name)
    where: str  # path:line
    eager: bool  # runs when the importing module is imported


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def python_files() -> list[Path]:
    return sorted(p for root in SOURCES for p in (ROOT / root).rglob("*.py")
                  if "__pycache__" not in p.parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _deferred_nodes(tree: ast.Module) -> set[int]:
    """ids of the nodes that do not run on import: function bodies, ``if TYPE_CHECKING:`` blocks."""
    deferred: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body: list[ast.AST] = list(node.body)
        elif isinstance(node, ast.Lambda):
            body = [node.body]
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            body = list(node.body)
        else:
            continue
        deferred.update(id(child) for statement in body for child in ast.walk(statement))
    return deferred


def imports_of(path: Path, source: str | None = None) -> list[Import]:
    """Every import of one file (``source``: its dotted name, found from its path by default)."""
    source = source or module_name(path)
    tree = ast.parse(path.read_text(), str(path))
    deferred = _deferred_nodes(tree)
    package = source.split(".") if path.name == "__init__.py" else source.split(".")[:-1]
    where = str(path.relative_to(ROOT)) if ROOT in path.parents else path.name
    found = []
    for node in ast.walk(tree):
        targets: list[str] = []
        eager = id(node) not in deferred
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative: resolve against this module's package
                base = package[: len(package) - (node.level - 1)]
                module = ".".join([*base, *([module] if module else [])])
            targets = [f"{module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "import_module" and node.args and isinstance(node.args[0], ast.Constant):
                targets = [str(node.args[0].value)]
            elif name == "lazy_exports" and len(node.args) > 1 and isinstance(node.args[1], ast.Dict):
                targets = [str(key.value) for key in node.args[1].keys
                           if isinstance(key, ast.Constant)]
                eager = False  # imported when a name is first read
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if match := MODULE_STRING.match(node.value):
                targets = [match.group(1)]
        found += [Import(source, target, f"{where}:{getattr(node, 'lineno', '?')}", eager)
                  for target in targets if target.split(".")[0] in SOURCES]
    return found


def is_module(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def unit_of(module: str) -> str | None:
    """The row entry (package or module) a dotted name belongs to; ``rlkit`` for the façade
    and for a name taken from it; None when it is on no row."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in ROW_OF:
            return ".".join(parts[:n])
    if module == FACADE or (len(parts) == 2 and parts[0] == FACADE and not is_module(module)):
        return FACADE
    return None


def test_every_module_has_a_row() -> None:
    unplaced = [module_name(p) for p in python_files()
                if module_name(p) != FACADE and unit_of(module_name(p)) is None]
    assert not unplaced, f"give these a row in ROWS (and in docs/architecture.md): {unplaced}"


def violations(imports: list[Import]) -> list[str]:
    found = []
    for imp in imports:
        source, target = unit_of(imp.source), unit_of(imp.target)
        if source == FACADE:
            if imp.eager and ROW_OF.get(target or "", len(ROWS)) != 0:
                found.append(f"{imp.where}: the façade imports {imp.target} on import")
        elif target == FACADE:
            found.append(f"{imp.where}: {imp.source} takes {imp.target} from the façade "
                         "(import it from its package)")
        elif source is None or target is None:
            found.append(f"{imp.where}: {imp.source} imports {imp.target}: on no row")
        elif not (source == target or ROW_OF[target] < ROW_OF[source]
                  or (source, target) in SAME_ROW):
            found.append(f"{imp.where}: {imp.source} imports {imp.target} "
                         f"(row {ROW_OF[source]} {source} -> row {ROW_OF[target]} {target})")
    return found


def test_imports_point_down_the_layers() -> None:
    imports = [i for path in python_files() for i in imports_of(path)]
    assert len(imports) > 500  # the walk saw the real graph (about 700 imports)
    problems = violations(imports)
    assert not problems, "\n".join(problems)


def test_the_check_refuses_upward_sideways_and_facade_imports() -> None:
    def check(source: str, target: str, eager: bool = True) -> list[str]:
        return violations([Import(source, target, "x.py:1", eager)])

    assert check("rlkit.reward.nets", "rlkit.prefrl.loop.PreferenceRL", eager=False)  # upward
    assert check("envs.overcooked.kitchen", "rlkit.data.store")  # up by one row
    assert check("rlkit.prefrl.loop", "rlkit.ail.demos")  # sideways on the algorithms' row
    assert check("rlkit.ail.trainer", "rlkit.apec.pairs")  # the allowed edge runs one way
    assert check("rlkit.m3hf.loop", "rlkit.human.teacher")
    assert check("rlkit.reward.nets", "rlkit.RewardNet")  # a name from the façade
    assert check("rlkit", "rlkit.reward.nets")  # the façade importing eagerly
    assert check("rlkit.reward.nets", "rlkit.newthing.x")  # on no row
    for allowed in [("rlkit.apec.pairs", "rlkit.ail.demos"), ("rlkit.m3hf.loop", "rlkit.marl"),
                    ("rlkit.human.app", "rlkit.m3hf.specs"), ("rlkit.cli", "rlkit.errors"),
                    ("rlkit.reward.nets", "rlkit.reward.metrics"), ("envs.overcooked", "rlkit.errors")]:
        assert not check(*allowed), allowed
    assert not check("rlkit", "rlkit.prefrl.loop", eager=False)  # the façade's lazy names


def test_names_from_the_facade_are_told_from_modules() -> None:
    """``from rlkit import errors`` is a module import; ``from rlkit import RewardNet`` a name."""
    assert unit_of("rlkit.errors") == "rlkit.errors" and unit_of("rlkit.RewardNet") == FACADE
    assert unit_of("rlkit.reward.nets.RewardNet") == "rlkit.reward"
    assert unit_of("rlkit") == FACADE and unit_of("rlkit.nosuch.module") is None


def test_the_walk_sees_deferred_lazy_and_string_imports(tmp_path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import importlib\n"
        "from typing import TYPE_CHECKING\n"
        "from rlkit.errors import RlkitError\n"
        "if TYPE_CHECKING:\n"
        "    from rlkit.reward import RewardNet\n"
        "def f():\n"
        "    import rlkit.cli\n"
        "later = importlib.import_module('rlkit.human')\n"
        "names = lazy_exports(__name__, {'rlkit.prefrl.loop': ['PreferenceRL']})\n"
        "TABLE = {'x': 'rlkit.apec.config:ApecConfig', 'not': 'rlkit.apec is great'}\n"
        "from . import segments\n"
        "from ..reward import nets\n"
    )
    found = {(i.target, i.eager) for i in imports_of(probe, "rlkit.data.probe")}
    assert found == {
        ("rlkit.errors.RlkitError", True), ("rlkit.reward.RewardNet", False),
        ("rlkit.cli", False), ("rlkit.human", True), ("rlkit.prefrl.loop", False),
        ("rlkit.apec.config", True), ("rlkit.data.segments", True), ("rlkit.reward.nets", True),
    }


def test_every_folder_of_modules_is_a_package() -> None:
    folders = {p.parent for p in python_files()}
    # and every folder between a package and its source root
    folders |= {parent for folder in folders for parent in folder.parents
                if ROOT in parent.parents and parent.name not in SOURCES and
                parent.relative_to(ROOT).parts[0] in SOURCES}
    missing = sorted(str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").is_file())
    assert not missing, f"folders of modules without __init__.py (left out of the wheel): {missing}"


def test_the_architecture_page_shows_every_row() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    for unit in ROW_OF:
        path = unit.replace(".", "/")
        assert f"`{path}.py`" in page or f"`{path}/`" in page, unit

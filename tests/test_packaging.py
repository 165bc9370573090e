"""The built distributions hold the whole library and nothing else, declare what it imports, and
each package's lazily imported names agree with its ``__all__`` and its type-checking imports.

(``make test`` also installs the wheel outside the checkout and runs it: ``.ci/wheel-check``.)
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import rlkit
from rlkit.extras import EXTRAS

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ("rlkit", "envs")
STACKS = {"core"} | set(EXTRAS)


def source_files() -> set[str]:
    """Every file of the library as it lies in the checkout (bytecode caches aside)."""
    return {
        path.relative_to(ROOT).as_posix()
        for top in LIBRARY
        for path in (ROOT / top).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    # The wheel is built from the sdist, as pip would from a source release.
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = out.glob("rlkit-*.whl")
    (sdist,) = out.glob("rlkit-*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


def wheel_metadata(wheel: Path) -> tuple[set[str], dict[str, str], str]:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(f"{info}/METADATA").decode())
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    files = {n for n in names if not n.startswith(info + "/")}
    return files, metadata, entry_points


def test_every_folder_of_modules_is_a_package():
    folders = {path.parent for top in LIBRARY for path in (ROOT / top).rglob("*.py")}
    missing = sorted(str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").is_file())
    assert not missing, f"folders of modules without __init__.py (left out of the wheel): {missing}"


def test_the_wheel_holds_the_library_with_its_data_and_nothing_else(dist):
    files, _, _ = wheel_metadata(dist["wheel"])
    expected = source_files()
    assert any(f.startswith("rlkit/human/templates/") and f.endswith(".html") for f in expected)
    assert any(f.startswith("rlkit/human/static/") for f in expected)
    assert sorted(expected - files) == [], "in the source tree, not in the wheel"
    assert sorted(files - expected) == [], "in the wheel, not in the library's source tree"
    assert not any(f.split("/")[0] in {"tests", "benchmarks", "experiments", "docs"} for f in files)


def test_the_sdist_builds_the_same_library(dist):
    with tarfile.open(dist["sdist"]) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"setup.cfg", "pyproject.toml", "README.md"} <= names
    assert sorted(source_files() - names) == []


def test_the_wheel_metadata(dist):
    _, metadata, entry_points = wheel_metadata(dist["wheel"])
    assert metadata["Version"] == rlkit.__version__
    assert "rlkit = rlkit.cli:main" in entry_points
    requirements = [Requirement(r) for r in metadata.get_all("Requires-Dist")]
    core = {canonicalize_name(r.name) for r in requirements if r.marker is None}
    for name in ("gymnasium", "stable-baselines3", "torch", "pettingzoo", "openai", "wandb"):
        assert name in core, name  # the design card's packages stay required
    for name in ("fastapi", "uvicorn", "sqlalchemy", "jinja2", "pot", "tensorboard", "psycopg"):
        assert name not in core, f"{name} should come with an extra"
    extras = set(metadata.get_all("Provides-Extra"))
    assert STACKS - {"core"} | {"all", "dev"} <= extras
    # [all] is rlkit[human,apec,...]: every extra a run can use (the docs site's tools come with dev)
    all_extras = {e for r in requirements if r.marker and r.marker.evaluate({"extra": "all"})
                  for e in r.extras}
    assert all_extras == STACKS - {"core", "docs"}


def declared(dist_wheel: Path) -> dict[str, set[str]]:
    """Stack ("core" or an extra) -> the distributions it brings: declared, or required by one
    that is declared (one level down: ``starlette`` comes with ``fastapi``)."""
    _, metadata, _ = wheel_metadata(dist_wheel)
    requirements = [Requirement(r) for r in metadata.get_all("Requires-Dist")]
    stacks: dict[str, set[str]] = {}
    for stack in STACKS:
        env = {"extra": "" if stack == "core" else stack}
        names = {r.name for r in requirements if r.marker is None or r.marker.evaluate(env)}
        brought = set(names)
        for name in names:
            brought |= {Requirement(r).name for r in importlib.metadata.requires(name) or ()}
        stacks[stack] = {canonicalize_name(n) for n in brought}
    return stacks


class _Imports(ast.NodeVisitor):
    """Top-level third-party module names a file imports, with the extra guarding each
    (``with extra("human"):``; "deferred" for an unguarded import inside a function, whose caller
    answers for it), type-checking-only imports left out."""

    def __init__(self) -> None:
        self.found: list[tuple[str, str, int]] = []  # (module, stack, line)
        self.stack = ["core"]

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.stack.append("deferred" if self.stack[-1] == "core" else self.stack[-1])
        self.generic_visit(node)
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        if isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_With(self, node: ast.With) -> None:
        call = node.items[0].context_expr
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "extra"
                and isinstance(call.args[0], ast.Constant)):
            self.stack.append(call.args[0].value)
            self.generic_visit(node)
            self.stack.pop()
            return
        self.generic_visit(node)

    def _add(self, module: str | None, line: int) -> None:
        top = (module or "").partition(".")[0]
        if top and top not in sys.stdlib_module_names and top not in {"rlkit", "envs", "__future__"}:
            self.found.append((top, self.stack[-1], line))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0:
            self._add(node.module, node.lineno)


def library_imports() -> list[tuple[str, str, str]]:
    found = []
    for top in LIBRARY:
        for path in sorted((ROOT / top).rglob("*.py")):
            visitor = _Imports()
            visitor.visit(ast.parse(path.read_text(), str(path)))
            found += [(module, stack, f"{path.relative_to(ROOT)}:{line}")
                      for module, stack, line in visitor.found]
    return found


def test_every_third_party_import_is_declared_in_its_stack(dist):
    stacks = declared(dist["wheel"])
    providers = importlib.metadata.packages_distributions()
    imports = library_imports()
    assert {m for m, _, _ in imports} >= {"torch", "stable_baselines3", "fastapi", "ot"}
    problems = []
    for module, stack, where in imports:
        owner = next((e for e, modules in EXTRAS.items() if module in modules), None)
        if stack == "deferred":  # inside a function: the module's own extra, or the core
            stack = owner or "core"
        if stack not in STACKS:
            problems.append(f"{where}: unknown extra {stack!r}")
            continue
        brought = stacks["core"] | (stacks[stack] if stack != "core" else set())
        dists = {canonicalize_name(d) for d in providers.get(module, ())}
        if not dists & brought:
            problems.append(f"{where}: {module} ({sorted(dists)}) is not declared for {stack!r}")
        if owner is not None and stack != owner:
            # at module level, a missing extra must fail as MissingExtraError, not a bare import error
            problems.append(f"{where}: {module} belongs to the {owner!r} extra: import it inside "
                            f"`with extra({owner!r}):`")
    assert not problems, "\n".join(problems)


def test_each_extra_brings_its_modules(dist):
    stacks = declared(dist["wheel"])
    providers = importlib.metadata.packages_distributions()
    for extra, modules in EXTRAS.items():
        for module in modules:
            dists = {canonicalize_name(d) for d in providers.get(module, ())}
            assert dists & stacks[extra], (extra, module)


def lazy_packages() -> list[Path]:
    return [p for top in LIBRARY for p in sorted((ROOT / top).rglob("__init__.py"))
            if "lazy_exports(" in p.read_text()]


@pytest.mark.parametrize("init", lazy_packages(), ids=lambda p: str(p.parent.relative_to(ROOT)))
def test_lazy_names_agree_with_all_and_type_checking_imports(init):
    package = ".".join(init.parent.relative_to(ROOT).parts)
    tree = ast.parse(init.read_text())
    checked: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom)
                checked.setdefault(imp.module, set()).update(a.name for a in imp.names)
    module = importlib.import_module(package)
    homes: dict[str, str] = module.__dict__["_lazy_homes"]
    assert {m: {n for n, h in homes.items() if h == m} for m in set(homes.values())} == checked
    assert set(module.__all__) - {"__version__"} == set(homes)
    for name, home in homes.items():
        value = getattr(module, name)
        assert value is getattr(importlib.import_module(home), name), name
        assert name in dir(module)
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        module.not_a_name  # noqa: B018


def test_a_name_that_is_also_a_module_stays_the_name():
    # rlkit.apec exports the function drex from rlkit/apec/drex.py: importing that module (as any
    # other import of the package does) must not turn the package's `drex` into the module.
    code = ("import rlkit.apec.drex, rlkit.marl.evaluate\n"
            "from rlkit.apec import NOISE_GRID, drex\n"
            "from rlkit.marl import evaluate\n"
            "print(all(callable(f) and type(f).__name__ == 'function' for f in (drex, evaluate)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         timeout=120)
    assert out.stdout.strip() == "True"

"""The documentation site builds strictly, holds every page of its nav, documents every public
name of the packages its API pages cover, fetches nothing, and the commands the pages show are
valid configs of the commands they name."""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"


def nav_pages(nav: list) -> list[str]:
    pages: list[str] = []
    for item in nav:
        if isinstance(item, str):
            pages.append(item)
        else:
            for value in item.values():
                pages.extend(nav_pages(value) if isinstance(value, list) else [value])
    return pages


def built_page(site: Path, page: str) -> Path:
    """Where mkdocs writes ``page`` with directory URLs: a/b.md -> a/b/index.html."""
    stem = page.removesuffix(".md")
    if stem == "index" or stem.endswith("/index"):
        return site / f"{stem}.html"
    return site / stem / "index.html"


def public_names(module: str) -> list[str]:
    """``__all__`` of a package, read from its source (no heavy imports)."""
    tree = ast.parse((ROOT / module.replace(".", "/") / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            return [element.value for element in node.value.elts]  # type: ignore[attr-defined]
    raise AssertionError(f"{module} has no __all__")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    for package in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        pytest.importorskip(package, reason=f"{package} is not installed (the 'docs' extra: "
                                            "pip install -e '.[docs]'); the site cannot be built")
    out = tmp_path_factory.mktemp("site")
    env = os.environ | {"NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"
    return out


def config() -> dict:
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text())


def test_every_nav_page_is_built_and_every_docs_page_is_in_the_nav(site):
    pages = nav_pages(config()["nav"])
    for page in pages:
        assert (DOCS / page).is_file(), f"nav names {page}, which is not in docs/"
        assert built_page(site, page).is_file(), f"{page} was not built"
    on_disk = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert on_disk - set(pages) == set(), "pages in docs/ left out of the nav"
    for needed in ("index.md", "getting-started.md", "tutorials/ordinal-feedback.md", "tutorials/apec.md",
                   "tutorials/m3hf.md", "tutorials/labelling.md", "results/ordinal.md", "api/reward.md"):
        assert needed in pages


def test_the_api_reference_documents_every_public_name(site):
    reward = (site / "api" / "reward" / "index.html").read_text()
    fit = reward.index('id="rlkit.reward.RewardTrainer.fit"')
    assert "Train on a" in reward[fit:fit + 5000]  # its docstring, rendered under its heading
    directives = {}
    for page in (DOCS / "api").glob("*.md"):
        for module in re.findall(r"^::: (rlkit\.\w+)$", page.read_text(), re.M):
            directives[module] = page.stem
    assert {"rlkit.reward", "rlkit.feedback", "rlkit.data", "rlkit.wrappers", "rlkit.human",
            "rlkit.m3hf", "rlkit.apec"} <= set(directives)
    for module, page in directives.items():
        if not (ROOT / module.replace(".", "/") / "__init__.py").is_file():
            continue  # a plain module (rlkit.errors): its public names are its own
        html = (site / "api" / page / "index.html").read_text()
        for name in public_names(module):
            # a name shadowed by its own submodule (rlkit.apec.drex) is listed under its module
            assert (f'id="{module}.{name}"' in html or f'id="{module}.{name}.{name}"' in html), \
                f"api/{page}.md does not document {module}.{name}"


def test_the_site_fetches_nothing_from_the_network(site):
    theme = config()["theme"]
    assert theme["font"] is False
    plugins = [p if isinstance(p, str) else next(iter(p)) for p in config()["plugins"]]
    assert not {"privacy", "social", "material/privacy", "material/social"} & set(plugins)
    for page in ("index.html", "api/reward/index.html", "tutorials/apec/index.html"):
        html = (site / page).read_text()
        assert "fonts.googleapis" not in html and "fonts.gstatic" not in html
        assert not re.search(r'<(script|link)[^>]+(src|href)="https?://', html), page


def shown_commands(text: str) -> list[list[str]]:
    """The ``rlkit ...`` lines of a page's bash blocks, continuation lines joined."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0].strip()
            if line.startswith("rlkit ") and "$(" not in line:
                commands.append(shlex.split(line)[1:])
    return commands


@pytest.mark.parametrize("page", ["getting-started.md", "tutorials/ordinal-feedback.md", "tutorials/apec.md",
                                  "tutorials/m3hf.md", "tutorials/labelling.md"])
def test_every_command_a_page_shows_is_a_valid_config(page, tmp_path):
    from rlkit.cli import build_parser, command_schema
    from rlkit.config import load_config

    text = (DOCS / page).read_text()
    for i, block in enumerate(re.findall(r"```yaml\n(.*?)```", text, re.S)):
        (tmp_path / f"block{i}.yaml").write_text(block)
    commands = shown_commands(text)
    assert commands, f"{page} shows no rlkit command"
    for argv in commands:
        args = build_parser().parse_args(argv)
        config = args.config
        if config is not None:  # the page's YAML block stands for the file it names
            config = tmp_path / "block0.yaml"
        load_config(command_schema(args.command), config, args.overrides)

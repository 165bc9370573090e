"""Every public function the API reference documents has Google-style ``Args:`` and ``Returns:``
sections (issue 17), so the generated pages say what each argument means and what comes back.

Scope: the functions among the names the API pages document (``docs/api/*.md``: a package's
``__all__``, or the public names a module defines when it has none, plus any function a page names
directly). A function that takes arguments needs an ``Args:`` section naming each of them (and no
other); one whose return annotation is not ``None``/``NoReturn`` needs a ``Returns:`` section (a
generator or context manager may use ``Yields:``). Classes are left out for now: their
constructors and methods have no sections yet; extending this test to them is the next step.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[1]

SECTION = re.compile(r"^(\w[\w ]*):\s*$")  # "Args:", "Returns:", ... alone on a line
ENTRY = re.compile(r"^ {4}(\*{0,2}\w+)\s*(\([^)]*\))?:")  # "    name:" or "    name (type):"
GENERATORS = ("Iterator", "Generator", "AsyncIterator", "AsyncGenerator", "Iterable")


def documented_targets() -> list[str]:
    """What the API pages render: ``::: dotted.path`` lines of docs/api/*.md."""
    targets = []
    for page in sorted((ROOT / "docs" / "api").glob("*.md")):
        targets += re.findall(r"^::: *([\w.]+)\s*$", page.read_text(), flags=re.MULTILINE)
    return targets


def resolve(dotted: str) -> Any:
    """``package.name``: the package's attribute (a function may share its module's name, as
    ``rlkit.apec.drex`` does); a page's ``::: dotted.path``: the module, else its parent's attribute."""
    parent, _, name = dotted.rpartition(".")
    if parent:
        try:
            return getattr(importlib.import_module(parent), name)
        except ModuleNotFoundError:
            return getattr(resolve(parent), name)
    return importlib.import_module(dotted)


def page_target(dotted: str) -> Any:
    try:
        return importlib.import_module(dotted)
    except ModuleNotFoundError:
        return resolve(dotted)


def exported_names() -> list[str]:
    """``package.name`` of every name the API pages document (functions and others alike)."""
    names: list[str] = []
    for target in documented_targets():
        obj = page_target(target)
        if not inspect.ismodule(obj):
            names.append(target)
            continue
        public = getattr(obj, "__all__", None)
        if public is None:  # a module without __all__: what it defines itself
            public = [n for n, v in vars(obj).items() if not n.startswith("_")
                      and getattr(v, "__module__", None) == obj.__name__]
        names += [f"{target}.{name}" for name in public]
    return list(dict.fromkeys(names))


EXPORTED = exported_names()


def exported_function(dotted: str) -> Callable[..., Any] | None:
    try:
        obj = resolve(dotted)
    except ImportError as error:  # an optional extra that is not installed
        pytest.skip(f"{dotted}: {error}")
    return obj if inspect.isfunction(inspect.unwrap(obj)) else None


def sections(doc: str) -> dict[str, list[str]]:
    """The docstring's top-level sections: title -> its indented lines."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in doc.splitlines():
        match = SECTION.match(line)
        if match:
            current = out.setdefault(match.group(1), [])
        elif current is not None and (line.startswith(" ") or not line.strip()):
            current.append(line)
        else:
            current = None
    return {title: [line for line in lines if line.strip()] for title, lines in out.items()}


def problems(fn: Callable[..., Any]) -> list[str]:
    """Why ``fn``'s docstring falls short; empty when it is complete."""
    doc = inspect.getdoc(fn)
    if not doc:
        return ["no docstring"]
    found = sections(doc)
    signature = inspect.signature(fn)
    params = {
        ("*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else "") + name
        for name, p in signature.parameters.items() if name not in ("self", "cls")
    }
    out: list[str] = []
    if params:
        if "Args" not in found:
            out.append(f"no Args: section for {sorted(params)}")
        else:
            named = {m.group(1) for line in found["Args"] if (m := ENTRY.match(line))}
            if missing := params - named:
                out.append(f"Args: does not describe {sorted(missing)}")
            if extra := named - params:
                out.append(f"Args: describes {sorted(extra)}, which it does not take")
    elif "Args" in found:
        out.append("an Args: section, but it takes no arguments")
    annotation = signature.return_annotation
    if annotation is inspect.Signature.empty:
        out.append("no return annotation (so no telling whether it needs a Returns: section)")
    else:
        text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
        text = text.removeprefix("typing.").removeprefix("collections.abc.")
        if text not in ("None", "NoReturn", "Never"):
            allowed = ("Returns", "Yields") if text.startswith(GENERATORS) else ("Returns",)
            if not any(found.get(title) for title in allowed):
                out.append(f"returns {text} but has no {' or '.join(f'{t}:' for t in allowed)} section")
    return out


def test_the_pages_document_functions() -> None:
    functions = [name for name in EXPORTED if exported_function(name) is not None]
    assert len(functions) > 50, functions  # the walk finds the packages' functions at all


@pytest.mark.parametrize("dotted", EXPORTED)
def test_exported_function_has_args_and_returns(dotted: str) -> None:
    fn = exported_function(dotted)
    if fn is None:
        return  # a class, constant or type alias: out of scope (see the module docstring)
    found = problems(fn)
    assert not found, f"{dotted} ({inspect.getsourcefile(fn)}): " + "; ".join(found)


def test_problems_sees_a_lost_section() -> None:
    """The check itself: a docstring that loses its Args: or Returns: fails."""

    def complete(a: int, *rest: int, **named: int) -> int:
        """Sum.

        Args:
            a: the first.
            *rest: the others.
            **named: more, by name.

        Returns:
            The sum.
        """
        return a

    def no_args(a: int) -> int:
        """Sum.

        Returns:
            The sum.
        """
        return a

    def stale(a: int) -> None:
        """Sum.

        Args:
            b: renamed since.
        """

    def no_returns(a: int) -> int:
        """Sum.

        Args:
            a: the first.
        """
        return a

    assert problems(complete) == []
    assert problems(no_args) == ["no Args: section for ['a']"]
    assert problems(stale) == ["Args: does not describe ['a']",
                               "Args: describes ['b'], which it does not take"]
    assert problems(no_returns) == ["returns int but has no Returns: section"]

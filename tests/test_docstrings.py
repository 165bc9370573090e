"""Every public function and class the API reference documents has Google-style sections, so the
generated pages say what each argument means and what comes back.

Scope: the functions and classes among the names the API pages document (``docs/api/*.md``: a
package's ``__all__``, or the public names a module defines when it has none, plus any name a page
gives directly). A function that takes arguments needs an ``Args:`` section naming each of them
(and no other); one whose return annotation is not ``None``/``NoReturn`` needs a ``Returns:``
section (a generator or context manager may use ``Yields:``). A class needs a docstring of its own,
and its docstring with ``__init__``'s (the pages merge them) describes each constructor argument,
in ``Args:`` or, for a field, ``Attributes:`` (``Args:`` names no other). Methods are not checked.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from collections.abc import Callable, Set
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


def exported_object(dotted: str) -> Any:
    try:
        return resolve(dotted)
    except ImportError as error:  # an optional extra that is not installed
        pytest.skip(f"{dotted}: {error}")


def exported_function(dotted: str) -> Callable[..., Any] | None:
    obj = exported_object(dotted)
    return obj if inspect.isfunction(inspect.unwrap(obj)) else None


def exported_class(dotted: str) -> type | None:
    obj = exported_object(dotted)
    return obj if inspect.isclass(obj) else None


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


def parameter_names(signature: inspect.Signature) -> set[str]:
    """What a caller passes, as an ``Args:`` entry names it: ``a``, ``*rest``, ``**named``."""
    return {
        ("*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else "") + name
        for name, p in signature.parameters.items() if name not in ("self", "cls")
    }


def entries(lines: list[str]) -> set[str]:
    return {m.group(1) for line in lines if (m := ENTRY.match(line))}


def args_problems(params: set[str], found: dict[str, list[str]], listed: Set[str] = frozenset()) -> list[str]:
    """Why the ``Args:`` section in ``found`` (with the names ``listed`` elsewhere) does not
    describe exactly ``params``."""
    if not params:
        return ["an Args: section, but it takes no arguments"] if "Args" in found else []
    if "Args" not in found and not listed:
        return [f"no Args: section for {sorted(params)}"]
    named = entries(found.get("Args", []))
    out = []
    if missing := params - named - listed:
        out.append(f"Args: does not describe {sorted(missing)}")
    if extra := named - params:
        out.append(f"Args: describes {sorted(extra)}, which it does not take")
    return out


def problems(fn: Callable[..., Any]) -> list[str]:
    """Why ``fn``'s docstring falls short; empty when it is complete."""
    doc = inspect.getdoc(fn)
    if not doc:
        return ["no docstring"]
    found = sections(doc)
    signature = inspect.signature(fn)
    out = args_problems(parameter_names(signature), found)
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


def own_docstring(cls: type) -> str | None:
    """The class's own docstring: not a base class's, nor the one ``dataclass`` or ``NamedTuple``
    writes from the signature when there is none."""
    doc = cls.__dict__.get("__doc__")
    generated = (dataclasses.is_dataclass(cls) or issubclass(cls, tuple)) and \
        doc is not None and doc.startswith(f"{cls.__name__}(")
    return None if generated or not doc else inspect.cleandoc(doc)


def constructor_parameters(cls: type) -> set[str]:
    """What ``cls(...)`` takes, as ``__init__`` declares it (a metaclass of rlkit's own may wrap
    the call, as ``PreferenceRL``'s does); none for an exception or protocol that keeps its base's
    constructor (``(*args, **kwargs)``, nothing to document)."""
    if getattr(cls, "_is_protocol", False):
        return set()
    own_metaclass = type(cls).__module__.partition(".")[0] in ("rlkit", "envs")
    try:
        signature = inspect.signature(cls.__init__ if own_metaclass else cls)  # type: ignore[misc]
    except ValueError:  # a builtin's constructor (an exception's)
        return set()
    return parameter_names(signature)


def class_problems(cls: type) -> list[str]:
    """Why ``cls``'s docstrings fall short; empty when complete. As the API pages render them
    (``merge_init_into_class``), the class's and ``__init__``'s docstrings are one: together they
    describe each constructor parameter, in an ``Args:`` section or, for a field, ``Attributes:``."""
    doc = own_docstring(cls)
    if not doc:
        return ["no docstring"]
    found = sections(doc)
    init = cls.__dict__.get("__init__")
    init_doc = init.__doc__ if inspect.isfunction(init) else None  # its own, not a base's
    for title, lines in sections(inspect.cleandoc(init_doc or "")).items():
        found.setdefault(title, []).extend(lines)
    return args_problems(constructor_parameters(cls), found, entries(found.get("Attributes", [])))


def test_the_pages_document_functions_and_classes() -> None:
    functions = [name for name in EXPORTED if exported_function(name) is not None]
    assert len(functions) > 50, functions  # the walk finds the packages' functions at all
    classes = [name for name in EXPORTED if exported_class(name) is not None]
    assert len(classes) > 50, classes


@pytest.mark.parametrize("dotted", EXPORTED)
def test_exported_function_or_class_is_documented(dotted: str) -> None:
    obj = exported_object(dotted)
    if inspect.isclass(obj):
        found = class_problems(obj)
    elif inspect.isfunction(inspect.unwrap(obj)):
        found = problems(obj)
    else:
        return  # a constant or type alias
    assert not found, f"{dotted} ({inspect.getsourcefile(obj)}): " + "; ".join(found)


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


def test_class_problems_sees_a_missing_docstring_or_argument() -> None:
    """The check itself: a class without its own docstring, or whose docstrings leave out a
    constructor argument, fails; one described in either docstring passes."""

    class Complete:
        """A pair.

        Args:
            a: the first.
        """

        def __init__(self, a: int, b: int) -> None:
            """Also:

            Args:
                b: the second.
            """

    @dataclasses.dataclass(frozen=True)
    class Fields:
        """A pair.

        Attributes:
            a: the first.
            b: the second.
        """

        a: int
        b: int

    @dataclasses.dataclass(frozen=True)
    class Undocumented:
        a: int

    class Inherits(Complete):
        pass

    class OwnInit(Complete):
        """A pair, again."""

        def __init__(self, a: int, b: int) -> None:  # undocumented: Complete.__init__'s is not its
            pass

    class Partial:
        """A pair.

        Args:
            a: the first.
            c: gone.
        """

        def __init__(self, a: int, b: int) -> None:
            pass

    class NoArguments:
        """Nothing to pass."""

    assert class_problems(Complete) == [] == class_problems(Fields) == class_problems(NoArguments)
    assert class_problems(Undocumented) == ["no docstring"]  # not the one dataclass writes
    assert class_problems(Inherits) == ["no docstring"]
    assert class_problems(OwnInit) == ["no Args: section for ['a', 'b']"]
    assert class_problems(Partial) == ["Args: does not describe ['b']",
                                       "Args: describes ['c'], which it does not take"]

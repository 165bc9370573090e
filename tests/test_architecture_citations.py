"""Every ``path:line`` citation in docs/architecture.md lands on the code it describes.

A citation is a code span naming a Python file and a line: a full path (``rlkit/wrappers/relabel.py:127``),
a file name standing for the last full path with that name (``relabel.py:104``), or a bare line
(``:139``) in the last file named. A cited line must exist and hold code (not a blank line, a comment
or a decorator). Where a backticked name comes just before a citation (``name`` (``path:line``) or
``name``, ``path:line``), the line must lie inside that function or class when the cited file defines
one of that name (methods go by their own name), and must mention the name when the file does not
(a call such as ``agent.learn``, a setting such as ``query.every_steps``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"

FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
SPAN = re.compile(r"`([^`]+)`")
CITATION = re.compile(r"(?P<path>[\w/]+\.py)?(?::(?P<line>\d+))?")
NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
FILE_SUFFIXES = (".json", ".pt", ".zip", ".py", ".yaml", ".npz")  # `state.json` names a file, not code
NAME_THEN_CITATION = (" (", ", ")  # what stands between a name and the citation it labels


@dataclass(frozen=True)
class Citation:
    """One ``path:line`` citation, its file resolved.

    Args:
        text: the code span as the doc writes it.
        path: the cited file, relative to the repository root.
        line: the cited line, 1-based.
        name: the function, method or class named just before it, or None.
    """

    text: str
    path: str
    line: int
    name: str | None


def citations(doc: str) -> list[Citation]:
    """Every citation in ``doc``, in order, with short forms resolved.

    Args:
        doc: markdown text; fenced code blocks are skipped.

    Returns:
        The citations; a short form that names no earlier file raises ValueError.
    """
    found: list[Citation] = []
    by_name: dict[str, str] = {}  # file name -> the last full path with that name
    last: str | None = None
    previous: re.Match[str] | None = None
    doc = FENCE.sub("", doc)
    for span in SPAN.finditer(doc):
        match = CITATION.fullmatch(span[1])
        if match is None or not (match["path"] or match["line"]):
            previous = span
            continue
        path = match["path"]
        if path and "/" in path:
            if (ROOT / path).is_file() or match["line"]:
                by_name[Path(path).name] = path
                last = path
        elif path in by_name:
            last = by_name[path]
        elif path and match["line"]:
            raise ValueError(f"`{span[1]}` names no earlier full path ending in {path}")
        if match["line"]:
            if last is None:
                raise ValueError(f"`{span[1]}` comes before any file is named")
            found.append(Citation(span[1], last, int(match["line"]), labelled_by(doc, previous, span)))
        previous = span
    return found


def labelled_by(doc: str, previous: re.Match[str] | None, span: re.Match[str]) -> str | None:
    """The backticked function or class name just before ``span``, if there is one.

    Args:
        doc: the text both spans are in.
        previous: the code span before ``span``, or None.
        span: a citation's code span.

    Returns:
        The last component of the name (``Discriminator.generator_reward`` gives
        ``generator_reward``), or None when the span before is no name or not right before.
    """
    if previous is None or doc[previous.end() : span.start()] not in NAME_THEN_CITATION:
        return None
    name = previous[1]
    if not NAME.fullmatch(name) or name.endswith(FILE_SUFFIXES):
        return None
    return name.rsplit(".", 1)[-1]


@cache
def source(path: str) -> tuple[list[str], dict[str, list[range]]]:
    """A Python file's lines and where each function and class it defines lies.

    Args:
        path: relative to the repository root.

    Returns:
        The lines, and for each def or class name the line ranges of its definitions
        (the ``def`` line to the last line of the body, decorators excluded).
    """
    text = (ROOT / path).read_text()
    spans: dict[str, list[range]] = {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            assert node.end_lineno is not None
            spans.setdefault(node.name, []).append(range(node.lineno, node.end_lineno + 1))
    return text.splitlines(), spans


def problem(citation: Citation) -> str | None:
    """What is wrong with one citation, or None when it lands where the doc says.

    Args:
        citation: a resolved citation.

    Returns:
        A sentence naming the citation, the file and line, and the fault.
    """
    where = f"`{citation.text}` ({citation.path}:{citation.line})"
    if not (ROOT / citation.path).is_file():
        return f"{where}: no such file"
    lines, defs = source(citation.path)
    if citation.line > len(lines):
        return f"{where}: past the end of the file ({len(lines)} lines)"
    code = lines[citation.line - 1].strip()
    if not code or code.startswith(("#", "@")):
        return f"{where}: lands on {'a blank line' if not code else repr(code)}"
    name = citation.name
    if name is None:
        return None
    if name in defs:
        if not any(citation.line in body for body in defs[name]):
            starts = ", ".join(str(body.start) for body in defs[name])
            return f"{where}: not inside `{name}` (defined at line {starts})"
    elif not re.search(rf"\b{name}\b", code):
        return f"{where}: the file does not define `{name}` and the line does not mention it: {code!r}"
    return None


def test_short_forms_resolve_to_the_last_file_named() -> None:
    doc = (
        "`a` (`rlkit/prefrl/loop.py:10`), then (`:12`) and `rlkit/m3hf/loop.py:3`; "
        "`loop.py:4`, `rlkit/ail/trainer.py`, `:5`; `prefrl/loop.py` is no full path here"
    )
    assert citations(doc) == [
        Citation("rlkit/prefrl/loop.py:10", "rlkit/prefrl/loop.py", 10, "a"),
        Citation(":12", "rlkit/prefrl/loop.py", 12, None),
        Citation("rlkit/m3hf/loop.py:3", "rlkit/m3hf/loop.py", 3, None),
        Citation("loop.py:4", "rlkit/m3hf/loop.py", 4, None),
        Citation(":5", "rlkit/ail/trainer.py", 5, None),
    ]


def test_a_name_labels_the_citation_right_after_it() -> None:
    doc = "`A.f` (`x/y.py:1`), `g`, `:2`, `h` in `:3`, `state.json` (`:4`)"
    assert [c.name for c in citations(doc)] == ["f", "g", None, None]


def test_a_stale_citation_is_reported() -> None:
    path = "tests/test_architecture_citations.py"
    lines, defs = source(path)
    inside = defs["problem"][0].start + 1
    assert problem(Citation("t", path, inside, "problem")) is None
    assert "past the end" in str(problem(Citation("t", path, len(lines) + 1, None)))
    assert "blank" in str(problem(Citation("t", path, defs["problem"][0].start - 1, None)))
    assert "not inside `source`" in str(problem(Citation("t", path, inside, "source")))
    assert "does not mention" in str(problem(Citation("t", path, inside, "undefined_name")))
    assert problem(Citation("t", path, inside, "citation")) is None  # the line mentions it


def test_every_citation_in_the_architecture_page_lands_on_its_code() -> None:
    found = citations(DOC.read_text())
    assert len(found) > 50, f"expected the page's citations, found {len(found)}"
    problems = [p for c in found if (p := problem(c)) is not None]
    assert not problems, "stale citations in docs/architecture.md:\n" + "\n".join(problems)

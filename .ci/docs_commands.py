"""Every ``rlkit ...`` command the docs show, run by the ``rlkit`` this Python imports (in
``.ci/wheel-check``: the built wheel in a fresh venv) from a working directory outside the checkout.

The commands are the lines starting with ``rlkit`` in the fenced bash blocks of README.md and
docs/**/*.md (docs/results/ left out: pages written by the experiments), continuation lines
joined and split into words by bash, as the reader's shell would. Each runs in one process, by
``rlkit.cli.main`` with ``--print-config`` appended: its config is built and checked as the
command checks it before it runs (``rlkit.runners.checks``), and nothing trains. A sweep is checked
as ``rlkit sweep`` checks it, then each grid point's trial runs with ``--print-config``.

Each page runs in a fresh directory of its own, its commands in the order shown. What a reader
would have there, the page provides:

- ``--config NAME`` gets the page's YAML block that the line before it calls ``NAME``; a config
  the page does not show (the reader's own) is an empty one: the defaults;
- an input file that ``--print-config`` requires to exist (``INPUT_FIELDS``) and that an earlier
  command of the page writes (under its ``--run-dir``) or an earlier Python block names is an
  empty stand-in. Any other missing input fails, as it would for the reader.

``EXPECTED_SKIPS`` lists the lines that cannot run as shown, each with its reason; a listed line
the docs no longer show fails the check. ``--run`` also runs ``REAL``, a few commands at tiny
budgets for real (the docs' first chain, M3HF on a shipped example script), and checks what they
print.

usage: python .ci/docs_commands.py [--root CHECKOUT] [--run]   (from a directory outside it)
Exit status 0 when every command passed, 1 otherwise (each failure printed with its page and line).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

#: fields whose file ``--print-config`` requires to exist (``rlkit.runners.checks.check_before_run``)
INPUT_FIELDS = ("trajectories", "model")
#: (page, the command's start, why it cannot run as shown)
EXPECTED_SKIPS = (
    ("docs/scale.md", "rlkit sweep train-reward ... --run-dir runs/sweep-lr --resume",
     "`...` stands for the arguments of the sweep it resumes"),
)
#: commands run for real by --run, in one directory, each with what one JSON line it prints must hold
REAL = (
    ("rlkit collect env.id=Pendulum-v1 env.n_envs=1 'policies=[{n_steps: 300}]' --run-dir collect",
     {"steps": 300}),
    ("rlkit label trajectories=collect/trajectories.npz n_pairs=20 segment_length=10 --run-dir label",
     {"pairs": 20}),
    ("rlkit train-reward dataset=label/preferences trainer.max_epochs=2 'model.hidden=[16]' "
     "--run-dir reward", {"model": "reward/reward_model"}),
    ("rlkit m3hf feedback.source=scripted feedback.script=example:good phases=1 num_games=1 "
     "generation_steps=16 env.max_steps=8 marl.n_steps=8 marl.batch_size=8 marl.n_epochs=1 "
     "parser=rule eval_games=1 video=none --run-dir m3hf", {"generation": 1, "feedback": 1}),
)
SHELL_BLOCKS = ("bash", "sh", "shell", "console")


@dataclass(frozen=True)
class Command:
    """One command as a page shows it."""

    page: str  # the page's path, relative to the checkout
    line: int  # where it starts on the page (from 1)
    text: str  # the command, continuation lines joined
    program: str  # the word that runs rlkit (`rlkit`, or a path such as `.venv/bin/rlkit`)
    argv: tuple[str, ...]  # the words after it, as bash splits them


@dataclass
class Page:
    """A page's commands and what the page gives the reader beside them."""

    path: str
    commands: list[Command] = field(default_factory=list)
    configs: dict[str, str] = field(default_factory=dict)  # YAML blocks the page names as files
    python: list[tuple[int, str]] = field(default_factory=list)  # (line, text) of Python blocks


def shell_words(text: str) -> list[str]:
    """``text`` split into words by bash (quotes, ``$(...)``, comments), without running it."""
    result = subprocess.run(["bash", "-c", f"printf '%s\\0' {text}"], capture_output=True, text=True,
                            timeout=30)
    if result.returncode != 0:
        raise ValueError(f"bash cannot read {text!r}: {result.stderr.strip()}")
    return result.stdout.split("\0")[:-1]


def read_page(text: str, path: str = "page.md") -> Page:
    """The ``rlkit`` commands of ``text``'s fenced shell blocks, its Python blocks, and its YAML
    blocks that the line before them names as a file (`` `apec-smoke.yaml`: ``).

    Args:
        text: a markdown page.
        path: the page's name in what is reported.

    Returns:
        The page.
    """
    page = Page(path)
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"\s*```\s*([\w-]*)", lines[i])
        if not fence:
            i += 1
            continue
        start, language = i + 1, fence.group(1).lower()
        end = next((j for j in range(start, len(lines)) if lines[j].strip().startswith("```")), len(lines))
        block = lines[start:end]
        if language in SHELL_BLOCKS:
            page.commands.extend(_block_commands(block, start + 1, path))
        elif language == "python":
            page.python.append((start + 1, "\n".join(block)))
        elif language in ("yaml", "yml"):
            prose = next((line for line in reversed(lines[:i]) if line.strip()), "")
            named = re.findall(r"`([^`\s]+\.ya?ml)`", prose)
            if named:
                page.configs[named[-1]] = "\n".join(block) + "\n"
        i = end + 1
    return page


def _block_commands(block: list[str], first_line: int, path: str) -> Iterator[Command]:
    j = 0
    while j < len(block):
        start, logical = j, block[j]
        while logical.rstrip().endswith("\\") and j + 1 < len(block):
            j += 1
            logical = logical.rstrip()[:-1].rstrip() + " " + block[j].strip()
        j += 1
        logical = logical.strip().removeprefix("$ ")
        program, _, rest = logical.partition(" ")
        if program == "rlkit" or program.endswith("/rlkit"):
            yield Command(path, first_line + start, logical, program, tuple(shell_words(rest)))


def doc_pages(root: Path) -> list[Path]:
    """README.md and every page under docs/ but docs/results/."""
    docs = root / "docs"
    pages = sorted(p for p in docs.rglob("*.md") if p.relative_to(docs).parts[0] != "results")
    return [root / "README.md", *pages]


@dataclass
class Outcome:
    """What checking one command gave."""

    command: Command
    problem: str | None = None  # None: it passed
    skipped: str | None = None  # why it was not run
    notes: list[str] = field(default_factory=list)  # stand-ins used
    points: int = 0  # a sweep's grid points checked


def run_rlkit(argv: list[str]) -> tuple[int, str]:
    """``rlkit ARGV`` in this process: its exit status and what it printed (stdout, stderr)."""
    from rlkit.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            status = main(argv)
        except SystemExit as end:  # argparse's usage errors, --help
            status = end.code if isinstance(end.code, int) else 1
        except Exception:  # a traceback is a failure of its own: rlkit names bad input instead
            traceback.print_exc()
            status = 1
    return status, out.getvalue()


def check_page(page: Page, cwd: Path) -> list[Outcome]:
    """Every command of ``page`` with ``--print-config``, in order, in ``cwd`` (made here).

    Args:
        page: the page.
        cwd: an empty directory of the page's own (the reader's working directory).

    Returns:
        An outcome per command.
    """
    cwd.mkdir(parents=True, exist_ok=True)
    for name, text in page.configs.items():
        (cwd / name).parent.mkdir(parents=True, exist_ok=True)
        (cwd / name).write_text(text)
    outcomes, run_dirs = [], []
    with contextlib.chdir(cwd):
        for command in page.commands:
            outcome = Outcome(command)
            outcomes.append(outcome)
            skip = next((why for where, start, why in EXPECTED_SKIPS
                         if where == page.path and command.text.startswith(start)), None)
            if skip is not None:
                outcome.skipped = skip
                continue
            if command.program != "rlkit":
                outcome.problem = (f"runs `{command.program}`: a reader who installed rlkit runs "
                                   "`rlkit` (getting-started says how a venv's bin goes on PATH)")
                continue
            argv = list(command.argv)
            outcome.notes += _provide_inputs(argv, page, command, run_dirs, cwd)
            outcome.problem, outcome.points = _print_config(argv)
            if "--run-dir" in argv[:-1]:
                run_dirs.append(argv[argv.index("--run-dir") + 1])
    shown = {(o.command.page, o.skipped) for o in outcomes if o.skipped}
    for where, start, why in EXPECTED_SKIPS:
        if where == page.path and (where, why) not in shown:
            stale = Command(where, 0, start, "rlkit", ())
            outcomes.append(Outcome(stale, problem="listed in EXPECTED_SKIPS but not on the page"))
    return outcomes


def _provide_inputs(argv: list[str], page: Page, command: Command, run_dirs: list[str],
                    cwd: Path) -> list[str]:
    """Put in place what the page gives the reader for ``argv`` (changed in place): the config
    file it names, and stand-ins for inputs an earlier step of the page writes."""
    notes = []
    if "--config" in argv[:-1]:
        at = argv.index("--config") + 1
        if argv[at] not in page.configs:  # the reader's own config: the defaults stand in
            stand_in = cwd / "stand-in-config" / Path(argv[at]).name
            stand_in.parent.mkdir(exist_ok=True)
            stand_in.write_text("{}\n")
            notes.append(f"--config {argv[at]}: the defaults")
            argv[at] = str(stand_in)
    earlier_python = "\n".join(text for line, text in page.python if line < command.line)
    for word in argv:
        key, _, value = word.partition("=")
        if key not in INPUT_FIELDS or not value or Path(value).exists():
            continue
        written = (any(value.startswith(run_dir.rstrip("/") + "/") for run_dir in run_dirs)
                   or str(Path(value).with_suffix("")) in earlier_python)
        if written and not Path(value).is_absolute():
            Path(value).parent.mkdir(parents=True, exist_ok=True)
            if Path(value).suffix:
                Path(value).touch()
            else:  # a directory (a saved reward model)
                Path(value).mkdir()
            notes.append(f"{key}={value}: an empty stand-in for the earlier step's output")
    return notes


def _print_config(argv: list[str]) -> tuple[str | None, int]:
    """Check ``rlkit ARGV`` without running it: (its problem or None, grid points of a sweep)."""
    if not argv or argv[0] != "sweep":
        status, output = run_rlkit([*argv, "--print-config"])
        return (None if status == 0 else _failed(status, output)), 0
    return _check_sweep(argv[1:])


def _check_sweep(argv: list[str]) -> tuple[str | None, int]:
    """A sweep checked as ``rlkit sweep`` checks it, then every grid point's trial with
    ``--print-config``."""
    from rlkit.cli import build_parser, command_schema
    from rlkit.errors import RlkitError
    from rlkit.scale.command import check_configs
    from rlkit.scale.sweep import SweepSpec, parse_grid

    status, output = 0, ""
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(out):
        try:
            args = build_parser().parse_args(["sweep", *argv])
        except SystemExit as end:
            status, output = int(end.code or 0), out.getvalue()
    if status:
        return _failed(status, output), 0
    config = ["--config", str(args.config)] if args.config else []
    try:
        spec = SweepSpec(command=args.sweep_command, grid=parse_grid(args.grid), seeds=args.seeds,
                         overrides=tuple(args.overrides), config=str(args.config) if args.config else None,
                         seed_key=args.seed_key)
        check_configs(spec, command_schema)
    except RlkitError as error:
        return f"rlkit sweep: error: {error}", 0
    for point in spec.points():
        trial = [spec.command, *spec.overrides, *(f"{k}={v}" for k, v in point.items()),
                 f"{spec.seed_key}=0", *config]
        status, output = run_rlkit([*trial, "--print-config"])
        if status != 0:
            return f"grid point {point}: {_failed(status, output)}", len(spec.points())
    return None, len(spec.points())


def _failed(status: int, output: str) -> str:
    tail = "\n".join(output.strip().splitlines()[-15:])
    return f"exit status {status}:\n{tail}"


def run_real(cwd: Path) -> list[str]:
    """``REAL`` in ``cwd``, each with ``--logger jsonl``: the problems (empty when all passed)."""
    problems = []
    cwd.mkdir(parents=True, exist_ok=True)
    with contextlib.chdir(cwd):
        for text, expected in REAL:
            argv = [*shell_words(text.removeprefix("rlkit ")), "--logger", "jsonl"]
            status, output = run_rlkit(argv)
            printed = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
            if status != 0:
                problems.append(f"{text}\n  {_failed(status, output)}")
            elif not any(expected.items() <= line.items() for line in printed):
                problems.append(f"{text}\n  printed no JSON line with {expected}:\n{output[-2000:]}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1],
                        help="the checkout whose README.md and docs/ are read (default: this one)")
    parser.add_argument("--run", action="store_true", help="also run REAL for real")
    parser.add_argument("--verbose", action="store_true", help="a line for every command")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    import rlkit

    where = Path(rlkit.__file__).resolve()
    if where.is_relative_to(root) or Path.cwd().resolve().is_relative_to(root):
        print(f"docs commands: rlkit from {where.parent}, working directory {Path.cwd()}: both must be "
              f"outside {root} (run it with the wheel's venv, from another directory)", file=sys.stderr)
        return 1
    start = time.monotonic()
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="rlkit-docs-", dir=Path.cwd()) as work:
        for i, path in enumerate(doc_pages(root)):
            page = read_page(path.read_text(), str(path.relative_to(root)))
            outcomes += check_page(page, Path(work) / f"page{i:02d}")
        real = run_real(Path(work) / "real") if args.run else []
    failed = [o for o in outcomes if o.problem]
    for outcome in outcomes if args.verbose else ():
        c, said = outcome.command, "skipped" if outcome.skipped else "FAILED" if outcome.problem else "ok"
        print(f"{said} {c.page}:{c.line}: {c.text}" + "".join(f"\n    {note}" for note in outcome.notes))
    for outcome in failed:
        c = outcome.command
        print(f"FAILED {c.page}:{c.line}: {c.text}\n  {outcome.problem}", file=sys.stderr)
    for problem in real:
        print(f"FAILED for real: {problem}", file=sys.stderr)
    passed = [o for o in outcomes if not o.skipped and not o.problem]
    print(f"docs commands: {len(outcomes)} checked with --print-config by rlkit {rlkit.__version__} from "
          f"{where.parent}: {len(passed)} passed ({sum(o.points for o in passed)} grid points of "
          f"{sum(1 for o in passed if o.points)} sweeps; {sum(len(o.notes) for o in passed)} stand-ins), "
          f"{sum(1 for o in outcomes if o.skipped)} skipped as listed, {len(failed)} failed"
          + (f"; {len(REAL)} run for real, {len(real)} failed" if args.run else "")
          + f" ({time.monotonic() - start:.0f} s)")
    return 1 if failed or real else 0


if __name__ == "__main__":
    sys.exit(main())

"""The docs' commands check (.ci/docs_commands.py, run by .ci/wheel-check against the built wheel):
it finds every ``rlkit`` command the pages show, passes good ones, and fails on a broken one, a
missing input, a checkout path or a stale skip; and the ordinal tutorial's pref-rl numbers are
what its command gives."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
SCRIPT = ROOT / ".ci" / "docs_commands.py"

spec = importlib.util.spec_from_file_location("docs_commands", SCRIPT)
assert spec is not None and spec.loader is not None
docs_commands = importlib.util.module_from_spec(spec)
sys.modules["docs_commands"] = docs_commands  # dataclasses look their module up
spec.loader.exec_module(docs_commands)

SAMPLE = """# A page

Run `rlkit collect` inline: not a command of a block.

```bash
rlkit collect env.id=Pendulum-v1 'policies=[{kind: random, n_steps: 400}]' --run-dir runs/c  # a comment
echo not rlkit
rlkit label trajectories=runs/c/trajectories.npz \\
    n_pairs=20 --run-dir runs/l
$ rlkit serve token=$(echo abc) --run-dir runs/study
.venv/bin/rlkit demo
```

```
rlkit in a diagram block
```

As a YAML file `my-smoke.yaml`:

```yaml
seed: 3
```

```python
store.save("runs/corridor/trajectories")
```
"""


def test_read_page_finds_the_commands_of_shell_blocks_as_bash_splits_them() -> None:
    page = docs_commands.read_page(SAMPLE, "sample.md")
    found = [(c.line, c.program, c.argv) for c in page.commands]
    assert found == [
        (6, "rlkit", ("collect", "env.id=Pendulum-v1", "policies=[{kind: random, n_steps: 400}]",
                      "--run-dir", "runs/c")),
        (8, "rlkit", ("label", "trajectories=runs/c/trajectories.npz", "n_pairs=20", "--run-dir", "runs/l")),
        (10, "rlkit", ("serve", "token=abc", "--run-dir", "runs/study")),
        (11, ".venv/bin/rlkit", ("demo",)),
    ]
    joined = "rlkit label trajectories=runs/c/trajectories.npz n_pairs=20 --run-dir runs/l"
    assert page.commands[1].text == joined
    assert page.configs == {"my-smoke.yaml": "seed: 3\n"}
    assert page.python == [(25, 'store.save("runs/corridor/trajectories")')]


def test_doc_pages_are_the_readme_and_docs_but_the_results_pages(tmp_path: Path) -> None:
    for name in ("README.md", "docs/index.md", "docs/tutorials/a.md", "docs/results/demo.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("# page\n")
    pages = [str(p.relative_to(tmp_path)) for p in docs_commands.doc_pages(tmp_path)]
    assert pages == ["README.md", "docs/index.md", "docs/tutorials/a.md"]


def write_docs(root: Path, pages: dict[str, str]) -> None:
    root.mkdir(exist_ok=True)
    (root / "README.md").write_text("# rlkit\n")
    for name, text in pages.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def run_check(root: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    cwd.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), "--verbose"], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env=os.environ | {"WANDB_MODE": "offline"})


def block(*lines: str) -> str:
    return "```bash\n" + "\n".join(lines) + "\n```\n"


def test_the_check_passes_good_commands_and_fails_each_broken_one(tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    good = block("rlkit collect env.id=Pendulum-v1 --run-dir runs/c",
                 "rlkit label trajectories=runs/c/trajectories.npz n_pairs=10 --run-dir runs/l",
                 "rlkit sweep train-reward dataset=runs/l/preferences --grid trainer.lr=1e-3,3e-4 --seeds 2",
                 "rlkit m3hf feedback.source=scripted feedback.script=example:good",
                 "rlkit apec --config my_own.yaml")
    write_docs(root, {
        "docs/good.md": good,
        "docs/unknown-field.md": block("rlkit collect env.id=Pendulum-v1 no_such_field=1"),
        "docs/typo-input.md": block("rlkit collect env.id=Pendulum-v1 --run-dir runs/c",
                                    "rlkit label trajectories=runs/cc/trajectories.npz"),
        "docs/sweep.md": block("rlkit sweep collect --grid no_such_key=1,2"),
        "docs/checkout-path.md": block(".venv/bin/rlkit collect"),
        "docs/scale.md": "No commands here, so the line EXPECTED_SKIPS lists is stale.\n",
        "docs/results/generated.md": block("rlkit collect not_checked=1"),
    })
    result = run_check(root, tmp_path / "elsewhere")
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.findall(r"^ok (\S+):", result.stdout, re.M) == [
        "docs/good.md:2", "docs/good.md:3", "docs/good.md:4", "docs/good.md:5", "docs/good.md:6",
        "docs/typo-input.md:2"]
    failed = re.findall(r"^FAILED (\S+): (.*)$", result.stderr, re.M)
    assert [where for where, _ in failed] == ["docs/checkout-path.md:2", "docs/scale.md:0",
                                               "docs/sweep.md:2", "docs/typo-input.md:3",
                                               "docs/unknown-field.md:2"]
    unknown = "rlkit collect: error: CollectConfig.no_such_field is not a field of CollectConfig"
    assert unknown in result.stderr
    assert "trajectories=runs/cc/trajectories.npz: no such file" in result.stderr
    assert "no_such_key" in result.stderr
    assert "a reader who installed rlkit runs `rlkit`" in result.stderr
    assert "listed in EXPECTED_SKIPS but not on the page" in result.stderr
    assert "trajectories=runs/c/trajectories.npz: an empty stand-in" in result.stdout
    assert "--config my_own.yaml: the defaults" in result.stdout
    assert "11 checked with --print-config" in result.stdout
    summary = ": 6 passed (2 grid points of 1 sweeps; 2 stand-ins), 0 skipped as listed, 5 failed"
    assert summary in result.stdout


def test_the_check_refuses_to_run_from_the_checkout(tmp_path: Path) -> None:
    write_docs(tmp_path, {"docs/index.md": block("rlkit collect")})
    result = run_check(tmp_path, tmp_path / "inside")
    assert result.returncode == 1
    assert "must be outside" in result.stderr


def test_the_ordinal_tutorial_states_the_labels_and_rounds_its_pref_rl_command_gives() -> None:
    from rlkit.cli import build_parser, command_schema
    from rlkit.config import load_config
    from rlkit.factories.budget import plan_prefrl

    text = (ROOT / "docs" / "tutorials" / "ordinal-feedback.md").read_text()
    command = next(c for c in docs_commands.read_page(text).commands if c.argv[0] == "pref-rl")
    args = build_parser().parse_args(list(command.argv))
    config = load_config(command_schema("pref-rl"), None, args.overrides)
    plan = plan_prefrl(config)
    assert config.query.max_pairs is None  # no cap: every round asks its pairs
    labels = config.query.initial_pairs + plan.rounds_after_first * config.query.pairs_per_round
    steps = [plan.random_steps + k * config.query.every_steps for k in range(plan.rounds_after_first + 1)]
    said = re.search(r"\(PPO; (\d+) labels in (\w+) rounds, at steps ([\d, and]+)\)", text.replace("\n", " "))
    assert said, "the sentence after the pref-rl command no longer says its labels, rounds and steps"
    words = ["one", "two", "three", "four", "five", "six"]
    assert (int(said[1]), said[2]) == (labels, words[len(steps) - 1])
    assert [int(n) for n in re.findall(r"\d+", said[3])] == steps

"""Start-up time: the wall time of ``rlkit --help``, ``rlkit demo --help``, ``import rlkit`` and
``import rlkit.feedback.scale``, each a fresh process, median over rounds.

Goal: ``rlkit --help`` and ``import rlkit.feedback.scale`` under 1 s. With ``--before COMMIT``
(default 8cd9b46, the last commit before lazy imports, when the repository has it) the same
commands also run on that commit's ``rlkit/`` and ``envs/`` (``git archive`` into a temp folder,
first on ``PYTHONPATH``); old and new take turns within each round, so load on the machine hits both
alike. Every command runs from a temp folder, outside the checkout. Prints one JSON line.

    .venv/bin/python benchmarks/startup.py [--rounds 5] [--before 8cd9b46 | --before none]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_S = 1.0
COMMANDS = {
    "help": ["-m", "rlkit.cli", "--help"],
    "demo_help": ["-m", "rlkit.cli", "demo", "--help"],
    "import_rlkit": ["-c", "import rlkit"],
    "import_scale": ["-c", "import rlkit.feedback.scale"],
}


def timed(argv: list[str], cwd: Path, pythonpath: Path | None) -> float:
    env = dict(os.environ, WANDB_MODE="offline")
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, timeout=120)
    return time.perf_counter() - start


def checkout(commit: str, into: Path) -> bool:
    """``rlkit/`` and ``envs/`` of ``commit`` under ``into`` (read from git; the repo is untouched)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "rlkit", "envs"],
                             capture_output=True, timeout=60)
    if archive.returncode != 0:
        return False
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", default="8cd9b46", help="a commit to compare with, or 'none'")
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    started = time.perf_counter()
    rlkit = Path(sys.executable).with_name("rlkit")  # the installed console script
    with tempfile.TemporaryDirectory() as tmp:
        work, old = Path(tmp) / "work", Path(tmp) / "old"
        work.mkdir()
        has_before = args.before != "none" and checkout(args.before, old)
        sides = {"now": ROOT} | ({"before": old} if has_before else {})
        times: dict[str, dict[str, list[float]]] = {side: {c: [] for c in COMMANDS} for side in sides}
        console: list[float] = []
        for _ in range(args.rounds):
            for name, command in COMMANDS.items():
                for side, path in sides.items():  # old and new take turns
                    times[side][name].append(timed([sys.executable, *command], work, path))
            if rlkit.exists():
                console.append(timed([str(rlkit), "--help"], work, None))
    medians = {side: {c: round(statistics.median(v), 3) for c, v in cmds.items()}
               for side, cmds in times.items()}
    now = medians["now"]
    result = {
        "benchmark": "startup",
        "rounds": args.rounds,
        "median_s": now,
        "console_script_help_s": round(statistics.median(console), 3) if console else None,
        "before": {"commit": args.before, "median_s": medians["before"]} if has_before else None,
        "speedup": ({c: round(medians["before"][c] / now[c], 1) for c in COMMANDS}
                    if has_before else None),
        "goal_s": GOAL_S,
        "ok": now["help"] < GOAL_S and now["import_scale"] < GOAL_S
        and (not console or statistics.median(console) < GOAL_S),
        "seconds": round(time.perf_counter() - started, 1),
        "load_average_1m": {"start": round(load_start, 2), "end": round(os.getloadavg()[0], 2)},
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()

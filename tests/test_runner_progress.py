"""The runners' progress bars: M3HF generations and env steps (resumed runs start where they
are), and plain lines when a person types feedback at the terminal."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from rlkit.logging import MultiLogger, make_logger, progress_of
from rlkit.runners.m3hf import follow_progress, run_m3hf
from tests.tiny_runs import APEC_TINY, tiny_config


def progress_logger(run_dir: Path, out: io.StringIO, terminal: bool = False) -> MultiLogger:
    console = Console(file=out, width=200, force_terminal=terminal)
    return make_logger(run_dir, backends=("jsonl",), progress=True, console=console)


def test_m3hf_bars_follow_generations_and_env_steps_and_a_resumed_run_starts_where_it_is(tmp_path):
    out = io.StringIO()
    logger = progress_logger(tmp_path, out)
    state = run_m3hf(tiny_config(video="none", phases=1), tmp_path, logger)
    logger.close()
    steps = state["history"][-1]["env_steps"]
    lines = out.getvalue().splitlines()
    assert sorted(line.split("  done in")[0] for line in lines if "done in" in line) == [
        "m3hf env steps  128/128  100%", "m3hf generations  2/2  100%"]
    assert steps == 128

    out = io.StringIO()  # one phase more: the run resumes at generation 2, step 128
    logger = progress_logger(tmp_path, out)
    run_m3hf(tiny_config(video="none", phases=2), tmp_path, logger)
    logger.close()
    lines = out.getvalue().splitlines()
    generations = [line for line in lines if line.startswith("m3hf generations")]
    env_steps = [line for line in lines if line.startswith("m3hf env steps")]
    assert len(generations) == 1 and generations[0].startswith("m3hf generations  3/3  100%  done in")
    assert int(env_steps[0].split()[3].split("/")[0]) > 128  # the first line is past the resume point
    assert env_steps[-1].startswith("m3hf env steps  192/192  100%  done in")


def test_a_person_typing_feedback_at_the_terminal_gets_plain_lines(tmp_path, monkeypatch):
    monkeypatch.delenv("CI", raising=False)  # live bars are for a terminal outside CI
    for source, live in (("terminal", False), ("simulated", True)):
        logger = progress_logger(tmp_path / source, io.StringIO(), terminal=True)
        progress = progress_of(logger)
        assert progress is not None and progress.display.live
        follow_progress(tiny_config(feedback={"source": source}), tmp_path / source, logger)
        assert progress.display.live is live
        logger.close()
    # a run directory with a state to resume: the bars start at its generations and steps
    resumed = tmp_path / "resumed"
    resumed.mkdir()
    (resumed / "state.json").write_text("{}")
    rows = [{"generation": 0, "env_steps": 64}, {"generation": 1, "env_steps": 128}]
    (resumed / "generations.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    logger = progress_logger(resumed, io.StringIO())
    follow_progress(tiny_config(), resumed, logger)
    progress = progress_of(logger)
    assert progress is not None
    assert [(task.completed, task.total) for task in progress.following] == [(2, 3), (128, 192)]
    logger.close()


def test_apec_shows_its_stages_and_each_ail_runs_rounds(tmp_path):
    from rlkit.apec.config import ApecConfig
    from rlkit.config import load_config
    from rlkit.runners.apec import run_apec

    config = load_config(ApecConfig, None,
                         [*APEC_TINY, "methods=[raw_ail, gap_only]", "policy.methods=[gap_only]"])
    out = io.StringIO()
    logger = progress_logger(tmp_path, out)
    run_apec(config, tmp_path, logger)
    logger.close()
    ended = sorted(line.split("  done in")[0] for line in out.getvalue().splitlines() if "done in" in line)
    assert ended == ["apec ail rounds  4/4  100%", "apec heldout_ail rounds  4/4  100%",
                     "apec policy gap_only env steps  256/256  100%",
                     "apec stages  7/7  100%"]  # demos, ail, rollouts, 2 rewards, held-out, 1 policy

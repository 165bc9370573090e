"""The progress display: plain lines with an ETA off a terminal, live rich bars on one, and the
``ProgressLogger`` that moves them from the metrics trainers already log."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from rlkit.errors import ConfigError
from rlkit.logging import (
    ConsoleLogger,
    MultiLogger,
    ProgressDisplay,
    ProgressLogger,
    Track,
    make_logger,
    progress_of,
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def plain(clock: Clock, every_s: float = 30.0) -> tuple[ProgressDisplay, io.StringIO]:
    out = io.StringIO()
    return ProgressDisplay(Console(file=out, width=200), every_s=every_s, clock=clock), out


def test_plain_lines_carry_position_elapsed_and_eta_and_are_throttled(monkeypatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    clock = Clock()
    display, out = plain(clock)
    assert not display.live  # a StringIO is no terminal
    task = display.add("pref-rl env steps", total=1000)
    clock.now = 10.0
    task.update(200)  # 20 steps/s -> 40 s left
    clock.now = 20.0
    task.update(400)  # within 30 s of the last line: no line
    clock.now = 45.0
    task.update(500)  # 500 in 45 s -> 45 s left
    task.update(450)  # never back
    clock.now = 90.0
    task.update(1000)
    task.update(1000)  # finished once
    assert out.getvalue().splitlines() == [
        "pref-rl env steps  200/1000  20%  elapsed 0:00:10  eta 0:00:40",
        "pref-rl env steps  500/1000  50%  elapsed 0:00:45  eta 0:00:45",
        "pref-rl env steps  1000/1000  100%  done in 0:01:30",
    ]


def test_eta_counts_only_progress_made_since_the_task_began() -> None:
    """A resumed run starts at its resume point; the steps done before are not speed."""
    clock = Clock()
    display, out = plain(clock)
    task = display.add("m3hf env steps", total=100, completed=50)
    clock.now = 10.0
    task.update(60)  # 1 step/s since the start -> 40 s
    assert out.getvalue().splitlines() == ["m3hf env steps  60/100  60%  elapsed 0:00:10  eta 0:00:40"]
    task.finish()
    assert out.getvalue().splitlines()[-1] == "m3hf env steps  60/100  60%  stopped after 0:00:10"
    with pytest.raises(ConfigError, match="total must be > 0"):
        display.add("empty", total=0)


def test_a_terminal_gets_live_bars_with_an_eta_and_no_plain_lines(monkeypatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    out = io.StringIO()
    display = ProgressDisplay(Console(file=out, force_terminal=True, width=120))
    assert display.live
    progress = ProgressLogger(display)
    progress.follow(Track("pref-rl env steps", total=4096))
    for step in (0, 1024, 4096):
        progress.log({"rollout/ep_rew_mean": -3.0}, step=step)
    progress.close()
    drawn = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert "pref-rl env steps" in drawn and "4096/4096" in drawn and "eta" in drawn
    assert "done in" not in drawn  # the bar shows it; no log line besides

    monkeypatch.setenv("CI", "true")  # a CI log is no place for redrawn bars
    assert not ProgressDisplay(Console(file=io.StringIO(), force_terminal=True)).live


def test_tracks_follow_the_step_or_a_metric_of_the_calls_they_name() -> None:
    clock = Clock()
    display, out = plain(clock, every_s=0.0)
    progress = ProgressLogger(display)
    steps = progress.follow(Track("ail env steps", total=300, prefixes=("ail/",)))
    generations = progress.follow(Track("m3hf generations", total=3, prefixes=("m3hf/",),
                                        metric="m3hf/generation", offset=1))
    progress.log({"heldout_ail/loss": 1.0}, step=200)  # neither track names it
    assert steps.completed == 0 and generations.completed == 0
    progress.log({"ail/disc_loss": 0.5}, step=100)
    progress.log({"m3hf/generation": 0.0, "m3hf/env_steps": 10.0}, step=10)
    assert steps.completed == 100 and generations.completed == 1
    progress.log({"m3hf/env_steps": 10.0}, step=20)  # the metric is absent: it stays
    assert generations.completed == 1 and progress.following == [steps, generations]
    progress.log({"ail/disc_loss": 0.5}, step=300)
    assert steps.finished and progress.following == [generations]  # done: no longer followed
    progress.log_config({"seed": 1})  # config and media move nothing
    progress.close()  # what did not finish is reported as stopped
    assert out.getvalue().splitlines()[-2:] == [
        "ail env steps  300/300  100%  done in 0:00:00",
        "m3hf generations  1/3  33%  stopped after 0:00:00",
    ]


def test_make_logger_adds_progress_on_the_console_backends_screen(tmp_path: Path) -> None:
    out = io.StringIO()
    console = Console(file=out, width=200)
    logger = make_logger(tmp_path, backends=("jsonl", "console"), progress=True, console=console)
    progress = progress_of(MultiLogger([logger], tmp_path))  # found inside nested fan-outs too
    assert progress is not None and progress.display.console is console
    (console_logger,) = [b for b in logger.loggers if isinstance(b, ConsoleLogger)]
    assert console_logger.console is console
    progress.follow(Track("collect steps", total=10))
    logger.log({"collect/steps": 10}, step=10)
    logger.close()
    assert out.getvalue().splitlines() == ["step       10  collect/steps=10",
                                           "collect steps  10/10  100%  done in 0:00:00"]
    assert progress_of(make_logger(tmp_path / "quiet", backends=("jsonl",))) is None

"""``rlkit m3hf`` assembled: the phase loop with its feedback source, the web page's included, and
progress bars for its generations and env steps."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from rlkit.errors import InvalidDataError
from rlkit.human.dashboard import with_dashboard
from rlkit.human.m3hf_source import ConfirmedSpecsParser, WebFeedbackSource
from rlkit.human.store import LabelStore
from rlkit.logging import Logger, Track, progress_of
from rlkit.m3hf.loop import M3HFRun, make_feedback_parser
from rlkit.m3hf.run_config import M3HFConfig
from rlkit.m3hf.sources import FeedbackSource
from rlkit.m3hf.specs import FeedbackParser
from rlkit.persistence import read_json_lines

log = logging.getLogger(__name__)


def run_m3hf(
    config: M3HFConfig,
    run_dir: str | Path,
    logger: Logger | None = None,
    source: FeedbackSource | None = None,
    parser: FeedbackParser | None = None,
) -> dict[str, Any]:
    """Start or resume the run in ``run_dir``; see ``M3HFRun``. ``source``/``parser`` override the
    configured ones; ``feedback.source=web`` gets the page's source on the run's label store (one
    source for the whole run: it remembers confirmations)."""
    follow_progress(config, Path(run_dir), logger)
    parser = parser or make_feedback_parser(config)
    if source is None and config.feedback.source == "web":
        source, parser, logger = make_web_source(config, Path(run_dir), parser, logger)
    return M3HFRun(config, run_dir, logger, source, parser).run()


def follow_progress(config: M3HFConfig, run_dir: Path, logger: Logger | None) -> None:
    """Bars for the generations (``m3hf/generation`` of each generation's row) and the env steps,
    starting where a resumed run is; plain lines when a person types feedback at this terminal."""
    progress = progress_of(logger)
    if progress is None:
        return
    if config.feedback.source == "terminal":  # bars redrawn over the feedback prompt garble it
        progress.display.live = False
    generations, steps = 0, 0
    history = run_dir / "generations.jsonl"
    if (run_dir / "state.json").is_file() and history.is_file():  # a run that resumes
        rows = read_json_lines(history)
        generations, steps = len(rows), int(rows[-1]["env_steps"]) if rows else 0
    total = config.phases + 1
    progress.follow(Track("m3hf generations", total, prefixes=("m3hf/",), metric="m3hf/generation",
                          offset=1), completed=generations)
    progress.follow(Track("m3hf env steps", total * config.generation_steps), completed=steps)


def make_web_source(
    config: M3HFConfig, run_dir: Path, fallback: FeedbackParser, logger: Logger | None = None
) -> tuple[FeedbackSource, FeedbackParser, Logger]:
    """The web page's source on the run's label store (the database ``rlkit serve --run-dir``
    opens, media in its ``media/``), a parser that hands the loop exactly the specs people
    confirmed there (``fallback`` parses any other text), and ``logger`` with that store's
    dashboard added, so people see the training curve."""
    store = LabelStore(run_dir)
    earlier = store.latest_phase()
    if earlier is not None and not (run_dir / "state.json").is_file():
        raise InvalidDataError(
            f"{run_dir}: its label store holds M3HF phases of an earlier run (up to phase "
            f"{earlier['phase']}) but no state.json to resume that run; a new run would take the old "
            "feedback as its own: use a new run directory"
        )
    settings = config.feedback
    source = WebFeedbackSource(store, run_dir / "media", min_items=settings.min_items,
                               timeout_s=settings.timeout_s, poll_s=settings.poll_s)
    log.info("each phase waits for feedback on the M3HF page of `rlkit serve --run-dir %s`", run_dir)
    return source, ConfirmedSpecsParser(source, fallback), with_dashboard(logger, store, run_dir / "media")

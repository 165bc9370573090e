"""M3HF feedback from the web page: a ``FeedbackSource`` backed by the label store.

Each phase the source publishes the rollout video and the scene to the store, then waits for
people to type feedback on the M3HF page, check the parser's preview, correct it, and confirm;
then it closes the phase, taking all its feedback, so nothing confirmed later is silently unused.
What they confirmed is kept beside the text: ``ConfirmedSpecsParser`` hands those exact specs to
the loop instead of parsing the text again, so a person's correction is what the pools receive.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlkit.human.store import LabelStore
from rlkit.m3hf.scene import Scene
from rlkit.m3hf.sources import Feedback, FeedbackRequest
from rlkit.m3hf.specs import FeedbackParser, RewardSpec, validate_specs


def scene_to_json(scene: Scene) -> dict[str, Any]:
    return {f.name: _plain(getattr(scene, f.name)) for f in dataclasses.fields(scene) if f.init}


def scene_from_json(data: Mapping[str, Any]) -> Scene:
    fields: dict[str, Any] = {key: tuple(value) if isinstance(value, list) else value
                              for key, value in data.items()}
    return Scene(**fields)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    return list(value) if isinstance(value, tuple) else value


class WebFeedbackSource:
    """Waits for confirmed feedback on the web page (at least ``min_items``, at most ``timeout_s``)."""

    def __init__(
        self, store: LabelStore, media_dir: str | Path, *, min_items: int = 1, timeout_s: float = 3600.0,
        poll_s: float = 0.5,
    ) -> None:
        self.store = store
        self.media_dir = Path(media_dir)
        self.min_items, self.timeout_s, self.poll_s = min_items, timeout_s, poll_s
        self.confirmed: dict[str, list[dict[str, Any]]] = {}

    def publish(self, request: FeedbackRequest) -> None:
        """Put the phase's video in the served media folder and open the phase on the page."""
        video = ""
        if request.video_path is not None:
            self.media_dir.mkdir(parents=True, exist_ok=True)
            video = f"m3hf_phase_{request.generation:03d}{request.video_path.suffix}"
            shutil.copyfile(request.video_path, self.media_dir / video)
        self.store.add_phase(request.generation, video=video, context={
            "scene": scene_to_json(request.scene), "original_return": request.original_return,
        })

    def feedback(self, request: FeedbackRequest) -> list[Feedback]:
        self.publish(request)
        deadline = time.monotonic() + self.timeout_s
        while True:  # a resumed phase finds what people confirmed before the crash at once
            enough = len(self.store.phase_feedback(request.generation)) >= self.min_items
            if enough or time.monotonic() >= deadline:
                break
            time.sleep(self.poll_s)
        # Closing takes whatever came meanwhile too; the page refuses anything later with a reason.
        taken = self.store.take_phase_feedback(request.generation)
        for item in taken:
            self.confirmed[item["text"]] = item["specs"]
        return [Feedback(item["text"]) for item in taken]


class ConfirmedSpecsParser:
    """The specs a person confirmed for a text, or ``fallback``'s parse for any other text."""

    def __init__(self, source: WebFeedbackSource, fallback: FeedbackParser) -> None:
        self.source, self.fallback = source, fallback

    def parse(self, text: str, scene: Scene) -> list[RewardSpec]:
        if text in self.source.confirmed:
            return validate_specs(self.source.confirmed[text], scene)
        return self.fallback.parse(text, scene)

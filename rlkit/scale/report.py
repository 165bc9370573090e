"""A ``Logger`` that passes a run's numbers to Ray Tune while it runs inside a Tune trial.

Add it to a run's logger (``MultiLogger([make_logger(...), TuneLogger()])``) when the run is
called in-process from a Tune trial; outside a trial it does nothing. (``rlkit sweep`` runs each
command in its own process and forwards the lines of its ``metrics.jsonl`` instead, so the
commands need no change.)
"""

from __future__ import annotations

from typing import Any

from rlkit.logging.base import scalar_metrics


class TuneLogger:
    """``log(metrics, step)`` -> ``ray.tune.report({**latest, "step": step})`` in a Tune trial.

    Every report carries the latest value of every metric seen so far, so a scheduler (ASHA)
    finds its metric in each one even when the run logs different names at different steps.
    """

    def __init__(self) -> None:
        from rlkit.scale.ray_backend import in_tune_trial

        self.active = in_tune_trial()
        self.latest: dict[str, float] = {}

    def log(self, metrics: dict[str, float], step: int) -> None:
        if not self.active:
            return
        from ray import tune

        self.latest.update(scalar_metrics(metrics))
        tune.report({**self.latest, "step": int(step)})

    def log_config(self, config: dict[str, Any]) -> None:
        return None

    def log_image(self, name: str, path: Any, step: int) -> None:
        return None

    def log_video(self, name: str, path_or_frames: Any, step: int, fps: int = 30) -> None:
        return None

    def close(self) -> None:
        return None

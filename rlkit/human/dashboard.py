"""What a study lead watches: labels per annotator, the label distribution, inter-annotator
agreement on shared pairs, and the training numbers the trainer logged to the store."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from rlkit.feedback.scale import OrdinalScale
from rlkit.human.store import LabelRecord, LabelStore
from rlkit.logging.base import Logger, MultiLogger, PathLike, scalar_metrics

DASHBOARD_PREFIXES = ("reward/", "held_out/", "eval/", "rollout/ep_rew_mean", "m3hf/",
                      "prefrl/val_accuracy", "prefrl/fresh_accuracy", "agent/true_return")


@dataclass(frozen=True)
class Agreement:
    """Two annotators on the pairs both labelled: same level, and same side (A/tie/B)."""

    first: str
    second: str
    shared: int
    exact: float
    same_side: float


@dataclass(frozen=True)
class DashboardStats:
    annotators: dict[str, dict[str, int]]  # annotator -> {"labels": n, "skipped": n}
    distribution: dict[str, list[int]]  # annotator -> count per scale level (scale order)
    agreement: list[Agreement]
    alpha: float | None  # Krippendorff's alpha over every pair labelled at least twice
    series: dict[str, list[tuple[int, float]]]
    scale: OrdinalScale


def agreement(records: list[LabelRecord]) -> list[Agreement]:
    """Pairwise agreement over shared, non-skipped pairs (one row per pair of annotators)."""
    by_annotator: dict[str, dict[int, float]] = defaultdict(dict)
    for record in records:
        if np.isfinite(record.value):
            by_annotator[record.annotator][record.query_id] = record.value
    rows = []
    for first, second in combinations(sorted(by_annotator), 2):
        shared = sorted(set(by_annotator[first]) & set(by_annotator[second]))
        if not shared:
            continue
        a = np.array([by_annotator[first][q] for q in shared])
        b = np.array([by_annotator[second][q] for q in shared])
        rows.append(Agreement(first, second, len(shared), float(np.mean(np.isclose(a, b))),
                              float(np.mean(np.sign(a - 0.5) == np.sign(b - 0.5)))))
    return rows


def krippendorff_alpha(records: list[LabelRecord]) -> float | None:
    """Krippendorff's alpha with the interval metric on the label values (1 = perfect agreement,
    0 = chance); None when no pair has two labels or every label is the same."""
    by_pair: dict[int, list[float]] = defaultdict(list)
    for record in records:
        if np.isfinite(record.value):
            by_pair[record.query_id].append(record.value)
    units = [np.array(values) for values in by_pair.values() if len(values) >= 2]
    if not units:
        return None
    pooled = np.concatenate(units)
    n = len(pooled)
    # Observed: squared differences within each pair's labels, each pair weighted 1 / (m - 1).
    observed = sum(float(((u[:, None] - u[None, :]) ** 2).sum()) / (len(u) - 1) for u in units) / n
    expected = float(((pooled[:, None] - pooled[None, :]) ** 2).sum()) / (n * (n - 1))
    return None if expected == 0 else 1.0 - observed / expected


def dashboard_stats(store: LabelStore) -> DashboardStats:
    records = store.live_labels()
    scale = store.scale
    levels = np.asarray(scale.levels)
    annotators: dict[str, dict[str, int]] = {}
    distribution: dict[str, list[int]] = {}
    for name in sorted({r.annotator for r in records}):
        values = np.array([r.value for r in records if r.annotator == name])
        given = values[np.isfinite(values)]
        annotators[name] = {"labels": int(len(given)), "skipped": int(len(values) - len(given))}
        nearest = np.abs(given[:, None] - levels[None, :]).argmin(axis=1)
        distribution[name] = np.bincount(nearest, minlength=len(levels)).tolist()
    return DashboardStats(annotators, distribution, agreement(records), krippendorff_alpha(records),
                          store.metric_series(), scale)


def polyline(points: list[tuple[int, float]], width: int = 320, height: int = 120) -> str:
    """SVG polyline coordinates for a series, scaled into the box (drawn by the page, no JS)."""
    if not points:
        return ""
    steps = np.array([p[0] for p in points], dtype=float)
    values = np.array([p[1] for p in points], dtype=float)
    x = (steps - steps.min()) / max(np.ptp(steps), 1e-12) * (width - 10) + 5
    y = height - 5 - (values - values.min()) / max(np.ptp(values), 1e-12) * (height - 10)
    return " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(x, y, strict=True))


class DashboardLogger:
    """A ``Logger`` that puts a trainer's numbers on the dashboard (use it inside a ``MultiLogger``).

    Only metrics under ``prefixes`` are kept: the reward model's accuracy and the training curve,
    not every loss of every minibatch. Configs, images and videos go to the other backends.
    """

    def __init__(self, store: LabelStore, prefixes: tuple[str, ...] = DASHBOARD_PREFIXES) -> None:
        self.store, self.prefixes = store, prefixes

    def log(self, metrics: dict[str, float], step: int) -> None:
        kept = {key: value for key, value in scalar_metrics(metrics).items()
                if key.startswith(self.prefixes) and np.isfinite(value)}  # NaN: no point to draw
        self.store.log_metrics(kept, step)

    def log_config(self, config: dict[str, Any]) -> None:
        """The dashboard shows numbers only."""

    def log_image(self, name: str, path: PathLike, step: int) -> None:
        """The dashboard shows numbers only."""

    def log_video(self, name: str, path_or_frames: PathLike | np.ndarray, step: int, fps: int = 30) -> None:
        """The dashboard shows numbers only."""

    def close(self) -> None:
        """The store outlives the trainer's logger; its owner closes it."""


def with_dashboard(logger: Logger | None, store: LabelStore, media_dir: PathLike) -> Logger:
    """``logger`` and the dashboard of ``store`` (the page ``rlkit serve`` shows) together: the
    training commands that wait for people use it, so the study lead sees the curves there."""
    dashboard = DashboardLogger(store)
    return dashboard if logger is None else MultiLogger([logger, dashboard], media_dir)

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


# Bookkeeping a trainer logs beside its numbers (the x axis already counts env steps): not curves.
COUNTERS = ("generation", "env_steps", "timesteps", "train_episodes")


@dataclass(frozen=True)
class Chart:
    """One series drawn as an SVG line with axes: the page only places what is computed here."""

    points: str  # the polyline's "x,y x,y ..."
    x_ticks: list[tuple[float, str]]  # (x, label): env steps
    y_ticks: list[tuple[float, str]]  # (y, label): the metric's values
    left: float  # the plot area inside the box, for the axis lines
    bottom: float
    right: float
    top: float


def _ticks(low: float, high: float, n: int = 3) -> np.ndarray:
    return np.linspace(low, high, n) if high > low else np.array([low])


def _short(value: float) -> str:
    """A tick label of at most ~6 characters: 0.675, -1,210, 30k, 1.5M."""
    for above, size, suffix in ((1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if abs(value) >= above:
            return f"{value / size:.3g}{suffix}"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def chart(points: list[tuple[int, float]], width: int = 320, height: int = 150) -> Chart:
    """A series scaled into a ``width`` x ``height`` box with room for tick labels: three ticks on
    each axis (first, middle and last step; lowest, middle and highest value)."""
    left, right, top, bottom = 48.0, width - 16.0, 8.0, height - 22.0
    steps = np.array([p[0] for p in points], dtype=float)
    values = np.array([p[1] for p in points], dtype=float)

    def x_of(step: np.ndarray) -> np.ndarray:
        return left + (step - steps.min()) / max(np.ptp(steps), 1e-12) * (right - left)

    def y_of(value: np.ndarray) -> np.ndarray:
        return bottom - (value - values.min()) / max(np.ptp(values), 1e-12) * (bottom - top)

    x, y = x_of(steps), y_of(values)
    x_ticks = [(float(x_of(t)), _short(t)) for t in _ticks(steps.min(), steps.max())]
    y_ticks = [(float(y_of(v)), _short(v)) for v in _ticks(values.min(), values.max())]
    return Chart(" ".join(f"{a:.1f},{b:.1f}" for a, b in zip(x, y, strict=True)), x_ticks, y_ticks,
                 left, bottom, right, top)


class DashboardLogger:
    """A ``Logger`` that puts a trainer's numbers on the dashboard (use it inside a ``MultiLogger``).

    Only metrics under ``prefixes`` are kept: the reward model's accuracy and the training curve,
    not every loss of every minibatch, nor counters (``COUNTERS``, e.g. ``m3hf/generation``).
    Configs, images and videos go to the other backends.
    """

    def __init__(self, store: LabelStore, prefixes: tuple[str, ...] = DASHBOARD_PREFIXES) -> None:
        self.store, self.prefixes = store, prefixes

    def log(self, metrics: dict[str, float], step: int) -> None:
        kept = {key: value for key, value in scalar_metrics(metrics).items()
                if key.startswith(self.prefixes) and np.isfinite(value)  # NaN: no point to draw
                and key.rpartition("/")[2] not in COUNTERS}
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

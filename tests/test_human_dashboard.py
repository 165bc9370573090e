"""The dashboard: labels per annotator, the distribution over the scale, agreement, training curves."""

import re

import pytest

from rlkit.human import LabelStore
from rlkit.human.app import create_app
from rlkit.human.dashboard import DashboardLogger, chart, dashboard_stats, krippendorff_alpha
from rlkit.human.store import LabelRecord
from rlkit.logging import Logger
from tests.fake_data import make_pairs, make_trajectories
from tests.web_client import client_for

pytestmark = pytest.mark.server


@pytest.fixture
def store(tmp_path):
    store = LabelStore(tmp_path)
    ids = [int(q) for q in store.add_queries(make_pairs(make_trajectories(), 4), redundancy=2)]
    # ann and bob share all four pairs: same level on 1, same side on 2, opposite sides on 3,
    # and bob skipped 4 (so it is not shared).
    for query_id, ann, bob in zip(ids, (1.0, 0.8, 0.0, 0.5), (1.0, 1.0, 1.0, None), strict=True):
        store.submit(query_id, "ann", ann)
        store.submit(query_id, "bob", bob)
    store.submit(ids[0], "carol", 0.2)
    return store


def test_counts_distribution_and_pairwise_agreement(store):
    stats = dashboard_stats(store)
    assert stats.annotators == {"ann": {"labels": 4, "skipped": 0}, "bob": {"labels": 3, "skipped": 1},
                                "carol": {"labels": 1, "skipped": 0}}
    assert stats.distribution["ann"] == [1, 0, 1, 1, 1]  # levels 0, .2, .5, .8, 1
    assert stats.distribution["bob"] == [0, 0, 0, 0, 3]
    rows = {(a.first, a.second): a for a in stats.agreement}
    assert (rows["ann", "bob"].shared, rows["ann", "bob"].exact) == (3, pytest.approx(1 / 3))
    assert rows["ann", "bob"].same_side == pytest.approx(2 / 3)
    assert (rows["ann", "carol"].shared, rows["ann", "carol"].same_side) == (1, 0.0)


def records(table: dict[int, list[float]]) -> list[LabelRecord]:
    return [LabelRecord(0, pair, f"a{i}", value, "web", 0.0)
            for pair, values in table.items() for i, value in enumerate(values)]


def test_krippendorff_alpha_on_known_tables():
    assert krippendorff_alpha(records({1: [1.0, 1.0], 2: [0.0, 0.0], 3: [0.5, 0.5, 0.5]})) == 1.0
    # Two pairs, each labelled (0, 1): all disagreement is within pairs. D_o = 2 * 2 / 4 = 1,
    # D_e = 8 / 12, so alpha = 1 - 1.5.
    assert krippendorff_alpha(records({1: [0.0, 1.0], 2: [1.0, 0.0]})) == pytest.approx(-0.5)
    assert krippendorff_alpha(records({1: [1.0], 2: [0.0, float("nan")]})) is None
    assert krippendorff_alpha(records({1: [1.0, 1.0]})) is None  # no variation at all


def test_the_logger_puts_training_curves_on_the_page(store):
    logger = DashboardLogger(store)
    assert isinstance(logger, Logger)
    for step, accuracy in enumerate((0.55, 0.7, 0.8)):
        metrics = {"reward/held_out_accuracy": accuracy, "train/loss": 1.0, "eval/return": -100 + step}
        logger.log(metrics, step)
    assert set(store.metric_series()) == {"reward/held_out_accuracy", "eval/return"}
    html = re.sub(r">\s+<", "><", client_for(create_app(store)).get("/dashboard").text)
    assert "reward/held_out_accuracy — step 2: 0.8" in html and "<polyline points=" in html
    assert "ann · bob</td><td>3</td><td>0.33</td><td>0.67" in html
    data = client_for(create_app(store)).get("/api/dashboard").json()
    assert data["series"]["eval/return"] == [[0, -100.0], [1, -99.0], [2, -98.0]]
    assert data["scale_names"][0] == "B much better"
    assert data["krippendorff_alpha"] == pytest.approx(krippendorff_alpha(store.live_labels()))
    assert "Krippendorff's alpha" in html


def test_a_chart_has_ticks_on_both_axes_and_counters_are_no_curves(store):
    drawn = chart([(0, 0.5), (50, 0.8), (100, 0.9)])
    assert [label for _, label in drawn.x_ticks] == ["0", "50", "100"]
    assert [label for _, label in drawn.y_ticks] == ["0.5", "0.7", "0.9"]
    assert drawn.y_ticks[0][0] == drawn.bottom and drawn.y_ticks[-1][0] == drawn.top  # lowest at the bottom
    assert drawn.points.split()[0] == f"{drawn.left:.1f},{drawn.bottom:.1f}"
    logger = DashboardLogger(store)
    for generation in range(3):
        logger.log({"m3hf/generation": generation, "m3hf/env_steps": 1000 * generation,
                    "m3hf/original_return": -4.5 + generation}, 1000 * generation)
    assert set(store.metric_series()) == {"m3hf/original_return"}
    html = re.sub(r">\s+<", "><", client_for(create_app(store)).get("/dashboard").text)
    assert "<text x=" in html and ">2,000</text>" in html and ">-2.5</text>" in html
    assert [label for _, label in chart([(0, -1210), (30_000, -420)]).x_ticks] == ["0", "15k", "30k"]
    assert [label for _, label in chart([(0, -1210), (30_000, -420)]).y_ticks] == ["-1,210", "-815", "-420"]
    assert "x: env steps · y: m3hf/original_return" in html


def test_an_m3hf_run_shows_no_table_of_pair_labels(tmp_path):
    store = LabelStore(tmp_path)  # M3HF asks for feedback texts, never for pairs
    DashboardLogger(store).log({"m3hf/original_return": -2.0}, 100)
    html = client_for(create_app(store)).get("/dashboard").text
    assert 'id="annotators"' not in html and 'id="agreement"' not in html
    assert 'id="no-pairs"' in html and "<polyline" in html

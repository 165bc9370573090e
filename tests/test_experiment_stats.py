"""The spreads every results page reports: sample sd (ddof=1), the 95% t-interval, and paired
differences over the same seeds."""

import math

import pytest

from experiments.stats import Spread, paired_difference, verdict


def test_sample_sd_and_t_interval_match_a_hand_computation() -> None:
    spread = Spread.of([1.0, 2.0, 3.0, 4.0])
    assert spread.mean == 2.5 and spread.n == 4
    assert spread.sd == pytest.approx(math.sqrt(5 / 3))  # ddof = 1
    half = 3.182446305284263 * math.sqrt(5 / 3) / 2  # t_{0.975, 3}
    assert (spread.low, spread.high) == pytest.approx((2.5 - half, 2.5 + half))
    assert spread.cell() == "2.5 [0.4, 4.6] (n=4)"


def test_one_value_has_no_interval_and_nan_is_left_out() -> None:
    single = Spread.of([7.0, float("nan")])
    assert single.n == 1 and single.mean == 7.0 and math.isnan(single.low)
    assert single.cell() == "7.0 (n=1)"
    assert Spread.of([]).n == 0


def test_a_paired_difference_pairs_by_seed_not_by_position() -> None:
    base = {0: 0.5, 1: 0.7, 2: 0.9}
    finer = {2: 1.02, 0: 0.60, 1: 0.81}  # base + 0.10, 0.11, 0.12, listed out of seed order
    difference = paired_difference(finer, base)
    assert difference.n == 3 and difference.mean == pytest.approx(0.11)
    assert difference.sd == pytest.approx(0.01)  # ddof = 1 over the per-seed differences
    half = 4.302652729911275 * 0.01 / math.sqrt(3)  # t_{0.975, 2}
    assert (difference.low, difference.high) == pytest.approx((0.11 - half, 0.11 + half))
    assert paired_difference(finer, {0: 0.5, 3: 1.0}).n == 1  # only the seeds both hold


def test_a_verdict_reads_the_interval_in_the_metrics_own_sense() -> None:
    lower = Spread.of([-0.2, -0.1, -0.15])
    assert verdict(lower) == "worse" and verdict(lower, higher_is_better=False) == "better"
    assert verdict(Spread.of([-0.1, 0.1, 0.05])) == "not resolved"
    assert verdict(Spread.of([0.3])) == "too few seeds"

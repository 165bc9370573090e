"""The spreads every results page reports: sample sd (ddof=1) and the 95% t-interval."""

import math

import pytest

from experiments.stats import Spread


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

"""RunningNorm stands on SB3's RunningMeanStd; it adds the NaN guard and an exact start."""

import json

import numpy as np
import pytest
from stable_baselines3.common.running_mean_std import RunningMeanStd

from rlkit.errors import InvalidDataError
from rlkit.reward.normalize import RunningNorm

CHUNKS = [1, 10, 400, 401]


def test_statistics_match_sb3_running_mean_std() -> None:
    values = np.random.default_rng(7).normal(-2.0, 3.0, size=1000)
    norm, sb3 = RunningNorm(), RunningMeanStd(shape=())
    for chunk in np.array_split(values, CHUNKS):
        norm.update(chunk)
        sb3.update(chunk)
    # SB3's default count prior of 1e-4 (mean 0, var 1) is all that separates the two.
    assert norm.mean == pytest.approx(float(sb3.mean), abs=1e-6)
    assert norm.var == pytest.approx(float(sb3.var), rel=1e-6)
    # Without the prior the statistics are the sample's own, to rounding.
    assert norm.count == 1000
    assert norm.mean == pytest.approx(values.mean(), rel=1e-12)
    assert norm.var == pytest.approx(values.var(), rel=1e-12)
    expected = (values - values.mean()) / np.sqrt(values.var() + norm.eps)
    np.testing.assert_allclose(norm.normalize(values), expected, rtol=1e-5, atol=1e-6)


def test_identity_before_the_first_update_and_empty_batches_change_nothing() -> None:
    norm = RunningNorm()
    values = np.array([-3.0, 0.5, 7.0])
    np.testing.assert_allclose(norm.normalize(values), values, rtol=1e-7)
    norm.update(np.array([]))
    assert norm.state_dict() == {"count": 0.0, "mean": 0.0, "var": 1.0, "eps": 1e-8}


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_rewards_are_refused_and_leave_the_statistics_alone(bad: float) -> None:
    norm = RunningNorm()
    norm.update(np.array([1.0, 3.0]))
    before = norm.state_dict()
    with pytest.raises(InvalidDataError, match="NaN or inf"):
        norm.update(np.array([2.0, bad]))
    assert norm.state_dict() == before


def test_saved_state_keeps_its_keys_and_restores_exactly() -> None:
    norm = RunningNorm(eps=1e-6)
    norm.update(np.random.default_rng(1).normal(4.0, 0.5, size=37))
    state = json.loads(json.dumps(norm.state_dict()))
    assert set(state) == {"count", "mean", "var", "eps"} and state["count"] == 37.0
    restored = RunningNorm.from_state(state)
    assert restored.state_dict() == norm.state_dict()
    more = np.linspace(-1, 9, 11)
    norm.update(more)
    restored.update(more)  # a restored normaliser goes on exactly as the original
    assert restored.state_dict() == norm.state_dict()
    with pytest.raises(InvalidDataError, match="out of range"):
        RunningNorm.from_state({**state, "var": -1.0})

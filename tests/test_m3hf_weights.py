"""The weight rule against hand-computed values over several phases; per-agent pools; save and load."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from rlkit.errors import FileFormatError
from rlkit.m3hf import RewardSpec
from rlkit.m3hf.weights import RewardPool, TeamPools, WeightRule


def spec(template: str, agents: object = "all", **params: object) -> RewardSpec:
    return RewardSpec.model_validate({"template": template, "agents": agents, "params": params})


F1 = spec("distance", [0], b="tomato")
F2 = spec("holding", [0], item="lettuce")
F3 = spec("time_penalty", "all", rate=0.2)
F4 = spec("action", [1], action="chop")


def test_the_reference_rule_over_four_phases_matches_the_hand_computation() -> None:
    """The reference's weight_decay_and_performance_adjustment: reset to uniform, decay each older
    function once by alpha^(M-1-m), +-beta on the newest, normalise."""
    rule = WeightRule(alpha=0.9, beta=0.1)
    assert rule.kind == "reference"
    pool = RewardPool(agent=0).updated([F1], generation=1, improved=None, rule=rule)
    np.testing.assert_allclose(pool.weights, [1.0])

    # M = 2: uniform 1/2; F1 decays once by 0.9; F2 (newest) +0.1 because the return improved
    pool = pool.updated([F2], generation=2, improved=True, rule=rule)
    np.testing.assert_allclose(pool.weights, np.array([0.45, 0.6]) / 1.05)

    # M = 3: uniform 1/3, whatever the stored weights; F1 x 0.81, F2 x 0.9; F3 -0.1 (no improvement)
    pool = pool.updated([F3], generation=3, improved=False, rule=rule)
    raw = np.array([0.81 / 3, 0.9 / 3, 1 / 3 - 0.1])
    np.testing.assert_allclose(pool.weights, raw / raw.sum())
    assert [e.spec for e in pool.entries] == [F1, F2, F3]

    # no new function: the stored weights decay by position again, no performance step
    previous = pool.weights
    raw = previous * 0.9 ** np.array([2, 1, 0])
    pool = pool.updated([], generation=4, improved=True, rule=rule)
    np.testing.assert_allclose(pool.weights, raw / raw.sum())


def test_the_reference_rule_resets_before_it_decays_so_decay_never_compounds() -> None:
    """Five phases of one new function each: the first keeps alpha^4 of a uniform share (before
    normalising), whatever the weights were; the compounding rule gives another answer."""
    specs = [F1, F2, F3, F4, spec("holding", [0], item="tomato")]
    reference, compounding = RewardPool(0), RewardPool(0)
    for generation, new in enumerate(specs, start=1):
        reference = reference.updated([new], generation, None, WeightRule())
        compounding = compounding.updated([new], generation, None, WeightRule(kind="compounding"))
    raw = 0.9 ** np.arange(4, -1, -1) / 5
    np.testing.assert_allclose(reference.weights, raw / raw.sum())
    assert not np.allclose(compounding.weights, reference.weights)


def test_the_compounding_rule_over_four_phases_matches_the_hand_computation() -> None:
    rule = WeightRule(alpha=0.9, beta=0.1, kind="compounding")
    pool = RewardPool(agent=0)

    pool = pool.updated([F1], generation=1, improved=None, rule=rule)
    np.testing.assert_allclose(pool.weights, [1.0])

    # F2 enters at 1/2; F1 decays by 0.9^(2-1); F1 was under test and the return improved: +0.1
    pool = pool.updated([F2], generation=2, improved=True, rule=rule)
    np.testing.assert_allclose(pool.weights, np.array([0.9 + 0.1, 0.5]) / 1.5)

    # F3 enters at 1/3; decays 0.81 and 0.9; F2 under test, no improvement: -0.1
    w1, w2 = 1.0 / 1.5, 0.5 / 1.5
    raw = np.array([w1 * 0.81, w2 * 0.9 - 0.1, 1 / 3])
    pool = pool.updated([F3], generation=3, improved=False, rule=rule)
    np.testing.assert_allclose(pool.weights, raw / raw.sum())
    assert [e.generation for e in pool.entries] == [1, 2, 3]
    assert [e.spec for e in pool.entries] == [F1, F2, F3]

    # no new feedback: everything decays by its age again, F3 (newest before phase 4) gains beta
    previous = pool.weights
    raw = previous * 0.9 ** np.array([3, 2, 1]) + np.array([0.0, 0.0, 0.1])
    pool = pool.updated([], generation=4, improved=True, rule=rule)
    np.testing.assert_allclose(pool.weights, raw / raw.sum())
    assert len(pool.entries) == 3


def test_the_performance_step_floors_at_zero_and_a_pool_of_zeros_shapes_nothing() -> None:
    rule = WeightRule(alpha=1.0, beta=0.6, kind="compounding")
    pool = RewardPool(0).updated([F1], 1, None, rule).updated([F2], 2, False, rule)
    np.testing.assert_allclose(pool.weights, [0.4 / 0.9, 0.5 / 0.9])  # F1: 1 - 0.6; F2 enters at 1/2
    pair = RewardPool(0).updated([F1, F2], 1, None, rule)  # two functions in one phase: 1, then 1/2
    np.testing.assert_allclose(pair.weights, [1.0 / 1.5, 0.5 / 1.5])
    np.testing.assert_allclose(pair.updated([], 2, False, rule).weights, [1.0, 0.0])  # both under test
    harsh = WeightRule(alpha=0.5, beta=0.6, kind="compounding")
    zeros = RewardPool(0).updated([F1, F2], 1, None, harsh).updated([], 2, False, harsh)
    np.testing.assert_allclose(zeros.weights, [0.0, 0.0])  # no division by zero: the pool is off
    revived = zeros.updated([F3], 3, None, harsh)
    np.testing.assert_allclose(revived.weights, [0.0, 0.0, 1.0])


def test_each_agent_has_its_own_pool_and_team_feedback_reaches_every_pool() -> None:
    pools = TeamPools.empty(3)
    pools = pools.update([F1, F4], improved=None)  # F1 for agent 0, F4 for agent 1
    assert [[e.spec for e in pool.entries] for pool in pools.pools] == [[F1], [F4], []]
    pools = pools.update([F3], improved=True)  # the team
    assert [[e.spec for e in pool.entries] for pool in pools.pools] == [[F1, F3], [F4, F3], [F3]]
    assert pools.generation == 2
    for pool in pools.pools:  # weights stay in step with the functions and sum to 1
        assert len(pool.weights) == len(pool.entries)
        assert pool.weights.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(pools.pools[2].weights, [1.0])
    np.testing.assert_allclose(pools.pools[0].weights, np.array([0.45, 0.6]) / 1.05)  # the reference rule


def test_pools_save_and_load_exactly(tmp_path) -> None:
    pools = TeamPools.empty(3, WeightRule(0.8, 0.2)).update([F1, F3], None).update([F4], False)
    path = tmp_path / "run" / "pools.json"
    pools.save(path)
    assert TeamPools.load(path) == pools
    assert not list(path.parent.glob(".*tmp"))  # the atomic write left no temporary file
    assert json.loads(path.read_text())["pools"][1]["entries"][0]["spec"]["template"] == "time_penalty"


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: d.update(format="other"), "format must be"),
        (lambda d: d["pools"][0]["entries"][0].update(weight=-1), r"pools\.0\.entries\.0\.weight"),
        (lambda d: d["pools"][0]["entries"][0].update(generation=9), r"pools\.0\.entries\.0\.generation"),
        (lambda d: d["pools"][0]["entries"][0]["spec"]["params"].update(b=5), "damaged pools file"),
        (lambda d: d["pools"].pop(0), "agents 0..1 in order"),
        (lambda d: d["rule"].update(alpha=2), "alpha must be in"),
        (lambda d: d["rule"].update(kind="other"), r"WeightRule\.kind is invalid: .other."),
    ],
)
def test_a_damaged_pools_file_is_refused_naming_the_field(tmp_path, damage, message: str) -> None:
    data = TeamPools.empty(3).update([F1, F3], None).to_json()
    damage(data)
    path = tmp_path / "pools.json"
    path.write_text(json.dumps(data))
    # a FileFormatError (not any ValueError) whose message starts with the file it is about
    with pytest.raises(FileFormatError, match=rf"^{re.escape(str(path))}: .*{message}"):
        TeamPools.load(path)


def test_generations_only_move_forward_and_agents_must_exist() -> None:
    pool = RewardPool(0).updated([F1], 2, None, WeightRule())
    with pytest.raises(ValueError, match="generation 2 must be later"):
        pool.updated([F2], 2, None, WeightRule())
    with pytest.raises(ValueError, match="out of range for 1 agents"):
        TeamPools.empty(1).update([F4], None)


@pytest.mark.parametrize("content", [b"\xff\xfe\x00 not text", b'{"format": ', b"[" * 5000])
def test_an_unreadable_pools_file_is_refused_by_name(tmp_path, content: bytes) -> None:
    path = tmp_path / "pools.json"
    path.write_bytes(content)
    with pytest.raises(FileFormatError, match=f"^{re.escape(str(path))}: not readable"):
        TeamPools.load(path)

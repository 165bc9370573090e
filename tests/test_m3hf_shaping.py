"""Pools as rewards: each agent's term comes from its own pool only, and the env reward is counted once."""

from __future__ import annotations

import numpy as np
import pytest

import envs.overcooked as oc
from rlkit.m3hf import RewardSpec, Scene
from rlkit.m3hf.shaping import PoolShaper, pool_reward_fns
from rlkit.m3hf.weights import RewardPool, TeamPools
from rlkit.marl.rows import OvercookedRows
from rlkit.types import TeamRewardShaper
from rlkit.wrappers import PettingZooRewardWrapper

STAY, GET_TOMATO, RIGHT = 0, 1, 10


def spec(template: str, agents: object = "all", **params: object) -> RewardSpec:
    return RewardSpec.model_validate({"template": template, "agents": agents, "params": params})


@pytest.fixture(scope="module")
def scene() -> Scene:
    return Scene.from_env(oc.parallel_env(layout="A", n_agents=3))


def two_pools() -> TeamPools:
    """Agent 0 is paid for moving right; agent 1 for standing near the tomato; agent 2 has nothing."""
    pools = TeamPools.empty(3).update([spec("action", [0], action="right", value=2.0)], improved=None)
    return pools.update([spec("proximity", [1], b="tomato", radius=2, bonus=3.0)], improved=None)


def test_each_agent_is_shaped_by_its_own_pool_only(scene: Scene) -> None:
    pools = two_pools()
    shaper = PoolShaper(pools, scene)
    assert isinstance(shaper, TeamRewardShaper)
    venv = oc.OvercookedVecEnv(2, layout="A", n_agents=3)
    venv.reset()
    state = venv.features()  # agent_1 starts 2 cells from the tomato, agent_0 4 cells
    actions = np.array([[RIGHT, RIGHT, RIGHT], [STAY, STAY, STAY]])
    terms = shaper(state, actions)
    # agent 0's pool: weight 1 (after one more phase still the only entry), 2 per "right"
    # agent 1's pool: proximity 3 (its only entry), whatever the action
    np.testing.assert_allclose(terms, [[2.0, 3.0, 0.0], [0.0, 3.0, 0.0]])

    # Changing agent 1's pool leaves agent 0's column alone (no shared closure).
    replaced = TeamPools((pools.pools[0], RewardPool(1), pools.pools[2]), pools.generation, pools.rule)
    np.testing.assert_allclose(PoolShaper(replaced, scene)(state, actions)[:, 0], terms[:, 0])
    np.testing.assert_allclose(PoolShaper(replaced, scene)(state, actions)[:, 1], [0.0, 0.0])


def test_weights_scale_the_terms(scene: Scene) -> None:
    pools = TeamPools.empty(3).update([spec("time_penalty", "all", rate=0.5)], None)
    pools = pools.update([spec("action", [2], action="right", value=1.0)], improved=True)
    weights = pools.pools[2].weights  # the reference rule: (1/2 * 0.9, 1/2 + 0.1) / 1.05
    np.testing.assert_allclose(weights, [0.45 / 1.05, 0.6 / 1.05])
    venv = oc.OvercookedVecEnv(1, layout="A", n_agents=3)
    venv.reset()
    terms = PoolShaper(pools, scene)(venv.features(), np.array([[RIGHT, RIGHT, RIGHT]]))
    np.testing.assert_allclose(terms, [[-0.5, -0.5, weights[0] * -0.5 + weights[1] * 1.0]])


def test_marl_rows_add_the_terms_to_the_env_reward_once(scene: Scene) -> None:
    venv = oc.OvercookedVecEnv(2, layout="A", n_agents=3, keep_features=True)
    rows = OvercookedRows(venv, PoolShaper(two_pools(), scene))
    rows.reset(seed=0)
    step = rows.step(np.full(6, RIGHT))
    expected_terms = PoolShaper(two_pools(), scene)(venv.last_features, np.full((2, 3), RIGHT))
    np.testing.assert_allclose(step.rewards, step.original + expected_terms.reshape(-1), rtol=1e-6)
    np.testing.assert_allclose(step.original, -0.1, rtol=1e-6)


def test_pools_shape_a_single_env_through_the_pettingzoo_wrapper(scene: Scene) -> None:
    env = oc.parallel_env(layout="A", n_agents=3)
    shaper = PoolShaper(two_pools(), scene)
    wrapped = PettingZooRewardWrapper(env, pool_reward_fns(shaper, env), mode="add")
    wrapped.reset()
    _, rewards, _, _, infos = wrapped.step({"agent_0": RIGHT, "agent_1": STAY, "agent_2": GET_TOMATO})
    state = {key: value[None] for key, value in env.features().items()}
    expected = shaper(state, np.array([[RIGHT, STAY, GET_TOMATO]]))[0]
    for i, agent in enumerate(env.possible_agents):
        assert infos[agent]["original_reward"] == pytest.approx(-0.1)
        assert rewards[agent] == pytest.approx(-0.1 + expected[i])
    assert rewards["agent_0"] == pytest.approx(-0.1 + 2.0)


def test_the_wrapper_path_pays_for_the_macro_in_effect_as_the_trainer_does(scene: Scene) -> None:
    """agent_0 starts "get tomato" (several steps away) and then sends "right" while it runs: the
    game ignores "right", so a pool paying for "get tomato" still pays, on both paths."""
    pools = TeamPools.empty(3).update([spec("action", "all", action="get tomato", value=1.0)], None)
    shaper = PoolShaper(pools, scene)
    env = oc.parallel_env(layout="A", n_agents=3)
    wrapped = PettingZooRewardWrapper(env, pool_reward_fns(shaper, env), mode="add")
    wrapped.reset()
    rows = OvercookedRows(oc.OvercookedVecEnv(1, layout="A", n_agents=3, keep_features=True), shaper)
    rows.reset(seed=0)
    for sent in ([GET_TOMATO, STAY, RIGHT], [RIGHT, RIGHT, RIGHT], [RIGHT, RIGHT, RIGHT]):
        _, rewards, _, _, infos = wrapped.step(dict(zip(env.possible_agents, sent, strict=True)))
        trainer_rewards = rows.step(np.array(sent)).rewards
        np.testing.assert_allclose([rewards[a] for a in env.possible_agents], trainer_rewards, rtol=1e-6)
    assert not infos["agent_0"]["macro_done"]  # still walking to the tomato after three steps
    assert rewards["agent_0"] == pytest.approx(-0.1 + 1.0) and rewards["agent_2"] == pytest.approx(-0.1)
    assert env.actions_in_effect() == (GET_TOMATO, RIGHT, RIGHT)


def test_bad_shapes_are_refused(scene: Scene) -> None:
    shaper = PoolShaper(two_pools(), scene)
    with pytest.raises(ValueError, match=r"actions must have shape \(G, 3\)"):
        shaper(oc.OvercookedVecEnv(1).features(), np.zeros(3, dtype=int))
    with pytest.raises(ValueError, match="pools hold 2 agents, the scene 3"):
        PoolShaper(TeamPools.empty(2), scene)


def test_pools_from_another_map_are_checked_against_this_env(scene: Scene) -> None:
    map_b = Scene.from_env(oc.parallel_env(layout="B", n_agents=3))
    pools = TeamPools.empty(3).update([spec("action", [0], action="go to counter")], None)
    PoolShaper(pools, map_b)
    with pytest.raises(ValueError, match="params.action: unknown action 'go to counter'"):
        PoolShaper(pools, scene)  # map A has no middle counter


def test_a_busy_agent_may_send_nothing_and_is_paid_for_its_running_macro(scene: Scene) -> None:
    pools = TeamPools.empty(3).update([spec("action", "all", action="get tomato", value=1.0)], None)
    env = oc.parallel_env(layout="A", n_agents=3)
    wrapped = PettingZooRewardWrapper(env, pool_reward_fns(PoolShaper(pools, scene), env), mode="add")
    wrapped.reset()
    wrapped.step({"agent_0": GET_TOMATO, "agent_1": STAY, "agent_2": STAY})
    _, rewards, _, _, infos = wrapped.step({"agent_1": STAY, "agent_2": STAY})  # agent_0 is walking
    assert not infos["agent_0"]["macro_done"]
    assert rewards == pytest.approx({"agent_0": -0.1 + 1.0, "agent_1": -0.1, "agent_2": -0.1})

"""experiments/m3hf_pools.py on a tiny budget: the scripted teams, the pools as the loop builds
them, and the flag on a pool that pays waiting more; and the paraphrase file stays unseen by the
parser's tests."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from envs.overcooked.parallel import OvercookedParallelEnv
from experiments import m3hf_parse_check, m3hf_pools
from rlkit.m3hf.scene import Scene
from rlkit.m3hf.shaping import PoolShaper
from rlkit.m3hf.specs import RewardSpec
from rlkit.m3hf.weights import TeamPools, WeightRule

ROOT = Path(__file__).parents[1]
SCENE = Scene.from_env(OvercookedParallelEnv())


def _teams(episodes: int = 2) -> dict[str, m3hf_pools.Episodes]:
    return {team: m3hf_pools.play(team, list(range(episodes))) for team in m3hf_pools.TEAMS}


def _pool(name: str, specs: list[dict]) -> m3hf_pools.Pool:
    pools = TeamPools.empty(SCENE.n_agents, WeightRule()).update(
        [RewardSpec.model_validate(s) for s in specs], None)
    return m3hf_pools.Pool(name, "test", ((1, name, "wrong"),), pools)


def test_the_delivering_team_delivers_and_the_waiting_teams_do_not() -> None:
    teams = _teams()
    deliver = teams.pop("deliver")
    assert deliver.delivered.all() and (deliver.env_returns[0] > 150).all()
    for name, team in teams.items():
        assert not team.delivered.any(), name
        assert (team.env_returns[0] < deliver.env_returns[0]).all(), name
    noiseless = m3hf_pools.play("hold_and_wait_0", [0], epsilon=0.0)
    held = noiseless.state["holding"][-1]  # each agent ends holding its item, never having delivered
    assert noiseless.lengths[0] == 200 and not noiseless.delivered[0]
    assert [SCENE.item_names[i] for i in held] == ["lettuce", "tomato", "plate_1"]


def test_a_pool_that_pays_holding_enough_is_flagged_and_a_time_penalty_is_not() -> None:
    teams = _teams()
    gamed = _pool("hold the tomato", [{"template": "holding", "agents": [1],
                                       "params": {"item": "tomato", "value": 10.0}}])
    hurry = _pool("hurry", [{"template": "time_penalty", "agents": "all"}])
    (gamed_row, hurry_row), _ = m3hf_pools.evaluate([gamed, hurry], teams, SCENE)
    assert gamed_row["flagged"] and gamed_row["flagged_discounted"]
    assert {f["agent"] for f in gamed_row["pays_waiting_more"]["return"]["1.0"]} == {1}
    assert not hurry_row["flagged"] and not any(hurry_row["pays_waiting_more"]["return"].values())


def test_a_pools_return_is_what_the_trainers_shaper_pays() -> None:
    teams = _teams(1)
    pool = _pool("mixed", [
        {"template": "holding", "agents": [1], "params": {"item": "tomato"}},
        {"template": "action", "agents": "all", "params": {"action": "stay", "value": -1.0}},
        {"template": "status", "agents": [0], "params": {"entity": "lettuce", "status": "chopped"}}])
    _, functions = m3hf_pools.evaluate([pool], teams, SCENE)
    for name, team in teams.items():
        terms = PoolShaper(pool.pools, SCENE)(team.state, team.actions)
        paid = m3hf_pools.pool_return(pool.pools, functions, name)[0]  # undiscounted, (1 episode, agents)
        np.testing.assert_allclose(paid, terms.sum(axis=0)[None], err_msg=name)


def test_the_parse_check_judges_by_agents_and_signatures() -> None:
    item = {"id": "t", "text": "x", "quality": "correct",
            "wants": [{"agents": [1], "any_of": ["holding:tomato"]},
                      {"agents": [1], "any_of": ["distance:knife_1"], "optional": True}]}
    spec = {"template": "holding", "agents": [1], "params": {"item": "tomato"}}
    judge = m3hf_parse_check.judge
    parse = [RewardSpec.model_validate(spec)]
    assert judge(item, parse, 3) == "correct"
    assert judge(item, [RewardSpec.model_validate(spec | {"agents": [0]})], 3) == "wrong"
    extra = RewardSpec.model_validate({"template": "time_penalty", "agents": "all"})
    assert judge(item, [*parse, extra], 3) == "partly"
    assert judge(item, [], 3) == "refused"
    assert judge({"id": "i", "text": "x", "quality": "irrelevant"}, [], 3) == "correct"


def test_no_test_but_this_one_names_the_paraphrase_file() -> None:
    name = re.compile("m3hf_" + "paraphrases")  # split, so this file is the one exception by design
    hits = [p.name for p in (ROOT / "tests").rglob("*")
            if p.is_file() and p.suffix in (".py", ".yaml", ".json")
            and name.search(p.read_text(encoding="utf-8", errors="replace"))]
    assert hits == []

"""Hand-built Overcooked scenarios with exact rewards and states (issue 3, section 2).

Map A, 7x7, agents at (1,2), (1,4), (5,2); tomato (0,5), lettuce (1,6), onion (2,6), plate 1
(5,6), plate 2 (6,5), knife 1 (1,0), knife 2 (2,0), delivery (3,0). Primitive scripts are
strings of r/d/l/u/s (right, down, left, up, stay), one per agent, padded with stays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import envs.overcooked as oc

MOVES = "rdlus"
STEP = -0.1


def play(env: oc.OvercookedParallelEnv, **scripts: str) -> list[tuple[float, dict[str, Any]]]:
    """Run primitive scripts in lockstep; (team reward, infos) per step."""
    length = max(len(s) for s in scripts.values())
    out = []
    for t in range(length):
        actions = {a: MOVES.index(scripts.get(a, "").ljust(length, "s")[t]) for a in env.possible_agents}
        _, rewards, _, _, infos = env.step(actions)
        assert len(set(rewards.values())) == 1  # one team reward
        out.append((rewards["agent_0"], infos))
    return out


def rewards_of(steps: list[tuple[float, dict[str, Any]]]) -> list[float]:
    return [round(r, 6) for r, _ in steps]


def primitive(recipe: str = "tomato", **kwargs: Any) -> oc.OvercookedParallelEnv:
    env = oc.parallel_env(recipe=recipe, macro_actions=False, **kwargs)
    env.reset()
    return env


def entity(env: oc.OvercookedParallelEnv, name: str) -> dict[str, Any]:
    return env.describe()["entities"][name]


# agent_1 fetches the tomato and carries it onto knife 1 (7 steps), agent_0 steps out of the way.
TOMATO_ONTO_KNIFE = "ru" + "llll" + "l"


def test_three_chops_pay_once_per_food() -> None:
    env = primitive()
    steps = play(env, agent_0="d", agent_1=TOMATO_ONTO_KNIFE + "lll" + "l" + "l" + "l")
    # 7 steps to the knife, chops at 8, 9, 10 (+10 on the third), pick up, put down, pick up.
    assert rewards_of(steps) == [STEP] * 9 + [10 + STEP] + [STEP] * 3
    tomato = entity(env, "tomato")
    assert tomato["chops"] == 3 and tomato["chopped"] and tomato["held_by"] == "agent_1"


def test_food_outside_the_recipe_earns_nothing_for_chopping() -> None:
    env = primitive(recipe="onion")
    assert rewards_of(play(env, agent_0="d", agent_1=TOMATO_ONTO_KNIFE + "lll")) == [STEP] * 10
    assert entity(env, "tomato")["chopped"]


def test_step_penalty_is_applied_once_per_step_not_per_agent() -> None:
    env = primitive()
    assert rewards_of(play(env, agent_0="ss", agent_1="ss", agent_2="ss")) == [STEP, STEP]
    env = primitive(rewards={"step": -1.0})
    assert rewards_of(play(env, agent_0="rd")) == [-1.0, -1.0]


def test_correct_delivery_pays_200_and_terminates() -> None:
    env = primitive()
    # agent_1 chops the tomato on knife 1 then walks off; agent_2 brings plate 1 to knife 1.
    play(env, agent_0="ddd", agent_1=TOMATO_ONTO_KNIFE + "lll" + "rrr", agent_2="rrrr" + "uuu" + "llll")
    assert entity(env, "agent_2")["holding"] == "plate_1" and entity(env, "agent_2")["pos"] == (2, 1)
    steps = play(env, agent_2="u" + "l")  # to (1,1), then into knife 1: the tomato onto the plate
    assert entity(env, "plate_1")["contents"] == ["tomato"]
    assert entity(env, "knife_1")["holding"] is None
    obs, rewards, terminated, truncated, _ = env.step(
        {"agent_0": 4, "agent_1": 4, "agent_2": MOVES.index("d")}
    )
    obs, rewards, terminated, truncated, _ = env.step(
        {"agent_0": 4, "agent_1": 4, "agent_2": MOVES.index("d")}
    )
    assert not any(terminated.values()) and entity(env, "agent_2")["pos"] == (3, 1)
    obs, rewards, terminated, truncated, _ = env.step(
        {"agent_0": 4, "agent_1": 4, "agent_2": MOVES.index("l")}
    )
    assert rewards == dict.fromkeys(env.possible_agents, pytest.approx(200 + STEP))
    assert all(terminated.values()) and not any(truncated.values())
    assert env.agents == []
    assert env.describe()["delivered"] and entity(env, "plate_1")["on"] == "delivery"
    assert rewards_of(steps) == [STEP, STEP]


def test_wrong_delivery_costs_5_and_puts_items_back_unchopped() -> None:
    env = primitive()
    # chop the tomato, pick it up bare, deliver it without a plate
    play(env, agent_0="d", agent_1=TOMATO_ONTO_KNIFE + "lll" + "l")
    steps = play(env, agent_1="dd" + "l")  # (1,1) -> (3,1), then into the delivery cell
    assert rewards_of(steps) == [STEP, STEP, -5 + STEP]
    tomato = entity(env, "tomato")
    assert tomato["pos"] == (0, 5) and tomato["chops"] == 0 and tomato["on"] == "counter"
    assert entity(env, "agent_1")["holding"] is None
    # the +10 can be earned again after the reset
    steps = play(env, agent_1="rrrr" + "uu" + "u" + "llll" + "l" + "lll")
    assert rewards_of(steps)[-1] == 10 + STEP and sum(r > 0 for r in rewards_of(steps)) == 1


def test_wrong_dish_and_empty_plate_are_wrong_deliveries() -> None:
    env = primitive(recipe="lettuce-tomato")
    # agent_2 takes plate 1 to the delivery cell empty: -5, the plate returns to (5,6)
    steps = play(env, agent_2="rrrr" + "lll" + "uu" + "l" + "l")
    assert rewards_of(steps)[-1] == -5 + STEP
    assert entity(env, "plate_1")["pos"] == (5, 6) and entity(env, "agent_2")["holding"] is None
    # a tomato-only dish for a lettuce-tomato recipe is wrong too; plate and tomato both go back
    env = primitive(recipe="lettuce-tomato")
    play(env, agent_0="ddd", agent_1=TOMATO_ONTO_KNIFE + "lll" + "rrr", agent_2="rrrr" + "uuu" + "llll")
    steps = play(env, agent_2="u" + "l" + "dd" + "l")
    assert rewards_of(steps) == [STEP, STEP, STEP, STEP, -5 + STEP]
    assert entity(env, "plate_1")["pos"] == (5, 6) and entity(env, "plate_1")["contents"] == []
    assert entity(env, "tomato")["pos"] == (0, 5) and entity(env, "tomato")["chops"] == 0


def test_returned_item_goes_to_nearest_free_counter_when_its_start_is_taken() -> None:
    env = primitive(recipe="lettuce")
    # agent_2 takes plate 1 away; agent_1 drops the tomato on (5,6), plate 1's start cell;
    # agent_2 then delivers the empty plate: wrong, and its start is taken.
    steps = play(env, agent_1="ru" + "ss" + "dddd" + "r", agent_2="rrrr" + "lll" + "uu" + "l" + "l")
    assert rewards_of(steps)[-1] == -5 + STEP
    assert entity(env, "tomato")["pos"] == (5, 6)
    # the nearest free plain counters to (5,6) are (4,6) and (6,6); ties go to the lower row
    assert entity(env, "plate_1")["pos"] == (4, 6) and entity(env, "plate_1")["on"] == "counter"


def test_plate_rules_follow_the_reference() -> None:
    env = primitive(recipe="tomato")
    # chopped tomato on knife 1; agent_2 puts plate 1 down on knife 2, then steps aside
    play(env, agent_0="ddd", agent_1=TOMATO_ONTO_KNIFE + "lll", agent_2="rrrr" + "uuu" + "llll" + "l" + "r")
    assert entity(env, "knife_2")["holding"] == "plate_1"
    # agent_1 picks the chopped tomato and moves into knife 2 holding the plate: it takes the plate
    play(env, agent_1="l" + "d" + "l")
    assert entity(env, "agent_1")["holding"] == "plate_1"
    assert entity(env, "plate_1")["contents"] == ["tomato"] and entity(env, "tomato")["on"] == "plate_1"
    assert entity(env, "knife_2")["holding"] is None
    # an unchopped food never goes onto a plate
    env = primitive(recipe="tomato")
    play(env, agent_1="ru" + "dddd" + "r")  # the raw tomato into plate 1 at (5,6): nothing happens
    assert entity(env, "plate_1")["contents"] == [] and entity(env, "agent_1")["holding"] == "tomato"
    # a chopped food onto a plate lying on a counter stays there, on the plate
    env = primitive(recipe="tomato")
    play(env, agent_0="d", agent_1=TOMATO_ONTO_KNIFE + "lll" + "l" + "rrrr" + "dddd" + "r")
    assert entity(env, "plate_1")["contents"] == ["tomato"] and entity(env, "plate_1")["pos"] == (5, 6)
    assert entity(env, "agent_1")["holding"] is None


def test_agents_facing_each_other_swap_and_a_staying_agent_blocks() -> None:
    env = primitive()
    steps = play(env, agent_0="r", agent_1="l")  # (1,2) and (1,4) both step into (1,3): agent_0 first
    assert entity(env, "agent_0")["pos"] == (1, 3) and entity(env, "agent_1")["pos"] == (1, 4)
    assert steps[0][1]["agent_1"]["collided_with"] == "agent_0"
    assert steps[0][1]["agent_0"]["collided_with"] is None
    play(env, agent_0="r", agent_1="l")  # face to face: they swap, as the reference lets them
    assert entity(env, "agent_0")["pos"] == (1, 4) and entity(env, "agent_1")["pos"] == (1, 3)
    steps = play(env, agent_1="r")  # into agent_0, who stays: blocked
    assert entity(env, "agent_1")["pos"] == (1, 3)
    assert steps[0][1]["agent_1"]["collided_with"] == "agent_0"
    play(env, agent_0="r", agent_1="r")  # a chain: agent_1 waits for agent_0 to move, then follows
    assert entity(env, "agent_0")["pos"] == (1, 5) and entity(env, "agent_1")["pos"] == (1, 4)


def test_partial_observation_zeroes_items_outside_the_radius() -> None:
    env = oc.parallel_env(recipe="tomato", obs_radius=2, macro_actions=False)
    obs, _ = env.reset()
    full = oc.parallel_env(recipe="tomato", obs_radius=0, macro_actions=False).reset()[0]["agent_2"]
    seven = np.float32(7)
    expected_full = (
        np.array(
            [0, 5, 0, 1, 6, 0, 2, 6, 0, 5, 6, 6, 5, 1, 0, 2, 0, 3, 0, 1, 2, 1, 4, 5, 2], dtype=np.float32
        )
        / seven
    )
    np.testing.assert_array_equal(full[:25], expected_full)
    np.testing.assert_array_equal(full[25:], np.eye(7, dtype=np.float32)[0])  # "tomato" is task 0
    # agent_2 at (5,2) with r = 2 sees rows 3-7, columns 0-4: the delivery cell and itself only
    visible = np.zeros(25, dtype=bool)
    visible[[17, 18, 23, 24]] = True
    seen = obs["agent_2"][:25]
    np.testing.assert_array_equal(seen[visible], expected_full[visible])
    assert not seen[~visible].any()
    # agent_0 at (1,2) sees both knives, the delivery, itself and agent_1 at (1,4), no food
    visible0 = np.zeros(25, dtype=bool)
    visible0[13:23] = True
    np.testing.assert_array_equal(obs["agent_0"][:25], np.where(visible0, expected_full, 0))
    # two agents: 30 values, agents at 19-22, the task at 23-29
    two = oc.parallel_env(n_agents=2, recipe="lettuce-onion-tomato").reset()[0]
    assert two["agent_0"].shape == (30,) and two["agent_0"][29] == 1


def test_macro_observation_refreshes_only_when_the_macro_finishes() -> None:
    env = oc.parallel_env(recipe="tomato")
    obs0, _ = env.reset()
    get_plate_1 = env.action_names.index("get plate 1")
    seen = []
    for _ in range(4):
        obs, _, _, _, infos = env.step({"agent_0": 0, "agent_1": 0, "agent_2": get_plate_1})
        seen.append((obs["agent_2"], infos["agent_2"]["macro_done"], obs["agent_0"]))
    assert [done for _, done, _ in seen] == [False, False, False, True]
    for agent_2_obs, _, _ in seen[:3]:
        assert agent_2_obs is obs0["agent_2"]  # the very same (read-only) array
    refreshed = seen[3][0]
    assert tuple(refreshed[23:25] * 7) == (5, 5)  # agent_2 now at (5,5) ...
    assert tuple(refreshed[9:11] * 7) == (5, 5)  # ... holding plate 1
    assert seen[3][2] is not obs0["agent_0"]  # agent_0's "stay" finished every step
    with pytest.raises(ValueError):
        refreshed[0] = 1.0  # read-only: a user cannot corrupt the cached observation


@pytest.mark.parametrize("layout", ["B", "C"])
def test_go_to_counter_passes_items_across_the_middle(layout: str) -> None:
    env = oc.parallel_env(layout=layout, recipe="tomato")
    env.reset()
    names = env.action_names
    assert len(names) == 15 and names[10] == "go to counter" and names[11:] == ("right", "down", "left", "up")

    def macro(agent: str, name: str) -> int:
        """Run one macro for ``agent`` (others stay) until it finishes; steps taken."""
        for t in range(1, 30):
            actions = dict.fromkeys(env.possible_agents, 0)
            actions[agent] = names.index(name)
            _, _, _, _, infos = env.step(actions)
            if infos[agent]["macro_done"]:
                assert not infos[agent]["macro_timed_out"]
                return t
        raise AssertionError("macro never finished")

    assert macro("agent_1", "get tomato") == 2
    assert macro("agent_1", "go to counter") == 4  # (1,5) -> (3,4), then left onto (3,3)
    assert entity(env, "tomato")["pos"] == (3, 3) and entity(env, "tomato")["on"] == "counter"
    macro("agent_1", "get lettuce")
    macro("agent_1", "go to counter")
    assert entity(env, "lettuce")["pos"] == (2, 3)  # rows are tried 3, 2, 4, 1, ...
    assert macro("agent_0", "get tomato") == 3  # from the other side: (1,2) -> (3,2), right
    assert entity(env, "agent_0")["holding"] == "tomato"


def test_a_blocked_macro_times_out() -> None:
    env = oc.parallel_env(recipe="lettuce", macro_timeout=6)
    env.reset()
    get_lettuce, right = env.action_names.index("get lettuce"), env.action_names.index("right")
    # agent_1 parks on (1,5), the only cell next to the lettuce, and stays there
    history = []
    for t in range(8):
        actions = {"agent_0": get_lettuce, "agent_1": right if t == 0 else 0, "agent_2": 0}
        _, _, _, _, infos = env.step(actions)
        history.append(infos["agent_0"])
    assert [i["macro"] for i in history[:6]] == [get_lettuce] * 6
    assert [i["macro_done"] for i in history[:6]] == [False] * 5 + [True]
    assert [i["macro_timed_out"] for i in history[:6]] == [False] * 5 + [True]
    assert [i["collided_with"] for i in history[:6]] == [None, None] + ["agent_1"] * 4
    assert entity(env, "agent_0")["pos"] == (1, 4)
    assert not history[6]["macro_timed_out"]  # a new macro starts afresh


def test_macro_chop_and_knife_walk_up_semantics() -> None:
    env = oc.parallel_env(recipe="tomato")
    env.reset()
    names = env.action_names

    def run(name: str, agent: str = "agent_1") -> tuple[int, list[float]]:
        rewards = []
        for t in range(1, 30):
            actions = dict.fromkeys(env.possible_agents, 0)
            actions[agent] = names.index(name)
            _, r, _, _, infos = env.step(actions)
            rewards.append(round(r[agent], 6))
            if infos[agent]["macro_done"]:
                return t, rewards
        raise AssertionError("never finished")

    assert run("down", "agent_0") == (1, [STEP])  # out of agent_1's way along row 1
    assert run("chop") == (1, [STEP])  # no knife with food next to it: one step of stay
    assert run("get tomato")[0] == 2
    assert run("go to knife 1")[0] == 5  # holding: walks to (1,1) and puts the tomato down
    assert entity(env, "knife_1")["holding"] == "tomato"
    assert run("chop") == (3, [STEP, STEP, 10 + STEP])
    assert run("go to knife 1") == (1, [STEP])  # empty-handed, already next to it: stays
    assert run("get tomato")[0] == 1 and entity(env, "agent_1")["holding"] == "tomato"
    assert run("get plate 1")[0] == 10  # chopped food onto plate 1, then plate 1 into the hand
    assert entity(env, "agent_1")["holding"] == "plate_1"
    assert entity(env, "plate_1")["contents"] == ["tomato"]
    assert run("get tomato") == (1, [STEP])  # on a plate: "get plate" is the way
    steps, rewards = run("deliver")
    assert rewards[-1] == 200 + STEP and env.agents == []


@pytest.mark.parametrize("layout", oc.LAYOUTS)
def test_random_play_keeps_the_kitchen_consistent(layout: str) -> None:
    """Every item is in exactly one place, agents stand on distinct floor cells, and the fast
    observation path equals the batched one, after every step of random play."""
    from envs.overcooked.kitchen import Kitchen
    from envs.overcooked.layouts import FLOOR, N_FOODS

    rng = np.random.default_rng(7)
    for macro in (True, False):
        env = oc.parallel_env(
            layout=layout, macro_actions=macro, recipe="lettuce-onion-tomato", max_steps=300
        )
        env.reset()
        kitchen: Kitchen = env._kitchen
        observer = env._observer
        for _ in range(300):
            actions = rng.integers(0, len(env.action_names), len(env.possible_agents))
            env.step(dict(zip(env.possible_agents, actions.tolist(), strict=True)))
            cells = kitchen.agent_cell
            assert len(set(cells)) == len(cells)
            assert all(
                kitchen.layout.kinds[c] == FLOOR and kitchen.cell_agent[c] == a for a, c in enumerate(cells)
            )
            for item in range(5):
                places = [
                    kitchen.item_cell[item] >= 0,
                    kitchen.holder[item] >= 0,
                    item < N_FOODS and kitchen.in_plate[item] >= 0,
                ]
                assert sum(places) == 1, (item, places)
                if places[0]:
                    assert kitchen.cell_item[kitchen.item_cell[item]] == item
                if places[1]:
                    assert kitchen.hand[kitchen.holder[item]] == item
                if places[2]:
                    plate = kitchen.in_plate[item]
                    assert kitchen.contents[plate] >> item & 1 and kitchen.chops[item] == 3
            assert sum(c >= 0 for c in kitchen.cell_item) == sum(c >= 0 for c in kitchen.item_cell)
            states = kitchen.entity_states()
            np.testing.assert_array_equal(observer.observe_one(states), observer.observe(np.array(states)))
            if not env.agents:
                env.reset()


def test_default_macro_timeout_exceeds_every_path() -> None:
    from envs.overcooked.config import OvercookedConfig
    from envs.overcooked.layouts import get_layout
    from envs.overcooked.navigation import get_navigation

    longest = max(
        max(max(row) for row in get_navigation(get_layout(layout, 3)).moves) for layout in oc.LAYOUTS
    )
    assert longest == 19  # C9: round the gap at the bottom of the middle counter
    assert OvercookedConfig().macro_timeout > longest

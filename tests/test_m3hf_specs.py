"""RewardSpec validation (bounds, names, scene checks); template values on real and hand-made states."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from pydantic import ValidationError

import envs.overcooked as oc
from rlkit.m3hf import RewardSpec, Scene, compile_term, validate_specs


@pytest.fixture(scope="module")
def scene() -> Scene:
    return Scene.from_env(oc.parallel_env(layout="A", n_agents=3))


def spec(template: str, agents: object = "all", **params: object) -> RewardSpec:
    return RewardSpec.model_validate({"template": template, "agents": agents, "params": params})


def test_scene_reads_the_env_self_description_in_feature_order() -> None:
    env = oc.parallel_env(layout="B", n_agents=2)
    scene = Scene.from_env(env)
    assert scene.entity_names == env.entity_names  # the axis of features()["positions"]
    assert scene.agent_names == ("agent_0", "agent_1")
    assert scene.agent_colours == ("green", "rose")
    assert scene.item_names == ("tomato", "lettuce", "onion", "plate_1", "plate_2")
    assert "go to counter" in scene.action_names
    assert scene.recipe_foods == ("tomato", "lettuce")
    assert Scene.from_env(oc.OvercookedVecEnv(2, layout="B", n_agents=2)) == scene


def test_specs_round_trip_through_json_and_sort_agents() -> None:
    original = spec("proximity", [2, 0, 2], b="knife_1", radius=2, bonus=0.5)
    assert original.agents == (0, 2)
    again = RewardSpec.model_validate_json(original.model_dump_json())
    assert again == original
    assert again.params.radius == 2


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (
            {"template": "proximity", "agents": "all", "params": {"b": "tomato", "radius": 99}},
            "params.radius",
        ),
        ({"template": "distance", "agents": "all", "params": {"b": "tomato", "scale": 0}}, "params.scale"),
        ({"template": "action", "agents": "all", "params": {"action": "chop", "value": 11}}, "params.value"),
        ({"template": "time_penalty", "agents": "all", "params": {"rate": -1}}, "params.rate"),
        ({"template": "success", "agents": "all", "params": {"bonus": 1e6}}, "params.bonus"),
        ({"template": "success", "agents": "all", "params": {"code": "__import__('os')"}}, "params.code"),
        ({"template": "teleport", "agents": "all", "params": {}}, "template"),
        ({"template": "success", "agents": [], "params": {}}, "agents"),
        ({"template": "success", "agents": [-1], "params": {}}, "agents"),
        (
            {"template": "status", "agents": "all", "params": {"entity": "tomato", "status": "cooked"}},
            "params.status",
        ),
    ],
)
def test_invalid_specs_are_rejected_naming_the_field(data: dict, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        RewardSpec.model_validate(data)
    locations = [".".join(str(part) for part in error["loc"]) for error in caught.value.errors()]
    assert any(location == field or location.startswith(f"{field}.") for location in locations), locations


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"template": "success", "agents": [3], "params": {}}, "agents: [3] out of range 0..2"),
        (
            {"template": "distance", "agents": "all", "params": {"b": "oven"}},
            "params.b: unknown entity 'oven'",
        ),
        (
            {"template": "action", "agents": "all", "params": {"action": "jump"}},
            "params.action: unknown action",
        ),
        (
            {"template": "holding", "agents": "all", "params": {"item": "knife_1"}},
            "params.item: unknown item",
        ),
        (
            {"template": "status", "agents": "all", "params": {"entity": "plate_1", "status": "chopped"}},
            "params.status: 'chopped' does not apply to 'plate_1'",
        ),
        (
            {
                "template": "composite",
                "agents": "all",
                "params": {
                    "parts": [{"template": "success"}, {"template": "distance", "params": {"b": "x"}}]
                },
            },
            "params.parts.1.params.b: unknown entity 'x'",
        ),
    ],
)
def test_names_are_checked_against_the_scene(scene: Scene, data: dict, message: str) -> None:
    RewardSpec.model_validate(data)  # well-formed without a scene
    with pytest.raises(ValidationError, match=message.replace(".", r"\.").replace("[", r"\[")):
        validate_specs([data], scene)


def test_composites_do_not_nest() -> None:
    inner = {"template": "composite", "params": {"parts": [{"template": "success"}, {"template": "success"}]}}
    with pytest.raises(ValidationError, match="parts.0.template"):
        spec("composite", parts=[inner, {"template": "success"}])


def hand_state() -> dict[str, np.ndarray]:
    """Two games of map A's entities: game 0 at the start, game 1 mid-recipe."""
    positions = np.array(
        [
            # tomato lettuce onion plate_1 plate_2 knife_1 knife_2 delivery agent_0 agent_1 agent_2
            [[0, 5], [1, 6], [2, 6], [5, 6], [6, 5], [1, 0], [2, 0], [3, 0], [1, 2], [1, 4], [5, 2]],
            [[1, 0], [1, 1], [2, 6], [1, 1], [6, 5], [1, 0], [2, 0], [3, 0], [2, 1], [1, 1], [3, 1]],
        ]
    )
    plate_contents = np.zeros((2, 2, 3), dtype=bool)
    plate_contents[1, 0, 1] = True  # game 1: the lettuce lies on plate_1, which agent_1 holds
    return {
        "positions": positions,
        "holding": np.array([[-1, -1, -1], [-1, 3, -1]]),
        "chops": np.array([[0, 0, 0], [3, 3, 0]]),
        "plate_contents": plate_contents,
        "delivered": np.array([False, True]),
    }


@pytest.mark.parametrize(
    ("template", "params", "agent", "actions", "expected"),
    [
        # |(1,2)-(0,5)| = 4 and |(2,1)-(1,0)| = 2, over height + width = 14
        ("distance", {"b": "tomato", "scale": 2.0}, 0, [0, 0], [-2 * 4 / 14, -2 * 2 / 14]),
        ("distance", {"a": "plate_1", "b": "delivery"}, 2, [0, 0], [-(2 + 6) / 14, -(2 + 1) / 14]),
        ("proximity", {"b": "knife_1", "radius": 1, "bonus": 3.0}, 1, [0, 0], [0.0, 3.0]),
        ("proximity", {"b": "agent_0", "radius": 2, "bonus": -1.0}, 2, [0, 0], [0.0, -1.0]),
        ("action", {"action": "chop", "value": 2.0}, 0, [9, 1], [2.0, 0.0]),
        ("action_cost", {"cost": 0.5}, 0, [0, 12], [0.0, -0.5]),
        ("status", {"entity": "tomato", "status": "chopped", "value": 1.5}, 0, [0, 0], [0.0, 1.5]),
        ("status", {"entity": "lettuce", "status": "on_plate"}, 0, [0, 0], [0.0, 1.0]),
        ("status", {"entity": "plate_1", "status": "held"}, 0, [0, 0], [0.0, 1.0]),
        ("status", {"entity": "plate_1", "status": "has_food", "value": -2.0}, 0, [0, 0], [0.0, -2.0]),
        ("holding", {"item": "plate_1"}, 1, [0, 0], [0.0, 1.0]),
        ("holding", {"item": "plate_1"}, 0, [0, 0], [0.0, 0.0]),  # only the agent's own hand counts
        ("holding", {"item": "any", "value": 0.5}, 1, [0, 0], [0.0, 0.5]),
        ("time_penalty", {"rate": 0.2}, 2, [0, 0], [-0.2, -0.2]),
        ("success", {"bonus": 50.0}, 0, [0, 0], [0.0, 50.0]),
    ],
)
def test_each_template_on_a_hand_made_state(
    scene: Scene, template: str, params: dict, agent: int, actions: list[int], expected: list[float]
) -> None:
    term = compile_term(spec(template, **params).params, scene)
    np.testing.assert_allclose(term(hand_state(), np.array(actions), agent), expected)


def test_composite_is_the_weighted_sum_of_its_parts(scene: Scene) -> None:
    parts = [
        {"template": "success", "params": {"bonus": 10.0}, "weight": 0.5},
        {"template": "holding", "params": {"item": "plate_1"}, "weight": 2.0},
    ]
    term = compile_term(spec("composite", parts=parts).params, scene)
    np.testing.assert_allclose(term(hand_state(), np.zeros(2, dtype=int), 1), [0.0, 0.5 * 10 + 2.0 * 1])


def test_templates_read_the_real_env_features_with_a_game_axis(scene: Scene) -> None:
    venv = oc.OvercookedVecEnv(3, layout="A", n_agents=3)
    venv.reset()
    state = venv.features()
    term = compile_term(spec("distance", b="tomato").params, scene)
    # map A: agent_0 starts at (1, 2), agent_1 at (1, 4), the tomato lies at (0, 5)
    np.testing.assert_allclose(term(state, np.zeros(3, dtype=int), 0), [-4 / 14] * 3)
    np.testing.assert_allclose(term(state, np.zeros(3, dtype=int), 1), [-2 / 14] * 3)
    env = oc.parallel_env(layout="A", n_agents=3)
    env.reset()
    single = {key: value[None] for key, value in env.features().items()}
    np.testing.assert_allclose(term(single, np.zeros(1, dtype=int), 0), [-4 / 14])


def test_a_template_needs_the_features_it_reads(scene: Scene) -> None:
    blind = replace(scene, features=("positions", "holding"))
    blind.check(spec("distance", b="tomato"))
    with pytest.raises(ValueError, match=r"template: 'success' reads \['delivered'\]"):
        blind.check(spec("success"))
    parts = [
        {"template": "status", "params": {"entity": "tomato", "status": "chopped"}},
        {"template": "success"},
    ]
    with pytest.raises(ValueError, match=r"reads \['chops', 'delivered'\]"):
        blind.check(spec("composite", parts=parts))


def test_a_spec_reads_as_one_line() -> None:
    assert spec("proximity", [0, 2], b="knife_1", radius=2).summary() == (
        "agent 0, agent 2: proximity(a='self', b='knife_1', radius=2, bonus=1.0)"
    )
    parts = [{"template": "success", "weight": 0.5}, {"template": "time_penalty", "params": {"rate": 0.2}}]
    assert spec("composite", parts=parts).summary() == (
        "all agents: composite(0.5 * success(bonus=10.0) + 1 * time_penalty(rate=0.2, growth='constant'))"
    )

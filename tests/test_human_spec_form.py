"""The M3HF page's typed spec form: every choice it offers is a valid spec for the scene, its number
bounds are the templates' own, and what it cannot stop (a hand-made request) the server refuses."""

from itertools import product

import pytest

import envs.overcooked as oc
from rlkit.human.app import create_app
from rlkit.human.settings import ServeConfig
from rlkit.human.spec_form import spec_form
from rlkit.m3hf import Scene
from rlkit.m3hf.specs import validate_specs
from tests.web_client import client_for, login, open_phase

pytestmark = pytest.mark.server


def valid(template: str, params: dict, scene: Scene) -> bool:
    try:
        validate_specs([{"template": template, "agents": "all", "params": params}], scene)
    except ValueError:
        return False
    return True


def choices(field: dict, chosen: dict) -> list:
    by = field.get("options_by")
    return by["options"][chosen[by["field"]]] if by else field["options"]


def combinations(picks: list[dict], chosen: dict):
    """Every way to fill the choice fields ``picks`` in order, each narrowed by the earlier ones."""
    if not picks:
        yield dict(chosen)
        return
    for option in choices(picks[0], chosen):
        yield from combinations(picks[1:], chosen | {picks[0]["name"]: option})


def filled_forms(form: dict):
    """Every combination of choices the form lets a person make (numbers at their defaults)."""
    for name, template in form["templates"].items():
        fields = template["fields"]
        numbers = {f["name"]: f["default"] for f in fields if f["kind"] != "choice"}
        for chosen in combinations([f for f in fields if f["kind"] == "choice"], {}):
            yield name, numbers | chosen


@pytest.mark.parametrize("layout,n_agents", [("A", 2), ("B", 3)])
def test_every_combination_the_form_offers_is_a_valid_spec_and_nothing_valid_is_left_out(layout, n_agents):
    scene = Scene.from_env(oc.parallel_env(layout=layout, n_agents=n_agents))
    form = spec_form(scene)
    assert [a["index"] for a in form["agents"]] == list(range(n_agents))
    offered = list(filled_forms(form))
    assert {name for name, _ in offered} == set(form["templates"]) and len(form["templates"]) == 8
    assert all(valid(name, params, scene) for name, params in offered)
    status = form["templates"]["status"]["fields"]
    # a plate is held or has food; an onion is never 'has_food': the picker narrows by entity
    assert status[1]["options_by"]["options"]["plate_1"] == ["held", "has_food"]
    assert "has_food" not in status[1]["options_by"]["options"]["onion"]
    offered_status = {(p["entity"], p["status"]) for name, p in offered if name == "status"}
    statuses = ["chopped", "on_plate", "held", "has_food"]
    every_status = {(e, s) for e, s in product(status[0]["options"], statuses)
                    if valid("status", {"entity": e, "status": s}, scene)}
    assert offered_status == every_status  # nothing valid left out
    assert form["templates"]["holding"]["fields"][0]["options"][0] == "any"
    assert form["templates"]["action"]["fields"][0]["options"] == list(scene.action_names)


def test_number_bounds_are_the_templates_own():
    scene = Scene.from_env(oc.parallel_env(layout="A", n_agents=2))
    form = spec_form(scene)
    checked = 0
    for name, template in form["templates"].items():
        defaults = {f["name"]: f.get("default") for f in template["fields"]}
        for field in template["fields"]:
            if field["kind"] == "choice":
                continue
            step = 1 if field["kind"] == "integer" else 1e-6
            for bound, outside in (("min", -step), ("max", step)):
                at = defaults | {field["name"]: field[bound]}
                assert valid(name, at, scene) is not field[f"exclusive_{bound}"], (name, field)
                assert not valid(name, defaults | {field["name"]: field[bound] + outside}, scene)
                checked += 1
    assert checked == 2 * 9  # scale, radius, bonus, value x3, rate, bonus, cost
    composite = form["composite"]
    assert (composite["min_parts"], composite["max_parts"]) == (2, 4)
    assert (composite["weight"]["min"], composite["weight"]["max"]) == (0.0, 10.0)
    assert form["templates"]["proximity"]["fields"][2] | {"description": ""} == {
        "name": "radius", "kind": "integer", "description": "", "min": 0, "exclusive_min": False,
        "max": 16, "exclusive_max": False, "default": 1}


def test_what_the_env_cannot_evaluate_is_not_offered():
    scene = Scene.from_env(oc.parallel_env(layout="A", n_agents=2))
    names = ("agent_names", "agent_colours", "entity_names", "entity_kinds", "item_names", "action_names",
             "recipe_foods", "height", "width")
    bare = Scene(**{f: getattr(scene, f) for f in names}, features=("positions", "holding"))
    form = spec_form(bare)
    assert "success" not in form["templates"]  # it reads 'delivered', which this env lacks
    status, = (f for f in form["templates"]["status"]["fields"] if f["name"] == "status")
    assert status["options"] == ["held"]  # chopped / on_plate / has_food read chops, plate_contents
    assert all(valid(name, params, bare) for name, params in filled_forms(form))


def test_out_of_range_numbers_are_refused_with_the_field_named_and_nothing_is_stored(tmp_path):
    source, _ = open_phase(tmp_path)
    client = client_for(create_app(source.store, ServeConfig(run_dir=str(tmp_path))))
    headers = login(client, "ann")
    form = client.get("/api/m3hf/form").json()
    assert form["phase"] == 3 and "holding" in form["templates"]
    too_much = {"template": "holding", "agents": [0], "params": {"item": "onion", "value": 10.5}}
    half_radius = {"template": "proximity", "agents": "all", "params": {"b": "onion", "radius": 1.5}}
    zero_rate = {"template": "time_penalty", "agents": "all", "params": {"rate": 0.0}}
    for spec, field, reason in ((too_much, "params.value", "less than or equal to 10"),
                                (half_radius, "params.radius", "valid integer"),
                                (zero_rate, "params.rate", "greater than 0")):
        response = client.post("/api/m3hf/commit", json={"phase": 3, "text": "x", "specs": [spec]},
                               headers=headers)
        assert response.status_code == 422 and field in response.json()["detail"], response.text
        assert reason in response.json()["detail"]
        checked = client.post("/api/m3hf/check", json={"specs": [spec]}, headers=headers).json()
        assert checked["summaries"] == [None] and checked["problems"][0].startswith(field)
        assert reason in checked["problems"][0]
    assert source.store.phase_feedback(3) == []

    plate = {"template": "status", "agents": [1], "params": {"entity": "plate_1", "status": "chopped"}}
    fine = {"template": "holding", "agents": [0], "params": {"item": "onion", "value": 10}}
    checked = client.post("/api/m3hf/check", json={"specs": [plate, fine, 7]}, headers=headers).json()
    assert checked["problems"] == ["params.status: 'chopped' does not apply to 'plate_1'", None,
                                   "Input should be a valid dictionary or instance of RewardSpec"]
    assert checked["summaries"] == [None, "agent 0: holding(item='onion', value=10.0)", None]
    assert client.post("/api/m3hf/check", json={"specs": [fine]}).status_code == 403  # no CSRF token
    assert source.store.phase_feedback(3) == []  # checking stores nothing

"""The M3HF page's API and the web feedback source: preview, correct, confirm, hand to the loop."""

import re

import pytest

import envs.overcooked as oc
from rlkit.human import LabelStore
from rlkit.human.app import create_app
from rlkit.human.m3hf_source import ConfirmedSpecsParser, WebFeedbackSource, scene_from_json, scene_to_json
from rlkit.human.settings import ServeConfig
from rlkit.m3hf import FeedbackSource, RuleParser, Scene
from tests.web_client import M3HF_TEXT, client_for, login, open_phase

pytestmark = pytest.mark.server


def test_scenes_survive_the_trip_through_json():
    scene = Scene.from_env(oc.parallel_env(layout="B", n_agents=3))
    assert scene_from_json(scene_to_json(scene)) == scene


def test_preview_correct_and_confirm_reach_the_loop_as_confirmed_specs(tmp_path):
    source, request = open_phase(tmp_path)
    assert isinstance(source, FeedbackSource)
    client = client_for(create_app(source.store, ServeConfig(run_dir=str(tmp_path))))
    headers = login(client, "ann")
    html = client.get("/m3hf").text
    assert "Phase 3" in html and "the <b>green</b> chef" in html and 'data-media="m3hf_phase_003.gif"' in html
    assert client.get("/media/m3hf_phase_003.gif").content[:6] == b"GIF89a"

    preview = client.post("/api/m3hf/preview", json={"text": M3HF_TEXT}, headers=headers).json()
    assert preview["per_agent"] == {"agent_0": ["agent 0: holding(item='tomato', value=1.0)"],
                                    "agent_1": ["agent 1: action(action='stay', value=-1.0)"]}
    specs = [s["spec"] for s in preview["specs"]]
    specs[0]["params"]["item"] = "onion"  # the person corrects the parse: onion, not tomato
    committed = client.post("/api/m3hf/commit", json={"phase": 3, "text": M3HF_TEXT, "specs": specs},
                            headers=headers)
    assert committed.status_code == 200, committed.text
    assert [s["summary"] for s in committed.json()["specs"]][0] == "agent 0: holding(item='onion', value=1.0)"

    feedback = source.feedback(request)
    assert [f.text for f in feedback] == [M3HF_TEXT]
    # the loop took the phase's feedback and went on: the page says so, a late confirm is refused
    assert 'id="phase-closed"' in client.get("/m3hf").text
    late = client.post("/api/m3hf/commit", json={"phase": 3, "text": "too late", "specs": []},
                       headers=headers)
    assert late.status_code == 409 and "phase 3 is closed" in late.json()["detail"]
    assert client.post("/api/m3hf/preview", json={"text": M3HF_TEXT}, headers=headers).status_code == 409
    assert [item["text"] for item in source.store.phase_feedback(3)] == [M3HF_TEXT]
    parser = ConfirmedSpecsParser(source, RuleParser())
    assert parser.parse(M3HF_TEXT, request.scene)[0].params.item == "onion"  # the correction, not a re-parse
    assert parser.parse("Agent 1 should go to the onion.", request.scene)[0].template == "distance"
    # the phase asked again (a run killed before the phase's generation completed, resumed) opens
    # again and gets the same feedback at once: taking it consumed nothing
    again = WebFeedbackSource(LabelStore(tmp_path), tmp_path / "media", timeout_s=0.0, poll_s=0.02)
    assert [f.text for f in again.feedback(request)] == [M3HF_TEXT]
    assert again.confirmed == source.confirmed


def test_bad_feedback_is_refused_with_the_reason(tmp_path):
    source, _ = open_phase(tmp_path)
    client = client_for(create_app(source.store, ServeConfig(run_dir=str(tmp_path), max_text_chars=100)))
    headers = login(client, "ann")
    bad_entity = {"template": "holding", "agents": [0], "params": {"item": "pizza", "value": 1.0}}
    response = client.post("/api/m3hf/commit", json={"phase": 3, "text": "x", "specs": [bad_entity]},
                           headers=headers)
    assert response.status_code == 422 and "pizza" in response.json()["detail"]
    stale = client.post("/api/m3hf/commit", json={"phase": 2, "text": "x", "specs": []}, headers=headers)
    assert stale.status_code == 409 and "phase 3" in stale.json()["detail"]
    long = client.post("/api/m3hf/preview", json={"text": "go " * 50}, headers=headers)
    assert long.status_code == 422 and "limit is 100" in long.json()["detail"]
    assert source.store.phase_feedback(3) == []


def test_the_page_says_when_no_phase_is_open(tmp_path):
    client = client_for(create_app(LabelStore(tmp_path)))
    headers = login(client, "ann")
    assert 'id="no-phase"' in client.get("/m3hf").text
    assert client.post("/api/m3hf/preview", json={"text": "hi"}, headers=headers).status_code == 404


def css_colour(css: str, selector: str) -> tuple[int, int, int]:
    rule = re.search(re.escape(selector) + r" \{ background: rgb\((\d+), (\d+), (\d+)\)", css)
    assert rule is not None, selector
    return tuple(int(x) for x in rule.groups())


def test_the_m3hf_page_has_a_legend_of_the_kitchen_in_the_video_s_own_colours(tmp_path):
    from envs.overcooked import render

    open_phase(tmp_path)
    client = client_for(create_app(LabelStore(tmp_path), ServeConfig(run_dir=str(tmp_path))))
    login(client, "ann")
    html = client.get("/m3hf").text
    legend = re.search(r'<ul id="kitchen-legend".*?</ul>', html, re.S).group(0)
    marks = re.findall(r'class="mark ([\w-]+)"', legend)
    assert marks == ["tomato", "lettuce", "onion", "cut", "plate", "knife", "delivery", "counter", "floor",
                     "agent-green", "agent-rose"]
    assert "one chop (3 to finish it)" in legend
    css = client.get("/static/style.css").text
    foods = [css_colour(css, f".mark.{food}") for food in ("tomato", "lettuce", "onion")]
    assert foods == [tuple(c) for c in render._FOOD_COLOURS]
    for name, colour in render.AGENT_COLOURS.items():
        assert css_colour(css, f".mark.agent-{name}") == colour
    assert css_colour(css, ".mark.delivery") == render._DELIVERY
    assert css_colour(css, ".mark.counter") == render._COUNTER

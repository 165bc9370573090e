"""The offline RuleParser on a table of phrases: who the feedback is about, and what it asks for."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import envs.overcooked as oc
from rlkit.m3hf import FeedbackParser, RewardSpec, RuleParser, Scene


@pytest.fixture(scope="module")
def scene() -> Scene:
    return Scene.from_env(oc.parallel_env(layout="A", n_agents=3))


def summary(specs: list[RewardSpec]) -> list[tuple]:
    return [(s.template, s.agents, s.params.model_dump()) for s in specs]


PHRASES = [
    ("Agent 1 should go to the tomato.", [("distance", (1,), {"a": "self", "b": "tomato", "scale": 1.0})]),
    ("agent_2, go to knife 2", [("distance", (2,), {"a": "self", "b": "knife_2", "scale": 1.0})]),
    (
        "The green agent should pick up the lettuce and chop it.",
        [
            ("holding", (0,), {"item": "lettuce", "value": 1.0}),
            ("status", (0,), {"entity": "lettuce", "status": "chopped", "value": 1.0}),
        ],
    ),
    (
        "Blue, stay near the knife.",
        [("proximity", (2,), {"a": "self", "b": "knife_1", "radius": 1, "bonus": 1.0})],
    ),
    ("Everyone needs to be faster!", [("time_penalty", "all", {"rate": 0.1, "growth": "constant"})]),
    ("Agent 0 and agent 2: stop wandering around.", [("action_cost", (0, 2), {"cost": 0.1})]),
    (
        "The rose one keeps standing still. It should grab a plate.",
        [
            ("action", (1,), {"action": "stay", "value": -1.0}),
            ("holding", (1,), {"item": "plate_1", "value": 1.0}),
        ],
    ),
    ("Stop picking up the onion, agent_2.", [("holding", (2,), {"item": "onion", "value": -1.0})]),
    (
        "Green agent, stay away from the blue agent.",
        [("proximity", (0,), {"a": "self", "b": "agent_2", "radius": 1, "bonus": -1.0})],
    ),
    (
        "Put the tomato on the plate.",
        [("status", "all", {"entity": "tomato", "status": "on_plate", "value": 1.0})],
    ),
    (
        "Deliver the salad quickly",
        [("time_penalty", "all", {"rate": 0.1, "growth": "constant"}), ("success", "all", {"bonus": 10.0})],
    ),
    ("The second agent should chop", [("action", (1,), {"action": "chop", "value": 1.0})]),
    ("Nice weather today.", []),
    ("Good job everyone", []),
]


@pytest.mark.parametrize(("text", "expected"), PHRASES)
def test_phrases(scene: Scene, text: str, expected: list[tuple]) -> None:
    assert summary(RuleParser().parse(text, scene)) == expected


def test_a_sentence_without_an_agent_concerns_the_team_unless_it_starts_with_a_pronoun(scene: Scene) -> None:
    specs = RuleParser().parse("Agent 1 should grab the tomato. Someone should chop the onion.", scene)
    assert [(s.template, s.agents) for s in specs] == [("holding", (1,)), ("status", "all")]


def test_specs_keep_the_words_they_came_from_and_the_decision_is_logged(
    scene: Scene, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="rlkit.m3hf"):
        [spec] = RuleParser().parse("Agent 0 should go to the delivery window.", scene)
    assert spec.reason == "agent 0 should go to the delivery window"
    assert "rule parser: 1 spec(s)" in caplog.text


def test_colours_and_numbers_beyond_the_team_are_ignored() -> None:
    two = Scene.from_env(oc.parallel_env(layout="A", n_agents=2))
    assert RuleParser().parse("The blue agent should go to the onion.", two)[0].agents == "all"
    assert RuleParser().parse("Agent 2 should go to the onion.", two)[0].agents == "all"


def test_is_a_feedback_parser_and_deterministic(scene: Scene) -> None:
    parser = RuleParser()
    assert isinstance(parser, FeedbackParser)
    text = "Green: chop the tomato, then put it on the plate. Rose, faster!"
    assert parser.parse(text, scene) == parser.parse(text, scene)


def test_the_same_request_twice_gives_one_spec(scene: Scene) -> None:
    specs = RuleParser().parse("Agent 1 should chop the tomato. Agent 1, chop the tomato!", scene)
    assert summary(specs) == [("status", (1,), {"entity": "tomato", "status": "chopped", "value": 1.0})]


def test_random_word_salad_never_raises_and_every_spec_fits_the_scene() -> None:
    words = (
        "agent 0 1 2 3 agent_1 green blue rose first third everyone team it they stop don't go to move near "
        "stay away from pick up grab chop put on plate 2 knife delivery tomato lettuce onion serve faster "
        "wander idle standing still and then but , . the should"
    ).split()
    rng = np.random.default_rng(0)
    parser = RuleParser()
    for scene in (Scene.from_env(oc.parallel_env(layout=lay, n_agents=n)) for lay, n in (("A", 2), ("B", 3))):
        for _ in range(300):
            for spec in parser.parse(" ".join(rng.choice(words, size=rng.integers(1, 15))), scene):
                scene.check(spec)

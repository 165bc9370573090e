"""Feedback sources: a terminal session, scripted YAML, and the simulated teacher of mixed quality."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import envs.overcooked as oc
from rlkit.m3hf import Feedback, FeedbackRequest, FeedbackSource, RuleParser, Scene
from rlkit.m3hf.sources import (
    IRRELEVANT,
    ScriptedSource,
    SimulatedSource,
    TerminalSource,
    correct_advice,
    wrong_advice,
)


@pytest.fixture(scope="module")
def scene() -> Scene:
    return Scene.from_env(oc.parallel_env(layout="A", n_agents=3, recipe="lettuce-tomato"))


def rollout(actions: dict[str, int], steps: int) -> list[dict[str, np.ndarray]]:
    env = oc.parallel_env(layout="A", n_agents=3, recipe="lettuce-tomato")
    env.reset()
    states = [env.features()]
    for _ in range(steps):
        env.step(actions)
        states.append(env.features())
    return states


def test_terminal_source_shows_the_video_and_reads_lines_until_an_empty_one(scene: Scene) -> None:
    typed = iter(["Agent 1 should go to the tomato.", "Everyone, faster!", "", "never read"])
    shown: list[str] = []
    source = TerminalSource(read_line=lambda prompt: next(typed), show=shown.append)
    assert isinstance(source, FeedbackSource)
    request = FeedbackRequest(3, scene, Path("runs/x/gen3.mp4"), original_return=-20.0)
    assert source.feedback(request) == [Feedback("Agent 1 should go to the tomato. Everyone, faster!")]
    assert "Generation 3 (return -20.0): watch runs/x/gen3.mp4" in shown[0]
    assert "agent_0 = green" in shown[1]
    assert next(typed) == "never read"

    def end_of_input(prompt: str) -> str:
        raise EOFError

    assert TerminalSource(read_line=end_of_input, show=shown.append).feedback(request) == []


def test_scripted_source_reads_phases_from_yaml_in_either_form(tmp_path: Path, scene: Scene) -> None:
    mapping = tmp_path / "feedback.yaml"
    mapping.write_text(
        "phases:\n  1: ['Agent 0 should chop the tomato.']\n  3:\n    - Faster!\n    - Agent 2, stop.\n"
    )
    source = ScriptedSource.from_yaml(mapping, quality="correct")
    assert source.feedback(FeedbackRequest(1, scene)) == [
        Feedback("Agent 0 should chop the tomato.", "correct")
    ]
    assert source.feedback(FeedbackRequest(2, scene)) == []
    assert [f.text for f in source.feedback(FeedbackRequest(3, scene))] == ["Faster!", "Agent 2, stop."]
    listed = tmp_path / "list.yaml"
    listed.write_text("- ['Go to the onion.']\n- Faster!\n")
    assert ScriptedSource.from_yaml(listed).phases == {1: ["Go to the onion."], 2: ["Faster!"]}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("phases:\n  0: ['x']\n", "keys must be generations >= 1"),
        ("phases:\n  first: ['x']\n", "phase 'first' is not a generation number"),
        ("phases:\n  1: [3]\n", r"phases\.1: must be a list of non-empty texts"),
        ("just text", "expected phases as a mapping or a list"),
    ],
)
def test_scripted_source_refuses_bad_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        ScriptedSource.from_yaml(path)


def test_correct_advice_follows_the_recipe_from_the_true_state(scene: Scene) -> None:
    start = rollout({"agent_0": 0, "agent_1": 0, "agent_2": 0}, 2)
    # map A: agent_1 at (1, 4) is nearest to the tomato (0, 5) and the lettuce (1, 6); nobody moved
    assert correct_advice(scene, start) == [
        "Agent 1 should pick up the tomato and chop it.",
        "Agent 1 should pick up the lettuce and chop it.",
        "Agent 0, stop standing still.",
        "Agent 1, stop standing still.",
        "Agent 2, stop standing still.",
    ]
    final = {key: np.array(value) for key, value in start[-1].items()}
    final["chops"] = np.array([3, 3, 0])  # both recipe foods chopped, the lettuce already plated
    final["plate_contents"] = np.zeros((2, 3), dtype=bool)
    final["plate_contents"][0, 1] = True
    assert correct_advice(scene, [final])[0] == "Agent 1, put the tomato on the plate."
    final["plate_contents"][0, 0] = True
    assert correct_advice(scene, [final])[0].endswith("should go to the delivery window.")
    final["delivered"] = np.array(True)
    assert correct_advice(scene, [final])[0] == "Well done, everyone. Be faster!"


def test_what_the_rule_parser_makes_of_each_quality(scene: Scene) -> None:
    states = rollout({"agent_0": 10, "agent_1": 10, "agent_2": 10}, 3)
    parser = RuleParser()
    correct = [spec for text in correct_advice(scene, states) for spec in parser.parse(text, scene)]
    assert {(s.template, getattr(s.params, "value", None)) for s in correct} >= {
        ("holding", 1.0),
        ("status", 1.0),
    }
    wrong = [spec for text in wrong_advice(scene, states) for spec in parser.parse(text, scene)]
    summary = {
        (s.template, s.agents, s.params.model_dump().get("b") or s.params.model_dump().get("item"))
        for s in wrong
    }
    assert ("proximity", (1,), "tomato") in summary  # told to keep away from a food the recipe needs
    assert ("holding", (1,), "onion") in summary  # told to fetch a food the recipe does not use
    assert any(s.template == "action" and s.params.value < 0 for s in wrong)  # "stop chopping"
    assert all(parser.parse(text, scene) == [] for text in IRRELEVANT)


def test_the_teacher_mixes_qualities_at_the_configured_rates(scene: Scene) -> None:
    states = rollout({"agent_0": 10, "agent_1": 10, "agent_2": 10}, 2)
    request = FeedbackRequest(1, scene, states=states)
    teacher = SimulatedSource(
        {"correct": 0.5, "wrong": 0.3, "irrelevant": 0.2}, per_phase=2000, rng=np.random.default_rng(1)
    )
    feedback = teacher.feedback(request)
    counts = Counter(f.quality for f in feedback)
    assert abs(counts["correct"] / 2000 - 0.5) < 0.04
    assert abs(counts["wrong"] / 2000 - 0.3) < 0.04
    assert abs(counts["irrelevant"] / 2000 - 0.2) < 0.04
    assert {f.text for f in feedback if f.quality == "correct"} == {correct_advice(scene, states)[0]}
    assert {f.text for f in feedback if f.quality == "wrong"} <= set(wrong_advice(scene, states))
    again = SimulatedSource(
        {"correct": 0.5, "wrong": 0.3, "irrelevant": 0.2}, per_phase=2000, rng=np.random.default_rng(1)
    )
    assert again.feedback(request) == feedback  # seeded: the same run, the same feedback
    only_wrong = SimulatedSource({"wrong": 1.0}, per_phase=5).feedback(request)
    assert {f.quality for f in only_wrong} == {"wrong"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rates": {"good": 1.0}}, "unknown qualities"),
        ({"rates": {"correct": -1.0, "wrong": 2.0}}, "rates must be >= 0"),
        ({"rates": {"correct": 0.0}}, "positive sum"),
        ({"per_phase": 0}, "per_phase must be >= 1"),
    ],
)
def test_the_teacher_refuses_bad_settings(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SimulatedSource(**kwargs)


def test_the_teacher_needs_the_true_state(scene: Scene) -> None:
    with pytest.raises(ValueError, match="needs the rollout's states"):
        SimulatedSource().feedback(FeedbackRequest(1, scene))

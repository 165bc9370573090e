"""LLMParser against a local OpenAI-compatible server: good answers, bad answers, slow and failing servers.

Whatever the server does, ``parse`` returns specs (the model's, repaired, or the RuleParser's) and
the log and the decision record show every failure.
"""

from __future__ import annotations

import logging

import pytest

import envs.overcooked as oc
from rlkit.m3hf import RuleParser, Scene
from rlkit.m3hf.parser_llm import LLMConfig, LLMParser, make_parser
from tests.openai_server import ScriptedChatServer, reply, slow, status

TEXT = "Agent 1 should go to the tomato."
GOOD = {
    "specs": [
        {"template": "distance", "agents": [1], "params": {"b": "tomato", "scale": 2.0}, "reason": "go"}
    ]
}


@pytest.fixture(scope="module")
def scene() -> Scene:
    return Scene.from_env(oc.parallel_env(layout="A", n_agents=3))


def parser_for(
    server: ScriptedChatServer, sleeps: list[float] | None = None, **overrides: object
) -> LLMParser:
    settings = {"model": "test-model", "base_url": server.base_url, "api_key": "test", "timeout_s": 2.0}
    settings |= {"api_retries": 2, "backoff_s": 0.001, "backoff_factor": 3.0} | overrides
    return LLMParser(LLMConfig(**settings), sleep=(sleeps.append if sleeps is not None else lambda s: None))


def rule_specs(scene: Scene) -> list:
    return RuleParser().parse(TEXT, scene)


@pytest.mark.server
def test_valid_output_becomes_specs_in_one_request(scene: Scene) -> None:
    with ScriptedChatServer([reply(GOOD)]) as server:
        parser = parser_for(server)
        [spec] = parser.parse(TEXT, scene)
    assert (spec.template, spec.agents, spec.params.b, spec.params.scale) == ("distance", (1,), "tomato", 2.0)
    [request] = server.requests
    assert request["model"] == "test-model"
    assert request["response_format"] == {"type": "json_object"}
    system, user = request["messages"]
    assert "1 = agent_1 (rose)" in system["content"] and "- proximity:" in system["content"]
    assert TEXT in user["content"]
    decision = parser.decisions[-1]
    assert (decision.parser, [a.outcome for a in decision.attempts]) == ("llm", ["ok"])


@pytest.mark.server
@pytest.mark.parametrize(
    ("bad", "outcome", "named"),
    [
        ("{'specs': [", "invalid_json", "Expecting property name"),
        (
            {"specs": [{"template": "distance", "agents": [1], "params": {"scale": 2.0}}]},
            "invalid_spec",
            "params.b",
        ),
        ({"specs": [{"template": "teleport", "agents": "all", "params": {}}]}, "invalid_spec", "template"),
        (
            {"specs": [{"template": "proximity", "agents": [0], "params": {"b": "tomato", "radius": 99}}]},
            "invalid_spec",
            "params.radius",
        ),
        (
            {"specs": [{"template": "distance", "agents": [1], "params": {"b": "oven"}}]},
            "invalid_spec",
            "'oven'",
        ),
        ({"specs": [{"template": "success", "agents": [7], "params": {}}]}, "invalid_spec", "agents"),
        ({"answer": "go to the tomato"}, "invalid_spec", "specs"),
    ],
)
def test_invalid_output_is_repaired_once_with_the_error(
    scene: Scene, caplog: pytest.LogCaptureFixture, bad: object, outcome: str, named: str
) -> None:
    with caplog.at_level(logging.WARNING), ScriptedChatServer([reply(bad), reply(GOOD)]) as server:
        parser = parser_for(server)
        specs = parser.parse(TEXT, scene)
    assert [s.params.scale for s in specs] == [2.0]  # the model's repaired answer, not the rule parser's
    first, repair = server.requests
    assert repair["messages"][:2] == first["messages"]
    assert repair["messages"][2]["role"] == "assistant"
    assert named in repair["messages"][3]["content"]  # the validation error names the field
    decision = parser.decisions[-1]
    assert [a.outcome for a in decision.attempts] == [outcome, "ok"]
    assert decision.reason == "valid output after repair"
    assert f"LLM output rejected ({outcome}, try 1)" in caplog.text


@pytest.mark.server
def test_output_still_invalid_after_the_repair_falls_back_to_the_rule_parser(
    scene: Scene, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING), ScriptedChatServer([reply("not json")]) as server:
        parser = parser_for(server)
        specs = parser.parse(TEXT, scene)
    assert len(server.requests) == 2  # the first answer and one repair, no more
    assert specs == rule_specs(scene)
    decision = parser.decisions[-1]
    assert decision.parser == "fallback" and decision.reason == "output still invalid after repair"
    assert [a.outcome for a in decision.attempts] == ["invalid_json", "invalid_json"]
    assert "try 1" in caplog.text and "try 2" in caplog.text
    assert "fell back to RuleParser" in caplog.text
    assert decision.to_json()["specs"] == [s.model_dump(mode="json") for s in specs]


@pytest.mark.server
def test_server_errors_are_retried_with_growing_backoff(
    scene: Scene, caplog: pytest.LogCaptureFixture
) -> None:
    sleeps: list[float] = []
    with (
        caplog.at_level(logging.WARNING),
        ScriptedChatServer([status(500), status(429), reply(GOOD)]) as server,
    ):
        parser = parser_for(server, sleeps)
        specs = parser.parse(TEXT, scene)
    assert len(server.requests) == 3
    assert sleeps == pytest.approx([0.001, 0.003])
    assert [s.params.scale for s in specs] == [2.0]
    outcomes = [(a.outcome, a.detail.split(":")[0]) for a in parser.decisions[-1].attempts]
    assert outcomes == [
        ("api_error", "InternalServerError"),
        ("api_error", "RateLimitError"),
        ("ok", "1 spec(s)"),
    ]
    assert "InternalServerError" in caplog.text and "RateLimitError" in caplog.text


@pytest.mark.server
def test_a_server_that_keeps_failing_gives_the_rule_parsers_specs(scene: Scene) -> None:
    with ScriptedChatServer([status(500)]) as server:
        parser = parser_for(server, api_retries=1)
        specs = parser.parse(TEXT, scene)
    assert len(server.requests) == 2
    assert specs == rule_specs(scene)
    decision = parser.decisions[-1]
    assert decision.parser == "fallback" and decision.reason.startswith("API failed: InternalServerError")


@pytest.mark.server
def test_a_client_error_is_not_retried(scene: Scene, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING), ScriptedChatServer([status(400)]) as server:
        specs = parser_for(server).parse(TEXT, scene)
    assert len(server.requests) == 1
    assert specs == rule_specs(scene)
    assert "LLM request failed (fatal), giving up: BadRequestError" in caplog.text


@pytest.mark.server
def test_a_reply_slower_than_the_timeout_is_retried(scene: Scene, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING), ScriptedChatServer([slow(1.0), reply(GOOD)]) as server:
        parser = parser_for(server, timeout_s=0.2)
        specs = parser.parse(TEXT, scene)
    assert [s.params.scale for s in specs] == [2.0]
    assert [a.outcome for a in parser.decisions[-1].attempts] == ["api_error", "ok"]
    assert "DeadlineExceeded: the request was cut off at its deadline (timeout_s=0.2)" in caplog.text


@pytest.mark.server
def test_json_schema_response_format_sends_the_spec_schema(scene: Scene) -> None:
    with ScriptedChatServer([reply({"specs": []})]) as server:
        assert parser_for(server, response_format="json_schema").parse("Nice weather.", scene) == []
    response_format = server.requests[0]["response_format"]
    assert response_format["type"] == "json_schema"
    assert "specs" in response_format["json_schema"]["schema"]["properties"]


def test_without_a_key_or_a_server_the_default_parser_is_the_rule_parser(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert isinstance(make_parser(), RuleParser)
    assert isinstance(make_parser(LLMConfig(base_url="http://127.0.0.1:9/v1")), LLMParser)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert isinstance(make_parser(), LLMParser)


class BrokenParser:
    def parse(self, text: str, scene: Scene) -> list:
        raise RuntimeError("broken on purpose")


@pytest.mark.server
def test_even_a_failing_fallback_leaves_training_running(
    scene: Scene, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING), ScriptedChatServer([status(503)]) as server:
        config = LLMConfig(base_url=server.base_url, api_key="test", api_retries=0, timeout_s=2.0)
        parser = LLMParser(config, fallback=BrokenParser())
        assert parser.parse(TEXT, scene) == []
    assert "fallback parser BrokenParser failed" in caplog.text
    assert parser.decisions[-1].attempts[-1].detail.startswith("fallback failed: RuntimeError")

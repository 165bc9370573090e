"""LLMParser against hostile HTTP: trickling and endless replies, gzip bombs, redirects off the origin.

Each parse ends in time (``timeout_s`` per request, ``deadline_s`` per parse, retries included),
holds at most about ``MAX_RESPONSE_BYTES`` of a reply in memory, sends nothing anywhere but the
configured origin, and falls back to the rule parser, with the named error in its record.
"""

from __future__ import annotations

import json
import time
import tracemalloc

import pytest

import envs.overcooked as oc
from rlkit.m3hf import RuleParser, Scene
from rlkit.m3hf.llm_http import MAX_RESPONSE_BYTES
from rlkit.m3hf.parser_llm import LLMConfig, LLMParser, ParseDecision
from tests.openai_server import (
    ScriptedChatServer,
    chunked,
    gzipped,
    raw,
    redirect,
    reply,
    response,
    trickle,
)

TEXT = "Agent 1 should go to the tomato."
GOOD = {"specs": [{"template": "distance", "agents": [1], "params": {"b": "tomato", "scale": 2.0}}]}
SLACK_S = 0.5  # what a cut-off request may take past its deadline (thread wake-up, a loaded CI machine)
BOMB_BYTES = 200_000_000  # decoded; about 200 kB sent


@pytest.fixture(scope="module")
def scene() -> Scene:
    return Scene.from_env(oc.parallel_env(layout="A", n_agents=3))


def parser_for(server: ScriptedChatServer, **overrides: object) -> LLMParser:
    settings = {"model": "m", "base_url": server.base_url, "api_key": "test", "timeout_s": 2.0}
    settings |= {"api_retries": 2, "backoff_s": 0.001} | overrides
    return LLMParser(LLMConfig(**settings), sleep=time.sleep)


def timed_parse(parser: LLMParser, scene: Scene) -> tuple[ParseDecision, float]:
    start = time.monotonic()
    decision = parser.parse_recorded(TEXT, scene)
    return decision, time.monotonic() - start


def fell_back_with(decision: ParseDecision, scene: Scene, detail: str) -> bool:
    return (
        decision.parser == "fallback"
        and decision.specs == RuleParser().parse(TEXT, scene)
        and decision.attempts[-1].detail.startswith(detail)
    )


@pytest.mark.server
@pytest.mark.parametrize("headers_too", [True, False], ids=["headers-and-body", "body"])
def test_a_server_trickling_a_byte_each_0_2_s_is_cut_off_at_timeout_s(
    scene: Scene, headers_too: bool
) -> None:
    with ScriptedChatServer([trickle(0.2, headers_too=headers_too)]) as server:
        decision, elapsed = timed_parse(parser_for(server, timeout_s=1.0, api_retries=0), scene)
    assert 1.0 <= elapsed <= 1.0 + SLACK_S, elapsed
    cut = "DeadlineExceeded: the request was cut off at its deadline (timeout_s=1)"
    assert fell_back_with(decision, scene, cut)


@pytest.mark.server
def test_the_parse_deadline_holds_across_retries_and_repairs(scene: Scene) -> None:
    with ScriptedChatServer([trickle(0.2)]) as server:
        parser = parser_for(server, timeout_s=1.0, api_retries=5, deadline_s=2.5)
        decision, elapsed = timed_parse(parser, scene)
    assert 2.5 <= elapsed <= 2.5 + SLACK_S, elapsed
    assert len(server.requests) == 3  # 1 s, 1 s, then the 0.5 s the parse had left
    limits = [a.detail.split("(")[-1] for a in decision.attempts]
    assert limits == ["timeout_s=1)", "timeout_s=1)", "deadline_s=2.5 of the parse)", "deadline_s=2.5)"]
    assert fell_back_with(decision, scene, "DeadlineExceeded: the parse passed its deadline")

    with ScriptedChatServer([reply("not json"), trickle(0.2)]) as server:  # the repair runs out of time
        decision, elapsed = timed_parse(parser_for(server, timeout_s=5.0, deadline_s=1.0), scene)
    assert 1.0 <= elapsed <= 1.0 + SLACK_S, elapsed
    assert [a.outcome for a in decision.attempts[:2]] == ["invalid_json", "api_error"]
    assert decision.parser == "fallback"


def peak_bytes_of(parse: object) -> tuple[ParseDecision, int]:
    tracemalloc.start()
    try:
        decision = parse()  # type: ignore[operator]
        return decision, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.server
def test_an_endless_chunked_body_is_cut_off_at_the_byte_cap_and_not_retried(scene: Scene) -> None:
    with ScriptedChatServer([chunked(None)]) as server:
        parser = parser_for(server)
        decision, peak = peak_bytes_of(lambda: parser.parse_recorded(TEXT, scene))
    cap = f"ResponseTooLarge: the response body passed {MAX_RESPONSE_BYTES} bytes as sent; cut off"
    assert fell_back_with(decision, scene, cap)
    assert len(server.requests) == 1  # the same server would send the same
    assert server.bytes_sent < 32 * MAX_RESPONSE_BYTES  # the cap, and what the sockets buffer
    assert peak < 8 * MAX_RESPONSE_BYTES, peak


@pytest.mark.server
def test_a_content_length_past_the_cap_is_refused_before_the_body_is_read(scene: Scene) -> None:
    with ScriptedChatServer([raw(b" " * (MAX_RESPONSE_BYTES + 1))]) as server:
        decision = parser_for(server).parse_recorded(TEXT, scene)
    assert fell_back_with(decision, scene, f"ResponseTooLarge: the response's Content-Length is "
                                           f"{MAX_RESPONSE_BYTES + 1} bytes; at most {MAX_RESPONSE_BYTES}")


@pytest.mark.server
def test_a_gzip_bomb_is_refused_once_its_decoded_size_passes_the_cap(scene: Scene) -> None:
    with ScriptedChatServer([gzipped(json.dumps(GOOD), pad_bytes=BOMB_BYTES)]) as server:
        parser = parser_for(server)
        decision, peak = peak_bytes_of(lambda: parser.parse_recorded(TEXT, scene))
    assert server.bytes_sent < 300_000  # the bomb is small as sent
    assert fell_back_with(
        decision, scene, f"ResponseTooLarge: the response body passed {MAX_RESPONSE_BYTES} bytes as decoded"
    )
    assert len(server.requests) == 1
    assert peak < 8 * MAX_RESPONSE_BYTES, peak


@pytest.mark.server
def test_a_gzipped_answer_within_the_cap_is_decoded_and_used(scene: Scene) -> None:
    with ScriptedChatServer([gzipped(json.dumps(GOOD), pad_bytes=MAX_RESPONSE_BYTES // 2)]) as server:
        decision = parser_for(server).parse_recorded(TEXT, scene)
    assert decision.parser == "llm" and [s.params.scale for s in decision.specs] == [2.0]


@pytest.mark.server
@pytest.mark.parametrize(
    ("encoding", "body", "named"),
    [
        ("br", b"\x0b\x02\x80{}\x03", "UnreadableResponse: the response is in Content-Encoding 'br'"),
        ("gzip, gzip", b"", "UnreadableResponse: the response is in Content-Encoding 'gzip, gzip'"),
        ("gzip", b"not gzip at all", "UnreadableResponse: the compressed response does not decode"),
    ],
)
def test_a_body_in_an_encoding_not_decoded_here_is_refused(
    scene: Scene, encoding: str, body: bytes, named: str
) -> None:
    with ScriptedChatServer([response(200, {"Content-Encoding": encoding}, body)]) as server:
        decision = parser_for(server).parse_recorded(TEXT, scene)
    assert fell_back_with(decision, scene, named)
    assert len(server.requests) == 1


@pytest.mark.server
@pytest.mark.parametrize("code", [302, 307, 308])
def test_a_redirect_to_another_port_is_not_followed(scene: Scene, code: int) -> None:
    with (
        ScriptedChatServer([reply(GOOD)]) as elsewhere,
        ScriptedChatServer([redirect(code, f"{elsewhere.base_url}/chat/completions")]) as server,
    ):
        decision = parser_for(server).parse_recorded(TEXT, scene)
    assert elsewhere.hits == [] and elsewhere.requests == []  # the prompt never left the origin
    assert len(server.requests) == 1
    assert fell_back_with(decision, scene, "OffOriginRequest: refused a request to http://127.0.0.1:")


@pytest.mark.server
def test_a_redirect_within_the_origin_is_followed(scene: Scene) -> None:
    with ScriptedChatServer([redirect(307, "/v1/chat/completions"), reply(GOOD)]) as server:
        decision = parser_for(server).parse_recorded(TEXT, scene)
    assert len(server.requests) == 2
    assert decision.parser == "llm" and [s.params.scale for s in decision.specs] == [2.0]


@pytest.mark.server
@pytest.mark.parametrize("agents", [[True], ["2"], [1.0]])
def test_agents_that_are_not_integers_are_an_invalid_spec(scene: Scene, agents: list[object]) -> None:
    bad = {"specs": [{"template": "success", "agents": agents, "params": {}}]}
    with ScriptedChatServer([reply(bad), reply(GOOD)]) as server:
        decision = parser_for(server).parse_recorded(TEXT, scene)
    assert [a.outcome for a in decision.attempts] == ["invalid_spec", "ok"]
    assert "specs.0.agents" in decision.attempts[0].detail
    assert "valid integer" in server.requests[1]["messages"][3]["content"]


class SurrogateParser:
    def parse(self, text: str, scene: Scene) -> list:
        raise RuntimeError(f"cannot read {text!s}")


@pytest.mark.server
def test_a_record_of_a_text_with_lone_surrogates_writes_as_utf8(scene: Scene) -> None:
    text = "hurry \ud800 up \udfff"
    with ScriptedChatServer([reply("\ud800 not json")]) as server:
        config = LLMConfig(base_url=server.base_url, api_key="test", api_retries=0, timeout_s=2.0)
        decision = LLMParser(config, fallback=SurrogateParser()).parse_recorded(text, scene)
    record = decision.to_json()
    encoded = json.dumps(record, ensure_ascii=False).encode("utf-8")  # raised before the fix
    assert record["text"] == "hurry ? up ?"
    assert record["attempts"][-1]["detail"] == "fallback failed: RuntimeError: cannot read hurry ? up ?"
    assert json.loads(encoded)["parser"] == "fallback"

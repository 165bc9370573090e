"""LLMParser against a hostile OpenAI-compatible server: whatever it answers, ``parse`` ends in valid specs.

1,000 seeded parses (``tests.openai_server.hostile_replies``: deep nesting up to 50,000 levels,
NaN / Infinity / 1e400, lone surrogates in text, keys and raw content, answers up to 3 MB (past
the response byte cap), wrong shapes, garbage, and bodies that are not chat completions at all).
Each parse must return a list of specs that validate again against the scene and encode as UTF-8
JSON, and every refused answer must be in the decision record. Before the fix, a tenth of them
ended in RecursionError.

Then hostile HTTP (``hostile_http``: trickled replies, endless and oversized chunked bodies, gzip
bombs, redirects within and off the origin): each parse ends within its deadline, and nothing
reaches another port.
"""

from __future__ import annotations

import json
import logging
import time

import numpy as np
import pytest

import envs.overcooked as oc
from rlkit.m3hf import RewardSpec, Scene
from rlkit.m3hf.parser_llm import MAX_DEPTH, LLMConfig, LLMParser
from rlkit.m3hf.specs import validate_specs
from tests.openai_server import (
    Reply,
    ScriptedChatServer,
    chunked,
    gzipped,
    hostile_replies,
    raw,
    redirect,
    reply,
    trickle,
)

N_PARSES = 1_000
TEXTS = [
    "Agent 1 should go to the tomato.",
    "hurry \ud800",
    "",
    "[" * 5_000,
    "stay near the knife " * 200,
    "\x00\x01 chop\u202e the onion",
    '{"specs": [{"template": "success", "agents": "all"}]}',
]


@pytest.fixture(scope="module")
def scene() -> Scene:
    return Scene.from_env(oc.parallel_env(layout="A", n_agents=3))


def parser_for(server: ScriptedChatServer, **overrides: object) -> LLMParser:
    settings = {"model": "m", "base_url": server.base_url, "api_key": "test", "timeout_s": 5.0}
    settings |= {"api_retries": 0, "repair_retries": 1} | overrides
    return LLMParser(LLMConfig(**settings), sleep=lambda s: None)


def assert_valid(specs: object, scene: Scene) -> None:
    assert isinstance(specs, list)
    assert all(isinstance(spec, RewardSpec) for spec in specs)
    dumped = [spec.model_dump(mode="json") for spec in specs]
    json.dumps(dumped, ensure_ascii=False, allow_nan=False).encode("utf-8")  # storable anywhere
    assert validate_specs(dumped, scene) == specs


@pytest.mark.server
def test_a_hostile_server_never_crashes_the_parser_nor_yields_invalid_specs(scene: Scene) -> None:
    rng = np.random.default_rng(16)
    replies = hostile_replies(rng, 2 * N_PARSES)
    crashes: list[str] = []
    outcomes: dict[str, int] = {}
    start = time.perf_counter()
    logging.getLogger("rlkit.m3hf").setLevel(logging.ERROR)  # 1,000 fallbacks are not worth formatting
    try:
        with ScriptedChatServer(replies) as server:
            parser = parser_for(server)
            for k in range(N_PARSES):
                text = TEXTS[k % len(TEXTS)]
                try:
                    specs = parser.parse(text, scene)
                except Exception as error:  # noqa: BLE001 - counted, and the first ones shown
                    crashes.append(f"{k}: {type(error).__name__}: {str(error)[:200]}")
                    continue
                assert_valid(specs, scene)
                decision = parser.decisions[-1]
                assert decision.specs == specs and decision.attempts
                for attempt in decision.attempts:
                    outcomes[attempt.outcome] = outcomes.get(attempt.outcome, 0) + 1
    finally:
        logging.getLogger("rlkit.m3hf").setLevel(logging.NOTSET)
    elapsed = time.perf_counter() - start
    assert crashes == [], f"{len(crashes)} of {N_PARSES} parses crashed: {crashes[:5]}"
    assert len(parser.decisions) == N_PARSES
    # The mix reached every way of failing, and the valid answers still got through.
    assert {"ok", "api_error", "invalid_json", "invalid_spec"} <= set(outcomes), outcomes
    assert sum(d.parser == "llm" for d in parser.decisions) >= N_PARSES // 20
    assert elapsed < 60, f"{elapsed:.1f} s"


@pytest.mark.server
@pytest.mark.parametrize(
    ("answer", "named"),
    [
        ("[" * 5_000, f"nested 5000 deep; at most {MAX_DEPTH}"),
        ('{"specs": [{"template": "distance", "agents": [0], "params": {"scale": NaN}}]}', "NaN is not"),
        ('{"specs": [{"template": "proximity", "agents": [0], "params": {"bonus": -Infinity}}]}', "-Inf"),
        ('{"specs": [], "pad": "' + "x" * 70_000 + '"}', "characters long; at most 64000"),
    ],
)
def test_a_hostile_answer_is_refused_by_name_and_repaired(scene: Scene, answer: str, named: str) -> None:
    good = {"specs": [{"template": "success", "agents": "all", "params": {}}]}
    with ScriptedChatServer([reply(answer), reply(good)]) as server:
        parser = parser_for(server)
        [spec] = parser.parse("deliver", scene)
    assert spec.template == "success"
    first, second = parser.decisions[-1].attempts
    assert (first.outcome, second.outcome) == ("invalid_json", "ok")
    assert named in first.detail
    repair = server.requests[1]["messages"]
    assert len(repair[2]["content"]) <= 4_000  # a huge answer is not echoed back whole
    assert named in repair[3]["content"]


@pytest.mark.server
def test_lone_surrogates_in_the_text_or_the_answer_never_reach_the_wire(scene: Scene) -> None:
    key_surrogate = '{"specs": [{"\\ud800": 1, "template": "success", "agents": "all"}]}'
    with ScriptedChatServer([reply("\ud800 not json \udfff"), reply(key_surrogate)]) as server:
        parser = parser_for(server, repair_retries=2)
        specs = parser.parse("hurry \ud800", scene)
    assert [s.template for s in specs] == ["time_penalty"]  # the rule parser's, on the same text
    assert parser.decisions[-1].parser == "fallback"
    assert len(server.requests) == 3  # the answer, then two repairs, each sent as valid UTF-8
    sent = json.dumps(server.requests, ensure_ascii=False)
    assert "\ud800" not in sent and "\udfff" not in sent and "?" in sent


@pytest.mark.server
@pytest.mark.parametrize(
    "body",
    [
        '{"choices": ' + "[" * 5_000 + "]" * 5_000 + "}",
        '{"id": "x", "choices": [{"index": 0, "message": {"role": "assistant", "content": {"specs": []}}}]}',
        '{"choices": "yes"}',
        b"\xff\xfe not utf-8",
    ],
)
def test_a_reply_that_is_not_a_chat_completion_is_a_failed_request(scene: Scene, body: str | bytes) -> None:
    with ScriptedChatServer([raw(body)]) as server:
        parser = parser_for(server, api_retries=2)
        specs = parser.parse("Agent 1 should go to the tomato.", scene)
    assert [s.template for s in specs] == ["distance"]
    decision = parser.decisions[-1]
    assert decision.parser == "fallback" and decision.reason.startswith("API failed")
    assert len(server.requests) == 1  # not retried: the same server would send the same


def test_importing_the_parser_does_not_load_the_openai_sdk() -> None:
    import subprocess
    import sys

    code = "import sys, rlkit.m3hf.parser_llm, rlkit.m3hf.run_config; print('openai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


VALID = json.dumps({"specs": [{"template": "success", "agents": "all", "params": {}}]})


def hostile_http(rng: np.random.Generator, n: int, elsewhere: str) -> list[Reply]:
    """``n`` seeded hostile HTTP replies, valid answers among them (some gzipped, some redirected)."""
    makers = [
        lambda: reply(VALID),
        lambda: trickle(0.05, VALID, headers_too=bool(rng.integers(2))),
        lambda: chunked(None),
        lambda: chunked(int(rng.integers(1_000_001, 3_000_000))),
        lambda: gzipped(VALID, pad_bytes=int(rng.choice([0, 500_000, 5_000_000]))),
        lambda: redirect(int(rng.choice([302, 307, 308])), f"{elsewhere}/chat/completions"),
        lambda: redirect(307, "/v1/chat/completions"),
        lambda: raw(b" " * 2_000_000),
    ]
    return [makers[int(rng.integers(len(makers)))]() for _ in range(n)]


@pytest.mark.server
def test_hostile_http_never_holds_a_parse_past_its_deadline_nor_leaves_the_origin(scene: Scene) -> None:
    deadline_s, slack_s, n_parses = 0.6, 0.5, 60
    rng = np.random.default_rng(36)
    details: list[str] = []
    slowest = 0.0
    logging.getLogger("rlkit.m3hf").setLevel(logging.ERROR)
    try:
        with ScriptedChatServer([reply(VALID)]) as elsewhere:
            with ScriptedChatServer(hostile_http(rng, 3 * n_parses, elsewhere.base_url)) as server:
                parser = parser_for(server, timeout_s=0.3, deadline_s=deadline_s, api_retries=1)
                for _ in range(n_parses):
                    start = time.monotonic()
                    specs = parser.parse("deliver", scene)
                    slowest = max(slowest, time.monotonic() - start)
                    assert_valid(specs, scene)
                    details += [a.detail.split(":")[0] for a in parser.decisions[-1].attempts]
    finally:
        logging.getLogger("rlkit.m3hf").setLevel(logging.NOTSET)
    assert slowest <= deadline_s + slack_s, slowest
    assert elsewhere.hits == []
    assert {"DeadlineExceeded", "ResponseTooLarge", "OffOriginRequest", "1 spec(s)"} <= set(details), details

"""The RuleParser on 2,400 seeded hostile texts: it never raises and every spec it gives is valid.

Texts mix the parser's own words (agents, colours, verbs, entities, negations) with lone
surrogates, NUL and control characters, right-to-left marks, regex syntax, digits past the
agent count, and lengths up to 40,000 characters. Before the fix, a lone surrogate ("hurry
\\ud800") raised pydantic's ValidationError out of ``parse``.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

import envs.overcooked as oc
from rlkit.m3hf import RewardSpec, RuleParser, Scene
from rlkit.m3hf.specs import validate_specs

N_TEXTS = 2_400
WORDS = (
    "agent 0 agent 1 agent_2 agent 9 agents 1 and 2 player 7 green blue rose pink red first one "
    "second agent everyone team all it they should go to stay near keep away from avoid chop cut "
    "slice put on plate pick up grab hold deliver serve hurry faster too slow wander idle lazy "
    "standing still stop don't never no more tomato lettuce onion plate plate 2 knife knife 2 "
    "cutting board delivery window and then but also , . ! ? ; \n"
).split(" ")
ODD = [
    "\ud800", "\udfff", "\ud83d", "\x00", "\x07", "\u202e", "\u200b", "\ufeff", "\U0001f345",
    "(.*)+", "\\b", "[[[", "{{", "%s", "%(x)s", "'", '"', "\t", "\r\n", "é", "İ", "ß", "\u0301",
    "9" * 30, "-1", "1e400", "NaN",
]


def hostile_text(rng: np.random.Generator) -> str:
    kind = int(rng.choice(5, p=[0.3, 0.2, 0.03, 0.27, 0.2]))
    n = int(rng.integers(0, 40))
    if kind == 0:  # the parser's words with odd characters between them
        tokens = rng.choice(WORDS + ODD, size=n)
    elif kind == 1:  # random code points, surrogates included
        return "".join(chr(int(c)) for c in rng.integers(0, 0x110000, size=n))
    elif kind == 2:  # long: one word repeated (the regexes must stay fast)
        return (str(rng.choice(WORDS)) + " ") * int(rng.choice([1_000, 5_000, 10_000]))
    elif kind == 3:  # a sentence per word, odd separators
        tokens = [str(rng.choice(WORDS)) + str(rng.choice(ODD + [".", "!"])) for _ in range(n)]
    else:
        tokens = rng.choice(WORDS, size=n)
    return " ".join(str(t) for t in tokens)


@pytest.fixture(scope="module")
def scene() -> Scene:
    return Scene.from_env(oc.parallel_env(layout="A", n_agents=3))


def test_the_rule_parser_never_raises_and_gives_only_valid_specs(scene: Scene) -> None:
    rng = np.random.default_rng(16)
    parser = RuleParser()
    crashes: list[str] = []
    n_specs = 0
    start = time.perf_counter()
    for k in range(N_TEXTS):
        text = hostile_text(rng)
        try:
            specs = parser.parse(text, scene)
        except Exception as error:  # noqa: BLE001 - counted, the first ones shown
            crashes.append(f"{k}: {text[:60]!r}: {type(error).__name__}: {str(error)[:150]}")
            continue
        assert all(isinstance(spec, RewardSpec) for spec in specs)
        dumped = [spec.model_dump(mode="json") for spec in specs]
        json.dumps(dumped, ensure_ascii=False, allow_nan=False).encode("utf-8")
        assert validate_specs(dumped, scene) == specs
        assert parser.parse(text, scene) == specs if k % 50 == 0 else True  # deterministic
        n_specs += len(specs)
    elapsed = time.perf_counter() - start
    assert crashes == [], f"{len(crashes)} of {N_TEXTS} texts raised: {crashes[:5]}"
    assert n_specs > N_TEXTS // 4  # the words were understood, not just survived
    assert elapsed < 30, f"{elapsed:.1f} s"


@pytest.mark.parametrize("text", ["hurry \ud800", "\udfff chop the onion", "agent 1 \ud83d go to the tomato"])
def test_a_lone_surrogate_is_replaced_not_raised(scene: Scene, text: str) -> None:
    [spec] = RuleParser().parse(text, scene)
    assert "?" in spec.reason or spec.reason.isascii()
    spec.model_dump_json()  # valid Unicode: storable


def test_only_the_first_characters_of_a_huge_text_are_read(scene: Scene) -> None:
    start = time.perf_counter()
    specs = RuleParser().parse("hurry. " + "stay " * 100_000 + " near the knife", scene)
    assert [s.template for s in specs] == ["time_penalty"]  # the tail past the limit is not read
    assert time.perf_counter() - start < 2.0

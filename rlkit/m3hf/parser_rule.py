"""``RuleParser``: deterministic, offline feedback parsing — the default without an LLM, and its fallback.

The text is cut into sentences, and each sentence into clauses ("pick up the tomato and chop
it"). Agents are recognised by name ("agent 1", "agent_1"), colour ("the green one"; the colours
the video draws) or team words ("everyone", "team", "all of you"); a sentence naming no agent
concerns the agents of the previous sentence when it opens with a pronoun ("It should..."), else
the whole team. Each clause maps one verb phrase to one template:

| words | template |
| --- | --- |
| faster, hurry, too slow, speed up | ``time_penalty`` |
| deliver, serve | ``success`` |
| chop / cut / slice (+ ingredient) | ``status`` chopped (no ingredient: ``action`` chop) |
| put / place ... on a plate, plate (+ ingredient) | ``status`` on_plate |
| pick up, grab, get, take, hold, carry, fetch (+ item) | ``holding`` |
| stay near / close to / next to / by, wait at, guard (+ entity) | ``proximity`` radius 1 |
| stay away from, keep away from | ``proximity`` with a negative bonus |
| go to, move to, head to, walk to, approach, closer to (+ entity) | ``distance`` |
| wandering, moving around, wasting moves | ``action_cost`` |
| standing still, idle, doing nothing, lazy | ``action`` stay, negative |

Odd text never raises: lone surrogates (which no UTF-8 file or database can hold) become ``?``
(``clean_text``, which the ``LLMParser`` uses too) and only the first ``MAX_TEXT_CHARS`` characters
are read.

"stop", "don't", "never", "avoid", "no more" flip the sign where a template has one ("stop
picking up the onion" discourages holding it). Words that match nothing give no spec. Entity
words: tomato, lettuce, onion, plate (plate 1 / 2, first / second), knife or cutting board (1 /
2), delivery (counter, window, pass), another agent by name or colour ("stay near the blue one").
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rlkit.m3hf.scene import Scene
from rlkit.m3hf.specs import RewardSpec

log = logging.getLogger(__name__)

#: Feedback is a few sentences; past this the rest of a text is not read (the regexes stay linear).
MAX_TEXT_CHARS = 4_000

_SENTENCES = re.compile(r"[.!?;\n]+")
_CLAUSES = re.compile(r",|\band then\b|\bthen\b|\band\b|\bbut\b|\balso\b")
_PRONOUN_START = re.compile(r"^\s*(it|he|she|they|this agent|that agent|the same agent)\b")
_TEAM = re.compile(r"\b(everyone|everybody|all agents|all of you|you all|the team|team|both|all)\b")
_NEGATION = re.compile(r"\b(stop|don'?t|do not|never|avoid|no more|quit|shouldn'?t|should not|less)\b")
_COLOUR_ALIASES = {"pink": "rose", "red": "rose"}
_ORDINALS = {"first": 0, "second": 1, "third": 2, "1st": 0, "2nd": 1, "3rd": 2}


def _compiled(table: tuple[tuple[str, str], ...]) -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple((re.compile(pattern), name) for pattern, name in table)


# (pattern, rule) in priority order; the first rule whose words occur in a clause decides it.
_RULES = _compiled(
    (
        (r"\b(faster|hurry|too slow|slowly|speed up|quicker|quickly)\b", "faster"),
        (r"\b(stay|keep|move|get|go) away from\b|\bavoid\b", "avoid"),
        (r"\b(stay|wait|remain|stand|keep)\b.*\b(near|close to|next to|by|at|beside|around)\b|guard", "near"),
        (r"\b(wander\w*|moving around|running around|walking around|wast\w* moves?|random mov\w*)", "energy"),
        (r"\b(stand\w* still|idl\w*|do\w* nothing|lazy|just stand\w*|standing around)\b", "idle"),
        (r"\b(deliver\w*|serv\w*)\b", "deliver"),
        (r"\b(chop\w*|cut\w*|slic\w*)\b", "chop"),
        (r"\b(put|place|plac\w*|putting)\b.*\bplate\b|\bplat(e|ing)\b.*\b(tomato|lettuce|onion)", "plate"),
        (r"\b(pick\w* up|grab\w*|get\w*|tak\w*|hold\w*|carr\w*|fetch\w*|bring\w*|collect\w*)\b", "hold"),
        (r"\b(go|goes|going|mov\w*|head\w*|walk\w*|approach\w*|closer|come)\b", "goto"),
    )
)
_ENTITY_WORDS = _compiled(
    (
        (r"\btomato(es)?\b", "tomato"),
        (r"\blettuces?\b", "lettuce"),
        (r"\bonions?\b", "onion"),
        (r"\b(plate\s*_?\s*2|second plate|other plate)\b", "plate_2"),
        (r"\b(plate\s*_?\s*1|first plate|plates?|dish(es)?)\b", "plate_1"),
        (r"\b(knife\s*_?\s*2|second knife|other knife|cutting board\s*2)\b", "knife_2"),
        (r"\b(knife\s*_?\s*1|first knife|knife|knives|cutting boards?|board)\b", "knife_1"),
        (r"\b(delivery|deliver\w*|window|serving|pass)\b", "delivery"),
    )
)


@dataclass(frozen=True)
class _Mention:
    start: int
    agents: tuple[int, ...]


class RuleParser:
    """Deterministic keyword parser: the same text and scene always give the same specs."""

    def parse(self, text: str, scene: Scene) -> list[RewardSpec]:
        specs: list[RewardSpec] = []
        previous: str | tuple[int, ...] = "all"
        if len(text) > MAX_TEXT_CHARS:
            log.warning("rule parser: %d characters of feedback, reading %d", len(text), MAX_TEXT_CHARS)
        for sentence in _SENTENCES.split(clean_text(text[:MAX_TEXT_CHARS]).lower()):
            if not sentence.strip():
                continue
            mentions = _agent_mentions(sentence, scene)
            subject = _subject(sentence, mentions, previous)
            previous = subject
            referent: str | None = None
            for clause in _CLAUSES.split(sentence):
                clause_specs, referent = _clause_specs(clause, sentence, subject, mentions, referent, scene)
                specs += [spec for spec in clause_specs if not _repeats(spec, specs)]
        dumped = [spec.model_dump(mode="json") for spec in specs]
        log.info("rule parser: %d spec(s) from %r: %s", len(specs), text, dumped)
        return specs


def clean_text(text: str) -> str:
    """``text`` with lone surrogates (``"\\ud800"`` from a JSON escape) replaced by ``?``: a spec's
    ``reason`` must be valid Unicode, to validate and to be written anywhere."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _agent_mentions(sentence: str, scene: Scene) -> list[_Mention]:
    """Every place a sentence names agents, in order."""
    mentions: list[_Mention] = []
    numbers = r"(?:agents?|players?|chefs?|robots?)\s*_?\s*(\d(?:\s*(?:,|and|&)\s*\d)*)"
    for match in re.finditer(numbers, sentence):
        indices = tuple(int(d) for d in re.findall(r"\d", match.group(1)))
        mentions.append(_Mention(match.start(), tuple(i for i in indices if i < scene.n_agents)))
    colours = {colour: a for a, colour in enumerate(scene.agent_colours)}
    colours.update({alias: colours[c] for alias, c in _COLOUR_ALIASES.items() if c in colours})
    for colour, agent in colours.items():
        for match in re.finditer(rf"\b{colour}\b", sentence):
            mentions.append(_Mention(match.start(), (agent,)))
    for word, agent in _ORDINALS.items():
        for match in re.finditer(rf"\b{word} (?:agent|player|chef|one)\b", sentence):
            if agent < scene.n_agents:
                mentions.append(_Mention(match.start(), (agent,)))
    for match in _TEAM.finditer(sentence):
        mentions.append(_Mention(match.start(), tuple(range(scene.n_agents))))
    return sorted((m for m in mentions if m.agents), key=lambda m: m.start)


def _subject(
    sentence: str, mentions: Sequence[_Mention], previous: str | tuple[int, ...]
) -> str | tuple[int, ...]:
    """The agents a sentence is about: those named before its first verb or addressed in a clause
    of their own ("..., agent 2"), else the previous sentence's after a pronoun, else all."""
    verb = min((m.start() for pattern, _ in _RULES if (m := pattern.search(sentence))), default=len(sentence))
    named = sorted({a for m in mentions if m.start < verb for a in m.agents})
    if not named:
        offset = 0
        for clause in _CLAUSES.split(sentence):
            start, offset = sentence.find(clause, offset), sentence.find(clause, offset) + len(clause)
            if not any(pattern.search(clause) for pattern, _ in _RULES):
                named += [a for m in mentions if start <= m.start < offset for a in m.agents]
        named = sorted(set(named))
    if named:
        return tuple(named)
    return previous if _PRONOUN_START.match(sentence) else "all"


def _clause_specs(
    clause: str,
    sentence: str,
    subject: str | tuple[int, ...],
    mentions: Sequence[_Mention],
    referent: str | None,
    scene: Scene,
) -> tuple[list[RewardSpec], str | None]:
    """A clause's specs ("faster" is an adverb beside one verb rule) and the entity it names,
    for "it" in the next clause."""
    entity = _entity(clause, sentence, subject, mentions, scene) or (
        referent if re.search(r"\b(it|them|that|one)\b", clause) else None
    )
    sign = -1.0 if _NEGATION.search(clause) else 1.0
    rules = [rule for pattern, rule in _RULES if pattern.search(clause)]
    verbs = [rule for rule in rules if rule != "faster"]
    chosen = [rule for rule in rules[:1] if rule == "faster"] + verbs[:1]
    agents = "all" if subject == "all" or len(subject) == scene.n_agents else subject
    specs = []
    for rule in chosen:
        params = _params(rule, entity, sign, scene)
        if params is not None:
            template, values = params
            spec = RewardSpec(template=template, agents=agents, params=values, reason=clause.strip()[:500])
            scene.check(spec)
            specs.append(spec)
    return specs, entity or referent


def _entity(
    clause: str, sentence: str, subject: str | tuple[int, ...], mentions: Sequence[_Mention], scene: Scene
) -> str | None:
    """The first entity a clause names: an item or fixture word, or an agent other than the subject."""
    # Ties at one place go to the more specific word ("knife 2" over "knife"): list order.
    found = [
        (hit.start(), k, name)
        for k, (pattern, name) in enumerate(_ENTITY_WORDS)
        if (hit := pattern.search(clause))
    ]
    offset = sentence.find(clause)
    for mention in mentions:
        inside = offset <= mention.start < offset + len(clause)
        others = [a for a in mention.agents if subject == "all" or a not in subject]
        if inside and len(mention.agents) == 1 and others:
            found.append((mention.start - offset, 0, scene.agent_names[others[0]]))
    found = [hit for hit in found if hit[2] in scene.entity_index]
    return min(found)[2] if found else None


def _params(rule: str, entity: str | None, sign: float, scene: Scene) -> tuple[str, dict[str, object]] | None:
    """Template name and parameters for a rule, or None when the rule needs an entity it lacks."""
    kind = scene.entity_kinds.get(entity, "") if entity else ""
    if rule == "faster":
        return "time_penalty", {"rate": 0.1}
    if rule == "energy":
        return "action_cost", {"cost": 0.1}
    if rule == "idle":
        return "action", {"action": scene.idle_action, "value": -1.0}
    if rule == "deliver":
        return "success", {"bonus": 10.0}
    if rule == "chop":
        if kind == "ingredient":
            return "status", {"entity": entity, "status": "chopped", "value": sign}
        return ("action", {"action": "chop", "value": sign}) if "chop" in scene.action_names else None
    if rule == "plate" and kind == "ingredient":
        return "status", {"entity": entity, "status": "on_plate", "value": sign}
    if rule == "hold" and kind in ("ingredient", "plate"):
        return "holding", {"item": entity, "value": sign}
    if entity is None:
        return None
    if rule == "avoid" or (rule in ("near", "goto") and sign < 0):
        return "proximity", {"b": entity, "radius": 1, "bonus": -1.0}
    if rule == "near":
        return "proximity", {"b": entity, "radius": 1, "bonus": 1.0}
    if rule in ("goto", "hold", "plate"):
        return "distance", {"b": entity, "scale": 1.0}
    return None


def _repeats(spec: RewardSpec, specs: Sequence[RewardSpec]) -> bool:
    """The same function for the same agents again (its words may differ)."""
    return any((s.template, s.agents, s.params) == (spec.template, spec.agents, spec.params) for s in specs)

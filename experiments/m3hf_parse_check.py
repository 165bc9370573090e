"""Feedback texts the parser's tests never saw, parsed and judged against their writer's meaning.

``experiments/data/m3hf_paraphrases.yaml`` holds the texts (written without the rule parser's
keyword table), each with its quality (correct / wrong / irrelevant) and the specs a faithful
parse contains (``wants``, signatures such as ``holding:tomato`` or ``action:stay-``; its header
says how they read). A parse is

- ``correct``: every required want met and every spec meets some want (for an irrelevant text:
  no spec at all);
- ``partly``: some spec meets a want, but a required want is missed or a spec meets none;
- ``wrong``: specs, none meeting a want (for an irrelevant text: any spec);
- ``refused``: no spec for a text that wants some.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from rlkit.m3hf.specs import CompositeParams, RewardSpec

VERDICTS = ("correct", "partly", "wrong", "refused")
_KEY_FIELDS = {"distance": ("b",), "proximity": ("b",), "action": ("action",),
               "status": ("entity", "status"), "holding": ("item",)}
_VALUE_FIELDS = ("value", "bonus")


def load_paraphrases(path: Path) -> list[dict[str, Any]]:
    """The texts of the paraphrase file, each a dict (id, text, quality, wants, note)."""
    return list(yaml.safe_load(path.read_text(encoding="utf-8"))["texts"])


def signatures(spec: RewardSpec) -> list[str]:
    """The spec's signatures (one per part of a composite): ``template[:key...]``, ``-`` appended
    when its value is negative."""
    parts = (spec.params.parts if isinstance(spec.params, CompositeParams)
             else [spec])
    out = []
    for part in parts:
        params = part.params.model_dump()
        keys = [str(params[name]) for name in _KEY_FIELDS.get(part.template, ())]
        negative = any(params.get(name, 0) < 0 for name in _VALUE_FIELDS)
        out.append(":".join([part.template, *keys]) + ("-" if negative else ""))
    return out


def _agents(value: Any, n_agents: int) -> frozenset[int]:
    return frozenset(range(n_agents)) if value == "all" else frozenset(int(a) for a in value)


def judge(item: dict[str, Any], specs: Sequence[RewardSpec], n_agents: int) -> str:
    """One of ``VERDICTS`` for the parse ``specs`` of the paraphrase ``item``."""
    wants = item.get("wants") or []
    if not wants:
        return "correct" if not specs else "wrong"
    if not specs:
        return "refused"

    def meets(spec: RewardSpec, want: dict[str, Any]) -> bool:
        same_agents = frozenset(spec.agent_indices(n_agents)) == _agents(want["agents"], n_agents)
        return same_agents and any(sig in want["any_of"] for sig in signatures(spec))

    useful = [any(meets(spec, want) for want in wants) for spec in specs]
    required = [any(meets(spec, want) for spec in specs) for want in wants if not want.get("optional")]
    if all(required) and all(useful):
        return "correct"
    return "partly" if any(useful) else "wrong"


def judge_all(items: Sequence[dict[str, Any]], parse: Callable[[str], list[RewardSpec]],
              n_agents: int) -> dict[str, Any]:
    """Every paraphrase parsed and judged; the counts of each verdict overall and by quality.

    Args:
        items: the paraphrase file's texts.
        parse: text -> specs (the parser under test, with the scene bound).
        n_agents: the game's agents (what ``"all"`` means).

    Returns:
        ``{"texts": [...], "counts": {quality or "all": {verdict: n, "n": n}}}``.
    """
    texts = []
    for item in items:
        specs = parse(item["text"])
        texts.append({"id": item["id"], "text": item["text"], "quality": item["quality"],
                      "intent": item.get("wants") or "no spec", "note": item.get("note", ""),
                      "specs": [spec.summary() for spec in specs],
                      "verdict": judge(item, specs, n_agents)})
    counts: dict[str, dict[str, int]] = {}
    for group in ("all", "correct", "wrong", "irrelevant"):
        chosen = [t["verdict"] for t in texts if group in ("all", t["quality"])]
        counts[group] = {verdict: chosen.count(verdict) for verdict in VERDICTS} | {"n": len(chosen)}
    return {"texts": texts, "counts": counts}

"""M3HF (Wang et al., ICML 2025): free-text feedback of mixed quality becomes per-agent reward terms.

- ``specs``: ``RewardSpec`` (template, agents, bounded parameters — data, never code), ``Scene``
  (the env describing itself), ``FeedbackParser`` (the parsers' protocol).
- ``templates``: ``compile_term`` — a spec's template as a vectorised function of the env state.
- ``parser_rule``: ``RuleParser``, the offline deterministic parser.
- ``parser_llm``: ``LLMParser`` (any OpenAI-compatible server; validated, repaired once, retried,
  falls back to the ``RuleParser``, every decision logged and recorded); ``make_parser`` picks one.
- ``prompt``: the LLM's instructions built from the scene and the template catalogue.
- ``weights``: ``WeightRule`` (alpha, beta), ``RewardPool`` per agent, ``TeamPools`` (save/load JSON).
- ``shaping``: ``PoolShaper`` (a ``TeamRewardShaper`` for ``rlkit.marl``) and ``pool_reward_fns``
  (per-agent ``RewardFn`` for ``PettingZooRewardWrapper(mode="add")``).
- ``sources``: ``FeedbackSource`` — ``TerminalSource``, ``ScriptedSource`` (YAML), ``SimulatedSource``
  (correct / irrelevant / wrong feedback at set rates from the env's true state).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlkit._lazy import lazy_exports

if TYPE_CHECKING:
    from rlkit.m3hf.parser_llm import LLMConfig, LLMParser, ParseDecision, make_parser
    from rlkit.m3hf.parser_rule import RuleParser
    from rlkit.m3hf.scene import Scene
    from rlkit.m3hf.shaping import PoolRewardFn, PoolShaper, pool_reward_fns
    from rlkit.m3hf.sources import (
        Feedback,
        FeedbackRequest,
        FeedbackSource,
        ScriptedSource,
        SimulatedSource,
        TerminalSource,
    )
    from rlkit.m3hf.specs import TEMPLATE_PARAMS, FeedbackParser, RewardSpec, validate_specs
    from rlkit.m3hf.templates import compile_term
    from rlkit.m3hf.weights import PoolEntry, RewardPool, TeamPools, WeightRule

__all__ = [
    "TEMPLATE_PARAMS",
    "Feedback",
    "FeedbackParser",
    "FeedbackRequest",
    "FeedbackSource",
    "LLMConfig",
    "LLMParser",
    "ParseDecision",
    "PoolEntry",
    "PoolRewardFn",
    "PoolShaper",
    "RewardPool",
    "RewardSpec",
    "RuleParser",
    "Scene",
    "ScriptedSource",
    "SimulatedSource",
    "TeamPools",
    "TerminalSource",
    "WeightRule",
    "compile_term",
    "make_parser",
    "pool_reward_fns",
    "validate_specs",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "rlkit.m3hf.parser_llm": ["LLMConfig", "LLMParser", "ParseDecision", "make_parser"],
    "rlkit.m3hf.parser_rule": ["RuleParser"],
    "rlkit.m3hf.scene": ["Scene"],
    "rlkit.m3hf.shaping": ["PoolRewardFn", "PoolShaper", "pool_reward_fns"],
    "rlkit.m3hf.sources": [
        "Feedback", "FeedbackRequest", "FeedbackSource", "ScriptedSource", "SimulatedSource",
        "TerminalSource",
    ],
    "rlkit.m3hf.specs": ["TEMPLATE_PARAMS", "FeedbackParser", "RewardSpec", "validate_specs"],
    "rlkit.m3hf.templates": ["compile_term"],
    "rlkit.m3hf.weights": ["PoolEntry", "RewardPool", "TeamPools", "WeightRule"],
})

"""The LLM's instructions: the env's self-description, the template catalogue and the output schema.

The prompt is built only from data (``Scene``, the params models' JSON schemas), so a new
template or env appears in it without editing text here. The model is asked for one JSON object
``{"specs": [RewardSpec, ...]}`` (``ParsedFeedback``), validated by pydantic before anything uses it.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from rlkit.m3hf.scene import Scene
from rlkit.m3hf.specs import SELF, TEMPLATE_PARAMS, RewardSpec

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam, ChatCompletionUserMessageParam


class ParsedFeedback(BaseModel):
    """What the LLM must answer: the specs one piece of feedback asks for (none if it asks for nothing)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    specs: list[RewardSpec] = Field(max_length=8)


def _describe_field(name: str, schema: dict[str, Any], required: bool) -> str:
    kind = schema.get("type", "object")
    if "enum" in schema:
        kind = "one of " + ", ".join(repr(v) for v in schema["enum"])
    bounds = []
    for key, symbol in (
        ("minimum", ">="),
        ("exclusiveMinimum", ">"),
        ("maximum", "<="),
        ("exclusiveMaximum", "<"),
    ):
        if key in schema:
            bounds.append(f"{symbol} {schema[key]}")
    default = "required" if required else f"default {schema.get('default')!r}"
    note = f" — {schema['description']}" if "description" in schema else ""
    return f"{name}: {kind}{' ' + ' and '.join(bounds) if bounds else ''} ({default}){note}"


@functools.cache
def template_catalogue() -> str:
    """One paragraph per template: what it rewards and its parameters with bounds (built once:
    the catalogue is fixed, and its JSON schemas cost milliseconds each)."""
    lines = []
    for name, model in TEMPLATE_PARAMS.items():
        schema = model.model_json_schema()
        required = set(schema.get("required", ()))
        doc = " ".join((model.__doc__ or "").split()).replace("``", "")
        lines.append(f"- {name}: {doc}")
        for field_name, field_schema in schema.get("properties", {}).items():
            if name == "composite":
                lines.append("    parts: 2 to 4 objects {template, params, weight 0..10}, none a composite")
                continue
            lines.append("    " + _describe_field(field_name, field_schema, field_name in required))
    return "\n".join(lines)


def scene_description(scene: Scene) -> str:
    """Agents with their index and colour, entities by kind, actions, the recipe and the grid."""
    agents = ", ".join(
        f"{i} = {name} ({colour})"
        for i, (name, colour) in enumerate(zip(scene.agent_names, scene.agent_colours, strict=True))
    )
    entities = ", ".join(f"{name} ({scene.entity_kinds[name]})" for name in scene.entity_names)
    return "\n".join(
        (
            f"Agents (index = name (colour in the video)): {agents}.",
            f"Entities: {entities}; '{SELF}' means the agent the reward is for.",
            f"Items an agent can hold: {', '.join(scene.item_names)}.",
            f"Actions: {', '.join(repr(a) for a in scene.action_names)}; idle action: {scene.idle_action!r}.",
            f"Recipe: {' and '.join(scene.recipe_foods)} salad, chopped, on a plate, to the delivery.",
            f"Grid: {scene.height} x {scene.width} cells; distances are in cells (rows + columns).",
        )
    )


SYSTEM_TEMPLATE = """\
You turn a person's feedback on a video of cooperative cooking agents into reward functions.
Each reward function is one template from a fixed catalogue, filled with parameters.
You never write code: answer with one JSON object and nothing else.

{scene}

Templates (reward per step for the agent it is given to):
{catalogue}

Answer: {{"specs": [{{"template": <name>, "agents": [<integer indices>] or "all", "params": {{...}},
"reason": <the words of the feedback it comes from>}}, ...]}}
- "agents": the agents the feedback is about (by name, colour or number); "all" for the team.
- Discouraging something: use a negative value or bonus where the template has one.
- Use only the entity, item and action names above, and stay inside the bounds.
- Feedback that asks for nothing a template can express: {{"specs": []}}.
"""


def system_prompt(scene: Scene) -> str:
    return SYSTEM_TEMPLATE.format(scene=scene_description(scene), catalogue=template_catalogue())


def build_messages(text: str, scene: Scene) -> list[ChatCompletionMessageParam]:
    """Chat messages for one piece of feedback."""
    return [
        {"role": "system", "content": system_prompt(scene)},
        {"role": "user", "content": f"Feedback: {json.dumps(text)}"},
    ]


def repair_message(error: str) -> ChatCompletionUserMessageParam:
    """The one follow-up after invalid output: the validation error, and the request to fix it."""
    return {
        "role": "user",
        "content": (
            f"Your answer was rejected: {error}\n"
            'Reply with the corrected JSON object {"specs": [...]} only, following the catalogue and bounds.'
        ),
    }


def response_schema() -> dict[str, Any]:
    """``ParsedFeedback``'s JSON schema, for servers that take ``response_format=json_schema``."""
    return ParsedFeedback.model_json_schema()

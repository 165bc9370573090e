"""The typed form of each reward template for the M3HF page: pickers and bounded number inputs.

Everything here is derived from the templates' pydantic models (``rlkit.m3hf.specs``) and the
phase's ``Scene``, and every choice the form offers is checked by the same validation a confirmed
spec passes (``RewardSpec`` with the scene as context), so the form offers only what is valid:

- a name field (an entity, item or action: the fields a template's ``names()`` reports) picks
  from the scene's names, its default ('self', 'any') included;
- a ``Literal`` field picks from its values; where what is valid depends on another field (a
  plate is never 'chopped'), ``options_by`` lists the valid values for each value of that field;
- a number field carries its bounds (``exclusive_min``: ``gt`` rather than ``ge``) and whether it
  is an integer;
- a template the scene cannot serve (it reads a feature the env lacks) is not offered at all.

The page keeps the JSON of each spec as an advanced view; the server validates whatever comes.
"""

from __future__ import annotations

from itertools import product
from typing import Any

from pydantic import BaseModel

from rlkit.m3hf.scene import Scene
from rlkit.m3hf.specs import SELF, TEMPLATE_PARAMS, CompositePart, RewardSpec

COMPOSITE = "composite"


def spec_form(scene: Scene) -> dict[str, Any]:
    """The form description the M3HF page builds its editors from (JSON)."""
    templates = {}
    for name, model in TEMPLATE_PARAMS.items():
        form = None if name == COMPOSITE else _template_form(name, model, scene)
        if form is not None:
            templates[name] = form
    parts = TEMPLATE_PARAMS[COMPOSITE].model_json_schema()["properties"]["parts"]
    weight = _number_field("weight", CompositePart.model_json_schema()["properties"]["weight"])
    return {
        "agents": [{"index": i, "name": name, "colour": scene.agent_colours[i]}
                   for i, name in enumerate(scene.agent_names)],
        "templates": templates,
        "composite": {"min_parts": parts["minItems"], "max_parts": parts["maxItems"], "weight": weight,
                      "doc": _doc(TEMPLATE_PARAMS[COMPOSITE])} if len(templates) else None,
    }


def _template_form(name: str, model: type[BaseModel], scene: Scene) -> dict[str, Any] | None:
    properties = model.model_json_schema()["properties"]
    kinds = _name_kinds(model, properties)
    fields = []
    for field, prop in properties.items():
        if field in kinds:
            options = list(_names(kinds[field], scene))
            if "default" in prop and prop["default"] not in options:
                options.insert(0, prop["default"])
            fields.append(_choice_field(field, prop, options))
        elif "enum" in prop:
            fields.append(_choice_field(field, prop, list(prop["enum"])))
        else:
            fields.append(_number_field(field, prop))
    choices = [f for f in fields if f["kind"] == "choice"]
    numbers = {f["name"]: f["default"] for f in fields if f["kind"] != "choice" and "default" in f}
    names = [f["name"] for f in choices]
    # The form starts from the first valid choices, the defaults first where they are valid.
    starts = (numbers | dict(zip(names, values, strict=True))
              for values in product(*map(_preferred, choices)))
    base = next((start for start in starts if _valid(name, start, scene)), None)
    if base is None:
        return None  # nothing of this template is valid in this scene
    for i, field in enumerate(choices):
        field["default"] = base[field["name"]]
        _narrow(name, field, choices[:i] + choices[i + 1:], choices[i + 1:], base, scene)
    return {"doc": _doc(model), "fields": fields}


def _narrow(template: str, field: dict[str, Any], others: list[dict[str, Any]], later: list[dict[str, Any]],
            base: dict[str, Any], scene: Scene) -> None:
    """Keep the options that are valid with some value of every other choice, and note how the
    ``later`` choices' valid values depend on this one (one way: the form narrows down the page)."""
    if not others:
        field["options"] = [o for o in field["options"] if _valid(template, base | {field["name"]: o}, scene)]
        return
    kept = []
    for option in field["options"]:
        with_option = base | {field["name"]: option}
        allowed = {other["name"]: [o for o in other["options"]
                                   if _valid(template, with_option | {other["name"]: o}, scene)]
                   for other in others}
        if all(allowed.values()):
            kept.append((option, allowed))
    field["options"] = [option for option, _ in kept]
    for other in later:
        by_value = {option: allowed[other["name"]] for option, allowed in kept}
        if any(values != other["options"] for values in by_value.values()):
            other["options_by"] = {"field": field["name"], "options": by_value}


def _valid(template: str, params: dict[str, Any], scene: Scene) -> bool:
    try:
        RewardSpec.model_validate({"template": template, "agents": "all", "params": params},
                                  context={"scene": scene})
    except ValueError:  # pydantic's ValidationError is one
        return False
    return True


def _name_kinds(model: type[BaseModel], properties: dict[str, Any]) -> dict[str, str]:
    """Which string fields hold names of the scene, and of what kind (``_Params.names()``)."""
    strings: dict[str, Any] = {f: "?" for f, p in properties.items() if p.get("type") == "string"}
    probe = model.model_construct(None, **strings)
    return {field: kind for field, (_, kind) in probe.names().items()}  # type: ignore[attr-defined]


def _names(kind: str, scene: Scene) -> tuple[str, ...]:
    return {"entity": (SELF, *scene.entity_names), "item": scene.item_names,
            "action": scene.action_names}[kind]


def _preferred(field: dict[str, Any]) -> list[Any]:
    """The field's options, its default first."""
    default = field.get("default")
    return sorted(field["options"], key=lambda option: option != default)


def _choice_field(name: str, prop: dict[str, Any], options: list[Any]) -> dict[str, Any]:
    field = {"name": name, "kind": "choice", "options": options, "description": prop.get("description", "")}
    if "default" in prop:
        field["default"] = prop["default"]
    return field


def _number_field(name: str, prop: dict[str, Any]) -> dict[str, Any]:
    field: dict[str, Any] = {"name": name, "kind": prop["type"], "description": prop.get("description", "")}
    for bound in ("min", "max"):
        key = f"{bound}imum"
        exclusive = f"exclusive{bound.capitalize()}{key[3:]}"
        if exclusive in prop:
            field[bound], field[f"exclusive_{bound}"] = prop[exclusive], True
        elif key in prop:
            field[bound], field[f"exclusive_{bound}"] = prop[key], False
    if "default" in prop:
        field["default"] = prop["default"]
    return field


def _doc(model: type[BaseModel]) -> str:
    return " ".join((model.__doc__ or "").replace("``", "").split())

"""A command's config in its ``--help``: every field with the default the command uses, written as
the YAML a user would put in a config file or a ``key=value`` override, and the values it allows.

    query.selector = disagreement  [one of: uniform, disagreement, entropy]
    policies = [{kind: random, algo: ppo, path: null, n_steps: 10000, ...}]
    policies[].kind  [one of: random, sb3]
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from rlkit.config import SECRET_FIELDS

# str fields checked against a table rather than typed as a Literal: the names that table holds
DEVICES = ("auto", "cpu", "cuda", "cuda:N")


def fields_help(schema: type[BaseModel], prefix: str = "", value: BaseModel | None = None) -> str:
    """Every field with the default the command really uses: the values of ``schema()``, so a
    section whose default differs from its class's (pref-rl's 3-member ensemble) shows its own."""
    value = schema() if value is None else value
    lines = []
    for name, info in schema.model_fields.items():
        default = getattr(value, name)
        if isinstance(default, BaseModel):
            lines.append(fields_help(type(default), f"{prefix}{name}.", default))
            continue
        note = f"  ({info.description})" if info.description else ""
        if name in SECRET_FIELDS:  # no default to show, and no override takes it
            lines.append(f"  {prefix}{name}  [a secret: set in the environment, never in a config]{note}")
            continue
        allowed = allowed_values(name, info.annotation)
        lines.append(f"  {prefix}{name} = {yaml_value(default)}{_bracket(allowed)}{note}")
        item = _list_item_model(info.annotation)
        if item is not None:  # each item's own choices: policies[].kind
            lines += [f"  {prefix}{name}[].{field}{_bracket(choices)}"
                      for field, sub in item.model_fields.items()
                      if (choices := allowed_values(field, sub.annotation))]
    return "\n".join(line for line in lines if line)


def yaml_value(value: Any) -> str:
    """``value`` as one line of YAML (flow style): ``true``, ``null``, ``[obs, act]``, ``{a: 1}``."""
    text = yaml.safe_dump(to_jsonable_python(value), default_flow_style=True, width=10**9,
                          sort_keys=False)
    return text.removesuffix("\n...\n").strip()


def allowed_values(name: str, annotation: Any) -> str:
    """What a field takes, when it is a closed set: ``one of: a, b``, ``each one of: ...`` for a
    list, ``keys one of: ...`` for a mapping, ``a number or one of: auto``; else ``""``."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return allowed_values(name, args[0])
    if origin is Literal:
        return "one of: " + ", ".join(yaml_value(arg) for arg in args)
    if origin in (Union, types.UnionType):
        closed = [allowed_values(name, arg) for arg in args if arg is not type(None)]
        open_ = [arg for arg in args if arg is not type(None) and not allowed_values(name, arg)]
        literals = [text.removeprefix("one of: ") for text in closed if text.startswith("one of: ")]
        if not literals:
            return ""
        extra = ["null"] if type(None) in args else []
        kinds = "".join(f"{_kind(arg)} or " for arg in open_)
        return f"{kinds}one of: " + ", ".join(literals + extra)
    if origin in (list, tuple, set, frozenset) and args:
        inner = allowed_values(name, args[0])
        return f"each {inner}" if inner.startswith("one of") else ""
    if origin is dict and args:
        keys = allowed_values(name, args[0])
        return f"keys {keys}" if keys.startswith("one of") else ""
    if annotation is str and name == "scale":
        from rlkit.feedback.scale import BUILTIN_SCALES

        return "one of: " + ", ".join(BUILTIN_SCALES)
    if annotation is str and name == "device":
        return "one of: " + ", ".join(DEVICES)
    return ""


def _kind(annotation: Any) -> str:
    """How the help names an open type beside a closed set: ``a number or one of: auto``."""
    kinds = {int: "an integer", float: "a number", str: "a string", bool: "true/false",
             dict: "a mapping", list: "a list", tuple: "a list"}
    return kinds.get(get_origin(annotation) or annotation, "a value")


def _bracket(allowed: str) -> str:
    return f"  [{allowed}]" if allowed else ""


def _list_item_model(annotation: Any) -> type[BaseModel] | None:
    args = get_args(annotation)
    if get_origin(annotation) in (list, tuple) and args and isinstance(args[0], type) \
            and issubclass(args[0], BaseModel):
        return args[0]
    return None

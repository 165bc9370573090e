"""Typed run configs: YAML files plus ``key=value`` overrides, validated by pydantic."""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from rlkit.errors import ConfigError
from rlkit.persistence import atomic_open

__all__ = ["ConfigError", "StrictModel", "apply_overrides", "load_config", "load_yaml", "parse_override",
           "save_config"]

Config = TypeVar("Config", bound=BaseModel)

_VALIDATING: ContextVar[bool] = ContextVar("rlkit_config_validating", default=False)
_BOUNDS = {"greater_than": ("gt", ">"), "greater_than_equal": ("ge", ">="),
           "less_than": ("lt", "<"), "less_than_equal": ("le", "<=")}


class StrictModel(BaseModel):
    """Base of every config: unknown keys are errors (a typo must not silently do nothing), values
    are frozen, and a bad value built in code raises ``invalid_error`` (an ``rlkit.errors`` type,
    a ``ValueError``) naming the class, the field and the value. Loaded from YAML (``load_config``)
    the same problems are a ``ConfigError`` naming the field's path in the file. Every seed field
    (``seed``, ``*_seed``) holding an integer holds one in [0, 2**32): what numpy's seeding and
    SB3's (``np.random.seed``) take."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    invalid_error: ClassVar[type[ValueError]] = ConfigError

    def __init__(self, /, **data: Any) -> None:
        if _VALIDATING.get():  # a section of a config being validated: its errors join the whole's
            super().__init__(**data)
            return
        token = _VALIDATING.set(True)
        try:
            super().__init__(**data)
        except ValidationError as error:
            raise self.invalid_error(describe_errors(type(self).__name__, error)) from None
        finally:
            _VALIDATING.reset(token)

    @field_validator("*", mode="after")
    @classmethod
    def _seed_in_range(cls, value: Any, info: ValidationInfo) -> Any:
        name = info.field_name or ""
        if (name == "seed" or name.endswith("_seed")) and type(value) is int and not 0 <= value < 2**32:
            raise ConfigError(f"a seed must be an integer in [0, 2**32) (numpy and SB3 seed with "
                              f"it), got {value}")
        return value

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Self:
        """Pydantic's, raising its ``ValidationError`` (``load_config`` words it by path)."""
        token = _VALIDATING.set(True)
        try:
            return super().model_validate(obj, **kwargs)
        finally:
            _VALIDATING.reset(token)

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes``, validated again (``model_copy`` would not check them)."""
        return type(self)(**{**dict(self), **changes})


def describe_errors(owner: str, error: ValidationError) -> str:
    """One line per problem: ``Owner.field must be >= 1, got 0``; a validator's own message is
    kept as it is, after the field's name."""
    lines = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"])
        name = f"{owner}.{where}" if where else owner
        kind, value = problem["type"], problem.get("input")
        if kind == "value_error":
            lines.append(f"{name}: {problem['msg'].removeprefix('Value error, ')}")
        elif kind in _BOUNDS:
            key, sign = _BOUNDS[kind]
            lines.append(f"{name} is out of range: {value!r} (must be {sign} {problem['ctx'][key]})")
        elif kind == "extra_forbidden":
            section = ".".join([owner, *(str(part) for part in problem["loc"][:-1])])
            lines.append(f"{name} is not a field of {section}")
        elif kind == "missing":  # its input is the dict around it: not worth repeating
            lines.append(f"{name} is missing: it has no default, give it a value")
        else:
            lines.append(f"{name} is invalid: {value!r} ({problem['msg'][:1].lower()}{problem['msg'][1:]})")
    return "; ".join(lines)


#: Fields holding secrets (``SecretStr``, left out of every dump): refused as ``key=value``
#: overrides, which shell history, the process list and W&B's run metadata (the command line) keep.
SECRET_FIELDS = frozenset({"api_key"})
_SECRET_SOURCES = {"api_key": "the OPENAI_API_KEY environment variable"}


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"trainer.lr=3e-4"`` -> (["trainer", "lr"], 0.0003); values are parsed as YAML.

    Args:
        text: one ``key=value`` override; the key is a dotted path into the config, an empty value
            is ``None``.

    Returns:
        The key's path and the parsed value.

    Raises:
        ConfigError: when ``text`` is not ``key=value``, names a secret field, or its value is not
            valid YAML.
    """
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"override {text!r} is not of the form key=value")
    path = key.strip().split(".")
    if path[-1] in SECRET_FIELDS:  # the value is not repeated in the message
        source = _SECRET_SOURCES.get(path[-1], "the environment")
        raise ConfigError(
            f"{key.strip()} is a secret and is not taken from the command line (shell history, the "
            f"process list and the run's W&B metadata would keep it): set {source} instead"
        )
    if not raw.strip():
        return path, None
    try:
        return path, load_yaml(raw)
    except DuplicateKeyError as error:
        raise ConfigError(f"override {text!r}: {error}") from None
    except yaml.YAMLError as error:
        problem = getattr(error, "problem", None) or type(error).__name__
        hint = key.strip() + '="' + f"'{raw}'" + '"'  # the shell keeps the inner quotes
        raise ConfigError(
            f"override {text!r}: the value is not valid YAML ({problem}); as a string: {hint}"
        ) from None


class DuplicateKeyError(yaml.YAMLError):
    """A YAML mapping that writes one key twice (YAML itself keeps the last and says nothing)."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key written twice in one mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        lines: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base` merges, it is no key
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = lines.get(key)
            except TypeError:  # an unhashable key: SafeLoader's own error names it
                continue
            if first is not None:
                where = f"on line {line}" if first == line else f"on lines {first} and {line}"
                raise DuplicateKeyError(f"key {key!r} is written twice ({where}); YAML would keep "
                                        "the last one without a word")
            lines[key] = line
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str) -> Any:
    """``text`` as YAML (safe: plain data only), refusing a mapping that writes a key twice.

    Args:
        text: a YAML document.

    Returns:
        The data it holds.

    Raises:
        DuplicateKeyError: when a mapping writes one key twice (naming the key and both lines).
        yaml.YAMLError: when ``text`` is not valid YAML.
    """
    return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader: plain data, never objects


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Set each ``key=value`` override in a nested config dict, creating missing sections.

    Args:
        data: the config as nested dicts; changed in place.
        overrides: ``key=value`` strings (see ``parse_override``), applied in order.

    Returns:
        ``data`` itself.

    Raises:
        ConfigError: when an override is malformed or descends into a value that is not a section.
    """
    for text in overrides:
        path, value = parse_override(text)
        node = data
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"override {text!r}: {part!r} is a value, not a section")
            node = child
        node[path[-1]] = value
    return data


def load_config(
    schema: type[Config], path: str | os.PathLike[str] | None = None, overrides: Sequence[str] = ()
) -> Config:
    """Read ``path`` (optional), apply overrides, validate; errors name the offending field.

    Args:
        schema: the config class (a ``StrictModel``); its defaults fill what is not given.
        path: a YAML file holding a mapping; ``None`` starts from the defaults.
        overrides: ``key=value`` strings applied over the file.

    Returns:
        The validated config, an instance of ``schema``.

    Raises:
        ConfigError: when the file is missing or not a YAML mapping, an override is malformed, or
            validation fails (every failing field is named).
    """
    data: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = load_yaml(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"config file {path} does not exist") from None
        except OSError as error:
            raise ConfigError(f"config file {path}: cannot read it ({error.strerror or error})") from None
        except UnicodeDecodeError as error:
            raise ConfigError(f"config file {path} is not UTF-8 text (byte {error.start} is "
                              f"{error.object[error.start]:#04x}): a YAML config is text") from None
        except DuplicateKeyError as error:
            raise ConfigError(f"config file {path}: {error}") from None
        except yaml.YAMLError as error:
            raise ConfigError(f"config file {path} is not valid YAML: {error}") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"config file {path} must hold a mapping, not {type(loaded).__name__}")
        data = loaded or {}
    data = apply_overrides(_merge(schema, schema().model_dump(mode="json"), data), list(overrides))
    try:
        return schema.model_validate(data)
    except ValidationError as error:
        raise ConfigError(describe_errors(schema.__name__, error)) from None


def _merge(schema: type[BaseModel], defaults: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """``given`` over ``defaults``, config section by config section, so a nested value keeps the
    command's other defaults for that section (they may differ from the section type's own).
    Free-form mappings (``kwargs``) are replaced whole: a file says all of them."""
    merged = dict(defaults)
    for key, value in given.items():
        field = schema.model_fields.get(key)
        section = field.annotation if field is not None else None
        if isinstance(value, dict) and isinstance(section, type) and issubclass(section, BaseModel):
            merged[key] = _merge(section, merged.get(key) or {}, value)
        else:
            merged[key] = value
    return merged


def save_config(config: BaseModel, path: str | os.PathLike[str]) -> None:
    """Write the resolved config so the run can be repeated exactly.

    Args:
        config: the resolved config.
        path: the YAML file to write (atomically).
    """
    data = config.model_dump(mode="json")
    with atomic_open(path, "w") as handle:
        yaml.safe_dump(data, handle, sort_keys=False)

"""One validated settings object shared by the single and the batched environment (rlkit's one
config base, ``rlkit.config.StrictModel``). A value of the wrong type is a ``WrongTypeError`` (a
``TypeError``), one out of range a ``ConfigError``, each naming the field."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from envs.overcooked.layouts import LAYOUTS, Layout, get_layout
from envs.overcooked.recipes import Recipe, parse_recipe
from rlkit.config import StrictModel
from rlkit.errors import ConfigError, WrongTypeError

OBS_MODES = ("vector", "image")


class Rewards(StrictModel):
    """Team reward terms; the defaults are the reference's."""

    chop: float = 10.0  # a food of the recipe finishes its third chop
    correct_delivery: float = 200.0
    wrong_delivery: float = -5.0
    step: float = -0.1  # every step, once

    @classmethod
    def coerce(cls, value: Rewards | dict[str, float] | None) -> Rewards:
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, dict):
            unknown = set(value) - set(cls.model_fields)
            if unknown:
                raise ConfigError(
                    f"unknown reward terms {sorted(unknown)}; valid: {sorted(cls.model_fields)}"
                )
            return cls(**{k: float(v) for k, v in value.items()})
        raise WrongTypeError(f"rewards must be a Rewards, a dict or None, got {type(value).__name__}")


class OvercookedConfig(StrictModel):
    """Everything that defines a game; bad values fail here with the field named."""

    layout: str = "A"
    recipe: str | int = "lettuce-tomato"
    n_agents: int = 3
    macro_actions: bool = True
    obs_radius: int = 2
    max_steps: int = 200
    obs_mode: str = "vector"
    macro_timeout: int = 25  # steps; above every path length on every map (tested)
    rewards: Rewards = Field(default_factory=Rewards)  # a dict of terms is coerced
    cell_px: int = 80  # pixels per cell for rgb_array and image observations, as the reference

    @model_validator(mode="before")
    @classmethod
    def _checked(cls, data: Any) -> Any:
        """The checks run on the given values, before pydantic coerces any (2.5 is not an int
        here): a WrongTypeError passes through pydantic as it is, a ConfigError is worded by
        the config base."""
        if not isinstance(data, dict):
            return data
        given = {**{name: info.get_default(call_default_factory=True)
                    for name, info in cls.model_fields.items()}, **data}
        if given["layout"] not in LAYOUTS:
            raise ConfigError(f"unknown layout {given['layout']!r}; valid layouts: {', '.join(LAYOUTS)}")
        for name, low, high in (("n_agents", 2, 3), ("obs_radius", 0, None), ("max_steps", 1, None),
                                ("macro_timeout", 1, None), ("cell_px", 4, None)):
            _check_int(name, given[name], low, high)
        if not isinstance(given["macro_actions"], bool):
            raise WrongTypeError(f"macro_actions must be a bool, got {given['macro_actions']!r}")
        if given["obs_mode"] not in OBS_MODES:
            raise ConfigError(f"obs_mode must be one of {OBS_MODES}, got {given['obs_mode']!r}")
        recipe, rewards = parse_recipe(given["recipe"]).name, Rewards.coerce(given["rewards"])
        return {**data, "recipe": recipe, "rewards": rewards}

    @property
    def recipe_spec(self) -> Recipe:
        return parse_recipe(self.recipe)

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> OvercookedConfig:
        unknown = set(kwargs) - set(cls.model_fields)
        if unknown:
            raise WrongTypeError(
                f"unknown arguments {sorted(unknown)}; valid: {sorted(cls.model_fields)}"
            )
        return cls(**kwargs)

    @property
    def layout_spec(self) -> Layout:
        return get_layout(self.layout, self.n_agents)


def _check_int(name: str, value: Any, low: int, high: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise WrongTypeError(f"{name} must be an int, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"{low}..{high}" if high is not None else f">= {low}"
        raise ConfigError(f"{name} must be {bound}, got {value}")

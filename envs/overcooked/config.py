"""The validated settings of a game (``GameConfig``: what M3HF's config holds as ``env``) and of an
environment (``OvercookedConfig``: a game plus how it is observed and drawn), shared by the single
and the batched environment (rlkit's one config base, ``rlkit.config.StrictModel``). A value of the
wrong type is a ``WrongTypeError`` (a ``TypeError``), one out of range a ``ConfigError``, each
naming the field."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from envs.overcooked.layouts import LAYOUTS, Layout, get_layout
from envs.overcooked.recipes import Recipe, parse_recipe
from rlkit.config import StrictModel
from rlkit.errors import ConfigError, WrongTypeError


class Rewards(StrictModel):
    """Team reward terms, each paid to every agent; the defaults are the reference's.

    Attributes:
        chop: when a food of the recipe finishes its third chop.
        correct_delivery: when a plate holding exactly the recipe's foods is delivered (the
            episode ends).
        wrong_delivery: when anything else is delivered.
        step: every step, once.
    """

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


class GameConfig(StrictModel):
    """What a game is: map, dish, team, horizon, what an agent sees and does, the rewards. Bad values
    fail here with the field named (types in the check below, ranges by the fields' bounds)."""

    layout: str = "A"
    recipe: str | int = "lettuce-tomato"
    n_agents: int = Field(3, ge=2, le=3)
    macro_actions: bool = True
    obs_radius: int = Field(2, ge=0)
    max_steps: int = Field(200, ge=1)
    macro_timeout: int = Field(25, ge=1)  # steps; above every path length on every map (tested)
    rewards: Rewards = Field(default_factory=Rewards)  # a dict of terms is coerced

    @model_validator(mode="before")
    @classmethod
    def _checked(cls, data: Any) -> Any:
        """The checks run on the given values, before pydantic coerces any (2.5 is not an int
        here): a WrongTypeError passes through pydantic as it is, a ConfigError is worded by
        the config base. A recipe is kept by its name, rewards as ``Rewards``."""
        if not isinstance(data, dict):
            return data
        given = {name: value for name, value in data.items() if name in cls.model_fields}
        if "layout" in given and given["layout"] not in LAYOUTS:
            raise ConfigError(f"unknown layout {given['layout']!r}; valid layouts: {', '.join(LAYOUTS)}")
        for name, value in given.items():
            if cls.model_fields[name].annotation is int:
                _check_int(name, value)
        if "macro_actions" in given and not isinstance(given["macro_actions"], bool):
            raise WrongTypeError(f"macro_actions must be a bool, got {given['macro_actions']!r}")
        checked = dict(data)
        if "recipe" in given:
            checked["recipe"] = parse_recipe(given["recipe"]).name
        if "rewards" in given:
            checked["rewards"] = Rewards.coerce(given["rewards"])
        return checked

    @property
    def recipe_spec(self) -> Recipe:
        return parse_recipe(self.recipe)

    @property
    def layout_spec(self) -> Layout:
        return get_layout(self.layout, self.n_agents)


class OvercookedConfig(GameConfig):
    """A game and how it is shown: observations as vectors or images, frames' pixels per cell.

    Attributes:
        layout: the map, ``"A"``, ``"B"`` or ``"C"``.
        recipe: the dish, by name in any food order (``"lettuce-tomato"``, ``"tomato salad"``)
            or by the reference's index (0 to 6).
        n_agents: the team's size, 2 or 3.
        macro_actions: agents choose macro actions (go to an object, chop, deliver, ...) that
            run over several steps; False: primitive moves.
        obs_radius: an agent sees the cells within this many rows and columns of it (0: the
            whole map), >= 0.
        max_steps: steps before an episode is truncated, >= 1.
        macro_timeout: the most steps one macro runs, >= 1 (above every path length on every
            map).
        rewards: the team reward terms (a dict of terms is coerced).
        obs_mode: ``"vector"`` (float32 features in [0, 1]) or ``"image"`` (uint8 RGB frames of
            the visible cells).
        cell_px: pixels per cell of ``rgb_array`` frames and image observations, >= 4.
    """

    obs_mode: Literal["vector", "image"] = "vector"
    cell_px: int = Field(80, ge=4)  # pixels per cell for rgb_array and image observations, as the reference

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> OvercookedConfig:
        unknown = set(kwargs) - set(cls.model_fields)
        if unknown:
            raise WrongTypeError(
                f"unknown arguments {sorted(unknown)}; valid: {sorted(cls.model_fields)}"
            )
        return cls(**kwargs)


def _check_int(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise WrongTypeError(f"{name} must be an int, got {value!r}")

"""One validated settings object shared by the single and the batched environment."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from envs.overcooked.layouts import LAYOUTS, Layout, get_layout
from envs.overcooked.recipes import Recipe, parse_recipe
from rlkit.errors import ConfigError, WrongTypeError

OBS_MODES = ("vector", "image")


@dataclass(frozen=True)
class Rewards:
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
            unknown = set(value) - set(cls.__dataclass_fields__)
            if unknown:
                raise ConfigError(
                    f"unknown reward terms {sorted(unknown)}; valid: {sorted(cls.__dataclass_fields__)}"
                )
            return cls(**{k: float(v) for k, v in value.items()})
        raise WrongTypeError(f"rewards must be a Rewards, a dict or None, got {type(value).__name__}")


@dataclass(frozen=True)
class OvercookedConfig:
    """Everything that defines a game; bad values fail here with the field named."""

    layout: str = "A"
    recipe: str | int = "lettuce-tomato"
    n_agents: int = 3
    macro_actions: bool = True
    obs_radius: int = 2
    max_steps: int = 200
    obs_mode: str = "vector"
    macro_timeout: int = 25  # steps; above every path length on every map (tested)
    rewards: Rewards = field(default_factory=Rewards)  # a dict of terms is coerced
    cell_px: int = 80  # pixels per cell for rgb_array and image observations, as the reference

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise ConfigError(f"unknown layout {self.layout!r}; valid layouts: {', '.join(LAYOUTS)}")
        object.__setattr__(self, "recipe", parse_recipe(self.recipe).name)
        object.__setattr__(self, "rewards", Rewards.coerce(self.rewards))
        _check_int("n_agents", self.n_agents, 2, 3)
        _check_int("obs_radius", self.obs_radius, 0, None)
        _check_int("max_steps", self.max_steps, 1, None)
        _check_int("macro_timeout", self.macro_timeout, 1, None)
        _check_int("cell_px", self.cell_px, 4, None)
        if not isinstance(self.macro_actions, bool):
            raise WrongTypeError(f"macro_actions must be a bool, got {self.macro_actions!r}")
        if self.obs_mode not in OBS_MODES:
            raise ConfigError(f"obs_mode must be one of {OBS_MODES}, got {self.obs_mode!r}")

    @property
    def recipe_spec(self) -> Recipe:
        return parse_recipe(self.recipe)

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> OvercookedConfig:
        unknown = set(kwargs) - set(cls.__dataclass_fields__)
        if unknown:
            raise WrongTypeError(
                f"unknown arguments {sorted(unknown)}; valid: {sorted(cls.__dataclass_fields__)}"
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

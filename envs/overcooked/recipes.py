"""The seven salads of the reference, as bit masks over the three foods."""

from __future__ import annotations

from dataclasses import dataclass

from envs.overcooked.layouts import FOODS
from rlkit.errors import ConfigError, WrongTypeError

# The reference's task order; the one-hot task in the observation uses these indices.
RECIPES = (
    "tomato",
    "lettuce",
    "onion",
    "lettuce-tomato",
    "onion-tomato",
    "lettuce-onion",
    "lettuce-onion-tomato",
)


@dataclass(frozen=True)
class Recipe:
    """A target dish: its name, index in ``RECIPES`` and which foods it needs."""

    name: str
    index: int
    mask: int  # bit f set when food f (0 tomato, 1 lettuce, 2 onion) is in the dish

    @property
    def foods(self) -> tuple[int, ...]:
        return tuple(f for f in range(len(FOODS)) if self.mask >> f & 1)


def parse_recipe(recipe: str | int) -> Recipe:
    """Accept a name in any food order, with or without " salad", or the reference's index."""
    if isinstance(recipe, bool) or not isinstance(recipe, (str, int)):
        raise WrongTypeError(f"recipe must be a name or an index, got {recipe!r}")
    if isinstance(recipe, int):
        if not 0 <= recipe < len(RECIPES):
            raise ConfigError(f"recipe index {recipe} out of range 0..{len(RECIPES) - 1}")
        name = RECIPES[recipe]
    else:
        words = recipe.strip().lower().removesuffix("salad").strip().strip("-").split("-")
        name = "-".join(sorted(w.strip() for w in words))
        if name not in RECIPES:
            raise ConfigError(f"unknown recipe {recipe!r}; valid recipes: {', '.join(RECIPES)}")
    foods = name.split("-")
    mask = sum(1 << FOODS.index(f) for f in foods)
    return Recipe(name=name, index=RECIPES.index(name), mask=mask)

"""Gymnasium-style ids, ``rlkit/Overcooked-<layout>-<recipe>-v0``, one per map and recipe.

The ids live in gymnasium's registry (so ``gymnasium.spec(id)`` and ``pprint_registry`` show
them with their settings), but the game is multi-agent: ``gymnasium.make`` cannot build a
PettingZoo env and says so; build it with ``make`` / ``make_aec`` / ``make_vec`` here.
"""

from __future__ import annotations

from typing import Any, NoReturn

import gymnasium
from pettingzoo import AECEnv

from envs.overcooked.layouts import LAYOUTS
from envs.overcooked.parallel import OvercookedParallelEnv, env
from envs.overcooked.recipes import RECIPES
from envs.overcooked.vector import OvercookedVecEnv
from rlkit.errors import ConfigError, WrongTypeError

NAMESPACE = "rlkit"
VERSION = 0


def env_id(layout: str, recipe: str) -> str:
    return f"{NAMESPACE}/Overcooked-{layout}-{recipe}-v{VERSION}"


ENV_IDS = tuple(env_id(layout, recipe) for layout in LAYOUTS for recipe in RECIPES)


def _gymnasium_make(**kwargs: Any) -> NoReturn:
    """The entry point gymnasium calls for an id: refuse, naming the call that builds the game."""
    settings = dict(kwargs)
    id = env_id(settings.pop("layout"), settings.pop("recipe"))
    given = f", {', '.join(f'{k}={v!r}' for k, v in settings.items())}" if settings else ""
    raise WrongTypeError(
        f"{id} is a multi-agent PettingZoo environment, not a gymnasium.Env, so gymnasium.make "
        f"cannot build it: use envs.overcooked.make({id!r}{given}) for the ParallelEnv, "
        "make_aec(id) for the AEC env or make_vec(id, num_games) for many games at once"
    )


def register_envs() -> tuple[str, ...]:
    """Add every id to gymnasium's registry (idempotent); returns the ids.

    Returns:
        ``ENV_IDS``, every ``rlkit/Overcooked-<layout>-<recipe>-v0``.
    """
    for layout in LAYOUTS:
        for recipe in RECIPES:
            if env_id(layout, recipe) not in gymnasium.registry:
                gymnasium.register(
                    id=env_id(layout, recipe),
                    entry_point=_gymnasium_make,
                    kwargs={"layout": layout, "recipe": recipe},
                    disable_env_checker=True,
                )
    return ENV_IDS


def _settings(id: str, overrides: dict[str, Any]) -> dict[str, Any]:
    register_envs()
    if id not in ENV_IDS:
        raise ConfigError(f"unknown Overcooked id {id!r}; ids look like {ENV_IDS[3]!r} (see ENV_IDS)")
    return {**gymnasium.spec(id).kwargs, **overrides}


def make(id: str, **overrides: Any) -> OvercookedParallelEnv:
    """The ParallelEnv for an id; keyword arguments override its settings (e.g. n_agents=2).

    Args:
        id: one of ``ENV_IDS``.
        **overrides: settings of ``OvercookedParallelEnv`` that replace the id's.

    Returns:
        A new ParallelEnv.

    Raises:
        ConfigError: when the id is unknown.
    """
    return OvercookedParallelEnv(**_settings(id, overrides))


def make_aec(id: str, **overrides: Any) -> AECEnv:
    """The AEC env for an id; keyword arguments override its settings, as in ``make``.

    Args:
        id: one of ``ENV_IDS``.
        **overrides: settings of ``OvercookedParallelEnv`` that replace the id's.

    Returns:
        A new AEC env, PettingZoo's conversion of the ParallelEnv.

    Raises:
        ConfigError: when the id is unknown.
    """
    return env(**_settings(id, overrides))


def make_vec(id: str, num_games: int, **overrides: Any) -> OvercookedVecEnv:
    """Many games of an id at once, one vectorised env; keyword arguments override its settings.

    Args:
        id: one of ``ENV_IDS``.
        num_games: how many games run side by side (``num_envs = num_games * n_agents``).
        **overrides: settings of ``OvercookedVecEnv`` (``keep_features``, ``render_mode``) or of
            the game that replace the id's.

    Returns:
        A new ``OvercookedVecEnv``.

    Raises:
        ConfigError: when the id is unknown or ``num_games`` is not a positive int.
    """
    return OvercookedVecEnv(num_games, **_settings(id, overrides))

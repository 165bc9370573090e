"""Macro-action Overcooked for PettingZoo: a faithful, fast port of Xiao et al.'s environment.

``parallel_env(...)`` / ``env(...)`` build one game; ``OvercookedVecEnv`` many at once;
``make(id)`` builds a registered id. See ``README.md`` in this folder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlkit._lazy import lazy_exports

if TYPE_CHECKING:
    from envs.overcooked.config import OvercookedConfig, Rewards
    from envs.overcooked.layouts import LAYOUTS
    from envs.overcooked.parallel import OvercookedParallelEnv, env, parallel_env
    from envs.overcooked.recipes import RECIPES
    from envs.overcooked.registry import ENV_IDS, make, make_aec, make_vec, register_envs
    from envs.overcooked.scripted import ScriptedChef
    from envs.overcooked.vector import OvercookedVecEnv
    from envs.overcooked.video import record_episode, write_video

__all__ = [
    "ENV_IDS",
    "LAYOUTS",
    "RECIPES",
    "OvercookedConfig",
    "OvercookedParallelEnv",
    "OvercookedVecEnv",
    "Rewards",
    "ScriptedChef",
    "env",
    "make",
    "make_aec",
    "make_vec",
    "parallel_env",
    "record_episode",
    "register_envs",
    "write_video",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "envs.overcooked.config": ["OvercookedConfig", "Rewards"],
    "envs.overcooked.layouts": ["LAYOUTS"],
    "envs.overcooked.parallel": ["OvercookedParallelEnv", "env", "parallel_env"],
    "envs.overcooked.recipes": ["RECIPES"],
    "envs.overcooked.registry": ["ENV_IDS", "make", "make_aec", "make_vec", "register_envs"],
    "envs.overcooked.scripted": ["ScriptedChef"],
    "envs.overcooked.vector": ["OvercookedVecEnv"],
    "envs.overcooked.video": ["record_episode", "write_video"],
})

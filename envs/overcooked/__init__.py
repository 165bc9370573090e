"""Macro-action Overcooked for PettingZoo: a faithful, fast port of Xiao et al.'s environment.

``parallel_env(...)`` / ``env(...)`` build one game; ``OvercookedVecEnv`` many at once;
``make(id)`` builds a registered id. See ``README.md`` in this folder.
"""

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

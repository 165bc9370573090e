"""Multi-agent PPO for PettingZoo parallel envs on SB3's parts: IPPO and a parameter-shared variant."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlkit._lazy import lazy_exports

if TYPE_CHECKING:
    from rlkit.marl.checkpoint import load_checkpoint, save_checkpoint
    from rlkit.marl.config import MarlConfig
    from rlkit.marl.evaluate import evaluate
    from rlkit.marl.ppo import MultiAgentPPO
    from rlkit.marl.rows import AgentRows, OvercookedRows, ParallelEnvRows, RowStep

__all__ = ["AgentRows", "MarlConfig", "MultiAgentPPO", "OvercookedRows", "ParallelEnvRows", "RowStep",
           "evaluate", "load_checkpoint", "save_checkpoint"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "rlkit.marl.checkpoint": ["load_checkpoint", "save_checkpoint"],
    "rlkit.marl.config": ["MarlConfig"],
    "rlkit.marl.evaluate": ["evaluate"],
    "rlkit.marl.ppo": ["MultiAgentPPO"],
    "rlkit.marl.rows": ["AgentRows", "OvercookedRows", "ParallelEnvRows", "RowStep"],
})

"""Multi-agent PPO for PettingZoo parallel envs on SB3's parts: IPPO and a parameter-shared variant."""

from rlkit.marl.checkpoint import load_checkpoint, save_checkpoint
from rlkit.marl.config import MarlConfig
from rlkit.marl.evaluate import evaluate
from rlkit.marl.ppo import MultiAgentPPO
from rlkit.marl.rows import AgentRows, OvercookedRows, ParallelEnvRows, RowStep

__all__ = ["AgentRows", "MarlConfig", "MultiAgentPPO", "OvercookedRows", "ParallelEnvRows", "RowStep",
           "evaluate", "load_checkpoint", "save_checkpoint"]

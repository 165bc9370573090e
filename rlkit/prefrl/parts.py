"""What ``PreferenceRL`` checks of the parts it is given, and the replay buffer it gives an
off-policy agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from rlkit.errors import ConfigError
from rlkit.factories.configs import PrefRLConfig, QueryConfig
from rlkit.wrappers import LazyRewardReplayBuffer


def check_parts(venv: VecEnv, agent: BaseAlgorithm, query: QueryConfig, budget: int,
                config: PrefRLConfig | None, run_dir: Path | None) -> None:
    """Refuse a budget and query settings the envs and the agent cannot run, and a run directory
    without the config its resume point records.

    Args:
        venv: the loop's envs.
        agent: the agent given to the loop.
        query: the loop's query settings.
        budget: the loop's ``total_timesteps``.
        config: the settings the parts were built from, if given.
        run_dir: the loop's run directory, if any.

    Raises:
        ConfigError: naming the setting that does not fit.
    """
    n_envs = venv.num_envs
    if budget % n_envs:
        raise ConfigError(f"agent.total_timesteps={budget} is not a whole number of steps of the "
                          f"env.n_envs={n_envs} envs (each step takes one per env): use a multiple "
                          f"of {n_envs}, e.g. {budget - budget % n_envs or n_envs}")
    random_steps = -(-query.every_steps // n_envs) * n_envs
    if random_steps >= budget:
        raise ConfigError(f"query.every_steps={query.every_steps}: the random steps collected "
                          f"for the first query ({random_steps}) leave none of "
                          f"agent.total_timesteps={budget} for the agent; lower every_steps or "
                          "raise the budget")
    if query.unsupervised_steps and not isinstance(agent, OffPolicyAlgorithm):
        raise ConfigError(f"query.unsupervised_steps={query.unsupervised_steps} needs an "
                          f"off-policy agent (PEBBLE's SAC); {type(agent).__name__} is on-policy")
    if run_dir is not None and config is None:
        raise ConfigError(f"run_dir={run_dir}: a resume point records the settings its run was built "
                          "from; pass their config too (PreferenceRL.from_config does)")
    if config is not None and (config.query != query or config.agent.total_timesteps != budget):
        raise ConfigError("config: its query and agent.total_timesteps differ from the loop's "
                          "query and total_timesteps")


def give_lazy_buffer(agent: OffPolicyAlgorithm, lazy_kwargs: dict[str, Any]) -> None:
    """Put a ``LazyRewardReplayBuffer`` (built with ``lazy_kwargs`` over the agent's own
    ``replay_buffer_kwargs``, as SB3's ``_setup_model`` builds a buffer) in place of the agent's
    empty SB3 ``ReplayBuffer``; any other buffer is refused.

    Args:
        agent: an off-policy agent not yet trained.
        lazy_kwargs: the lazy buffer's own arguments (``per_sample_reward``'s ``reward_fn``).

    Raises:
        ConfigError: when the agent's buffer is not an empty ``ReplayBuffer``.
    """
    buffer = agent.replay_buffer
    if type(buffer) is not ReplayBuffer or buffer.size():
        held = buffer is not None and buffer.size()
        what = type(buffer).__name__ + (" holding transitions" if held else "")
        raise ConfigError(f"the agent's replay buffer is a {what}: pref-rl gives off-policy agents its "
                          "own replay buffer, which labels their transitions with the learned reward; "
                          "give it an untrained agent with SB3's ReplayBuffer (no replay_buffer_class)")
    kwargs = {**agent.replay_buffer_kwargs, **lazy_kwargs}
    agent.replay_buffer_class, agent.replay_buffer_kwargs = LazyRewardReplayBuffer, kwargs
    agent.replay_buffer = LazyRewardReplayBuffer(
        agent.buffer_size, agent.observation_space, agent.action_space, device=agent.device,
        n_envs=agent.n_envs, optimize_memory_usage=agent.optimize_memory_usage, **kwargs)

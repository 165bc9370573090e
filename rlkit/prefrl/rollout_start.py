"""The start of the rollout a pref-rl round falls in: what a resumed run steps that rollout again
from, up to the round, so that it goes on bit-identically to a run never stopped.

A round comes mid-rollout (every ``query.every_steps`` env steps; PPO collects ``n_steps`` per env
before it trains, SAC ``train_freq``), inside SB3's step loop, where the step that triggered it is
not yet in the rollout or replay buffer. The agent does not change within a rollout (it trains at
the rollout's end), nor do the reward model, the labels and the loop's RNG (only rounds change
them), so a point saved at the round holds those, and this module adds the rest as it was at the
rollout's start: the episode in progress (every env layer, the trajectory recorder's open
trajectories, ``rlkit.persistence.sb3_state.episode_state``), the counters, the RNGs a rollout draws
from (``sb3_state.learn_rngs`` and ``rng_tensors``: torch's, the agent's own generators), gSDE's
exploration noise, SB3's episode-info buffers and the records its logger holds for its next dump
(the ``train/*`` of the update before), the store's length, the episode log, the metric bytes and
the reward normaliser. ``capture`` keeps it in memory at each rollout's start where a round may
fall; the rollout's first round's point writes it (a later round in the same rollout writes none:
the earlier point steps on through it) (``rlkit.prefrl.resume``). Where a layer of the env cannot
hand its state over, or the agent runs off the CPU, ``capture`` gives None and the round's point
asks it again at once, with the env reset: equal in steps, rounds and labels, not in numbers.
"""

from __future__ import annotations

import copy
import dataclasses
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.save_util import recursive_setattr
from stable_baselines3.common.type_aliases import TrainFreq, TrainFrequencyUnit

from rlkit.errors import FileFormatError
from rlkit.logging.local import metrics_size
from rlkit.persistence.arrays import load_npz
from rlkit.persistence.sb3_state import (
    check_learn_rngs,
    check_rng_tensors,
    episode_state,
    learn_rngs,
    restore_learn_rngs,
    restore_rng_tensors,
    rng_tensors,
)
from rlkit.persistence.sb3_state import restore_episode as restore_env_episode
from rlkit.reward import RunningNorm

if TYPE_CHECKING:
    from rlkit.prefrl.loop import PreferenceRL

EPISODE_FILE = "episode.npz"  # in the round's folder: the episode in progress at its rollout's start


@dataclasses.dataclass
class RolloutStart:
    """The run at the start of the rollout a round falls in, kept in memory until that round saves
    it: a resumed run steps that rollout again from here, up to the round (``capture``)."""

    state: dict[str, Any]  # counters, RNGs, the store's length, metric bytes, episode log (JSON)
    tensors: dict[str, Any]  # torch's RNG, the agent's own generators, gSDE's noise
    episode: dict[str, np.ndarray]  # the env's layers and the agent's last observation
    norm: RunningNorm | None
    saved: bool = False  # a round of this rollout wrote its point (a later one writes none)


def capture(loop: PreferenceRL, last_round: int) -> RolloutStart | None:
    """What ``loop`` is at the start of a rollout a round may fall in; None when no round can
    (or the run keeps no points), when the env cannot hand the episode in progress over, or when
    the agent runs off the CPU (CUDA kernels need not step the same again, and people's labels
    name the segments stepped); that round's point then asks it again at once, the env reset.

    Args:
        loop: the running loop, between two rollouts.
        last_round: the env step of the round before (where the next is counted from).

    Returns:
        The state, copied.
    """
    agent = loop.agent
    if loop.run_dir is None or not loop.wants_query() or agent.device.type != "cpu":
        return None
    if isinstance(agent, OnPolicyAlgorithm):
        steps: int | None = agent.n_steps * agent.n_envs
    else:
        assert isinstance(agent, OffPolicyAlgorithm)  # pref-rl builds one or the other
        freq = agent.train_freq
        steps = freq.frequency * agent.n_envs if isinstance(freq, TrainFreq) and (
            freq.unit == TrainFrequencyUnit.STEP) else None  # in episodes: any length
    if steps is not None and last_round + loop.config.query.every_steps > agent.num_timesteps + steps:
        return None
    episode = episode_state(agent)
    if episode is None:
        return None
    state = {
        "timestep": agent.num_timesteps, "agent_updates": agent._n_updates,
        "agent_episodes": agent._episode_num, "last_round": last_round, "rngs": learn_rngs(agent),
        "store_trajectories": len(loop.store),
        "metrics_bytes": None if loop.run_dir is None else metrics_size(loop.run_dir),
        "episodes": copy.deepcopy(dataclasses.asdict(loop.result.episodes)),
        "ep_info": [dict(info) for info in agent.ep_info_buffer or []],
        "ep_success": [bool(s) for s in agent.ep_success_buffer or []],
        "sb3_logger": _pending_records(agent),
    }
    tensors = {**rng_tensors(agent), "sde": _sde_noise(agent)}
    return RolloutStart(state, tensors, {k: np.array(v) for k, v in episode.items()},
                        copy.deepcopy(loop.reward_norm))


def _pending_records(agent: BaseAlgorithm) -> dict[str, Any]:
    """What SB3's logger holds for its next dump (the ``train/*`` of the update before a rollout,
    dumped at that rollout's end); numbers only, as JSON."""
    logger = agent.logger
    values = {key: value.item() if isinstance(value, np.generic) else value
              for key, value in logger.name_to_value.items()}
    return {"values": {key: value for key, value in values.items()
                       if isinstance(value, int | float) and not isinstance(value, bool)},
            "counts": dict(logger.name_to_count),
            "excluded": {key: list(value) for key, value in logger.name_to_excluded.items()}}


def _sde_noise(agent: BaseAlgorithm) -> dict[str, torch.Tensor]:
    """gSDE's exploration matrices (drawn at each rollout's start), by attribute path."""
    found = {}
    for owner in ("policy", "actor"):
        dist = getattr(getattr(agent, owner, None), "action_dist", None)
        for name in ("exploration_mat", "exploration_matrices"):
            value = getattr(dist, name, None)
            if isinstance(value, torch.Tensor):
                found[f"{owner}.action_dist.{name}"] = value.clone()
    return found


def restore_episode(agent: BaseAlgorithm, start: dict[str, Any], folder: Path) -> None:
    """The episode in progress into a fresh agent's env, its counters and SB3's episode buffers,
    as ``start`` (a point's ``rollout_start``) says.

    Args:
        agent: built as the saved one was, on a fresh env.
        start: the point's ``rollout_start``.
        folder: the round folder holding ``episode.npz``.
    """
    agent.num_timesteps = int(start["timestep"])
    agent._n_updates = int(start["agent_updates"])
    agent._episode_num = int(start["agent_episodes"])
    restore_env_episode(agent, load_npz(folder / EPISODE_FILE), folder / EPISODE_FILE)
    agent.ep_info_buffer = deque(start["ep_info"], maxlen=agent._stats_window_size)
    agent.ep_success_buffer = deque(start["ep_success"], maxlen=agent._stats_window_size)


def restore_rngs(agent: BaseAlgorithm, start: dict[str, Any], tensors: dict[str, Any],
                 tensors_path: Path, state_path: Path) -> None:
    """The RNGs, gSDE's noise and the records of SB3's logger as at the rollout's start (call at
    the start of the resumed run's first rollout, after SB3 drew its noise there).

    Args:
        agent: the resumed agent, on its env.
        start: the point's ``rollout_start``.
        tensors: the point's tensors of it (``capture``'s ``tensors``).
        tensors_path: the file those came from, named in errors.
        state_path: the file ``start`` came from, named in errors.
    """
    restore_rng_tensors(agent, tensors, tensors_path)
    for name, value in tensors["sde"].items():
        recursive_setattr(agent, name, value.clone())
    restore_learn_rngs(agent, start["rngs"], state_path)
    records, logger = start["sb3_logger"], agent.logger
    logger.name_to_value.update(records["values"])
    logger.name_to_count.update(records["counts"])
    logger.name_to_excluded.update({key: tuple(value) for key, value in records["excluded"].items()})


_START_FIELDS: dict[str, type | tuple[type, ...]] = {
    "timestep": int, "agent_updates": int, "agent_episodes": int, "last_round": int, "rngs": dict,
    "store_trajectories": int, "metrics_bytes": (int, type(None)), "episodes": dict, "ep_info": list,
    "ep_success": list, "sb3_logger": dict,
}


def check(where: Path, start: Any, tensors: dict[str, Any], tensors_path: Path) -> None:
    """The start of the round's rollout, where the point has one: its fields, RNG states and tensors."""
    if start is None:
        return
    if not isinstance(start, dict) or any(not isinstance(start.get(name), types)
                                          for name, types in _START_FIELDS.items()):
        raise FileFormatError(f"{where}: field 'rollout_start' is not the start of a rollout")
    check_learn_rngs(start["rngs"], where)
    try:
        check_rng_tensors(tensors["rollout_start"], tensors_path)
    except (KeyError, TypeError, AttributeError, FileFormatError):
        raise FileFormatError(f"{tensors_path}: the RNG states of its rollout's start are missing or "
                              "damaged") from None

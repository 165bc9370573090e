"""Microseconds each way the learned reward reaches the agent costs, timed alone.

The paths, on HalfCheetah's shapes (17 observation entries, 6 action entries, 8 envs) and
rlkit's own reward nets (``build_reward_net``, obs + act -> 256 -> 256 -> 1, behind
``TorchRewardFn``):

- ``call_net_8``, ``call_ensemble_8``: one ``TorchRewardFn`` call on 8 rows (a net; the pref-rl
  model's 3-member ensemble), the per-step cost of the numpy fast path;
- ``call_absorbing_8``: the same net with ``absorbing_flag`` (the fixed-horizon mask);
- ``call_net_2048``: one call on a PPO rollout's 2048 rows;
- ``step_wait``: ``RewardVecEnvWrapper.step`` with the net, less a bare VecEnv's step that does
  no work;
- ``rollout_relabel``: a ``RolloutRewardRelabeller`` recording 256 steps of 8 envs and labelling
  them (``label_recorded``), per rollout;
- ``lazy_label``: a ``LazyRewardReplayBuffer`` (normalised ensemble reward) labelling 64 waiting
  rows of 8 envs (``label_waiting``), per call;
- ``relabel_buffer``: ``relabel_replay_buffer`` over a full replay buffer of 20k rows of 8 envs
  (the ensemble), per call.

Every path is timed in ``--rounds`` rounds, the paths taking turns within a round, so a change in
machine speed hits all of them alike; each figure is the median over rounds of the round's best
of ``--repeats``. Torch runs on one thread. ``--clock cpu`` counts this process's CPU time
instead of wall time: on a machine shared with other work (load far above its cores) wall-clock
timings mostly measure the others. Prints one JSON line (with the 1-minute load average before
and after).

    .venv/bin/python benchmarks/reward_paths.py [--rounds N] [--repeats N] [--clock {wall,cpu}]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv

from rlkit.reward import RewardEnsemble, RunningNorm, build_reward_net
from rlkit.reward.normalize import NormalizedReward
from rlkit.reward.numpy_rewards import TorchRewardFn
from rlkit.wrappers import LazyRewardReplayBuffer, RewardVecEnvWrapper, RolloutRewardRelabeller
from rlkit.wrappers.relabel import relabel_replay_buffer

OBS_DIM, ACT_DIM, N_ENVS, ROLLOUT_STEPS = 17, 6, 8, 256
OBS_SPACE = spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float32)
FLAGGED_SPACE = spaces.Box(-np.inf, np.inf, (OBS_DIM + 1,), np.float32)
ACT_SPACE = spaces.Box(-1.0, 1.0, (ACT_DIM,), np.float32)
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


class ReadyVecEnv(VecEnv):
    """A VecEnv whose step costs nothing but fresh arrays, so the wrapper is timed on its own."""

    def __init__(self) -> None:
        super().__init__(N_ENVS, OBS_SPACE, ACT_SPACE)
        self._obs = np.random.default_rng(0).normal(size=(N_ENVS, OBS_DIM)).astype(np.float32)

    def reset(self) -> np.ndarray:
        return self._obs.copy()

    def step_async(self, actions: np.ndarray) -> None:
        pass

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        return (self._obs.copy(), np.zeros(N_ENVS, np.float32), np.zeros(N_ENVS, bool),
                [{"TimeLimit.truncated": False} for _ in range(N_ENVS)])

    def close(self) -> None:
        pass

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return [None] * N_ENVS

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        pass

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list:
        return [None] * N_ENVS

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False] * N_ENVS


def transitions(rows: int, rng: np.random.Generator, obs_dim: int = OBS_DIM,
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Random ``(obs, acts, next_obs, terminal)`` of ``rows`` transitions."""
    obs = rng.normal(size=(rows, obs_dim)).astype(np.float32)
    if obs_dim > OBS_DIM:  # the absorbing flag: a quarter of the states absorbing
        obs[:, -1] = rng.random(rows) < 0.25
    return (obs, rng.uniform(-1, 1, (rows, ACT_DIM)).astype(np.float32),
            rng.normal(size=(rows, obs_dim)).astype(np.float32), np.zeros(rows, bool))


def paths(rng: np.random.Generator) -> dict[str, tuple[Callable[[], object], int]]:
    """Each path as (one timed unit of work, how many of its units make one reported figure)."""
    net = TorchRewardFn(build_reward_net(OBS_SPACE, ACT_SPACE, seed=0))
    ensemble = TorchRewardFn(RewardEnsemble([build_reward_net(OBS_SPACE, ACT_SPACE, seed=s)
                                             for s in range(3)]))
    flagged = TorchRewardFn(build_reward_net(FLAGGED_SPACE, ACT_SPACE, seed=0,
                                             absorbing_flag=True))
    small, big = transitions(N_ENVS, rng), transitions(N_ENVS * ROLLOUT_STEPS, rng)
    small_flagged = transitions(N_ENVS, rng, OBS_DIM + 1)

    bare, wrapped = ReadyVecEnv(), RewardVecEnvWrapper(ReadyVecEnv(), net)
    actions = small[1]
    for venv in (bare, wrapped):
        venv.reset()

    def step_wait() -> None:
        wrapped.step(actions)

    def bare_step() -> None:
        bare.step(actions)

    relabeller = RolloutRewardRelabeller(net)
    steps = [tuple(a[i * N_ENVS:(i + 1) * N_ENVS] for a in big) for i in range(ROLLOUT_STEPS)]

    def rollout_relabel() -> None:
        for obs, acts, next_obs, terminal in steps:
            relabeller(obs, acts, next_obs, np.zeros(N_ENVS), terminal, terminal, [])
        relabeller.label_recorded()
        relabeller._rewards.clear()

    lazy = LazyRewardReplayBuffer(10_000, OBS_SPACE, ACT_SPACE, device="cpu", n_envs=N_ENVS,
                                  reward_fn=NormalizedReward(ensemble, RunningNorm()))
    infos = [{} for _ in range(N_ENVS)]

    def lazy_label() -> None:
        for obs, acts, next_obs, terminal in steps[:64]:
            lazy.add(obs, next_obs, acts, np.zeros(N_ENVS), terminal, infos)
        lazy.label_waiting()

    replay = LazyRewardReplayBuffer(20_000, OBS_SPACE, ACT_SPACE, device="cpu", n_envs=N_ENVS,
                                    reward_fn=ensemble)
    for i in range(replay.buffer_size):
        obs, acts, next_obs, terminal = steps[i % ROLLOUT_STEPS]
        replay.add(obs, next_obs, acts, np.zeros(N_ENVS), terminal, infos)
    agent = SimpleNamespace(replay_buffer=replay)

    def relabel_buffer() -> None:
        relabel_replay_buffer(agent, ensemble)  # type: ignore[arg-type]  # has a replay buffer

    return {
        "call_net_8": (lambda: net(*small), 200),
        "call_ensemble_8": (lambda: ensemble(*small), 200),
        "call_absorbing_8": (lambda: flagged(*small_flagged), 200),
        "call_net_2048": (lambda: net(*big), 10),
        "bare_step": (bare_step, 200),
        "step_wait": (step_wait, 200),
        "rollout_relabel": (rollout_relabel, 3),
        "lazy_label": (lazy_label, 5),
        "relabel_buffer": (relabel_buffer, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--repeats", type=int, default=3, help="timings per path per round")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="wall")
    args = parser.parse_args()
    clock = CLOCKS[args.clock]
    torch.set_num_threads(1)
    load_before = os.getloadavg()[0]
    work = paths(np.random.default_rng(args.seed))
    for unit, count in work.values():  # warm-up
        for _ in range(min(count, 20)):
            unit()
    best: dict[str, list[float]] = {name: [] for name in work}
    for _ in range(args.rounds):
        for name, (unit, count) in work.items():
            times = []
            for _ in range(args.repeats):
                start = clock()
                for _ in range(count):
                    unit()
                times.append((clock() - start) / count * 1e6)
            best[name].append(min(times))
    us = {name: statistics.median(values) for name, values in best.items()}
    us["step_wait"] -= us.pop("bare_step")
    print(json.dumps({
        "benchmark": "reward_paths",
        "obs_dim": OBS_DIM, "act_dim": ACT_DIM, "n_envs": N_ENVS, "torch_threads": 1,
        "rounds": args.rounds, "repeats": args.repeats, "clock": args.clock,
        "us": {name: round(value, 1) for name, value in us.items()},
        "load_avg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }))


if __name__ == "__main__":
    main()

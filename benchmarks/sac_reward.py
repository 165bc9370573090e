"""SAC steps/s on a learned reward against SAC on the true reward (issue 14, off-policy reward).

The learned reward is the one ``rlkit pref-rl`` builds: ``build_reward_model`` with the command's
default model section (a 3-member 256x256 ensemble on obs + act) behind ``TorchRewardFn`` and a
running ``NormalizedReward``. Three SAC agents (SB3 defaults: batch 256, one gradient step per env
step) live side by side on Pendulum-v1:

- ``true``: the env's reward, no wrapper;
- ``per_step``: ``RewardVecEnvWrapper`` calling the learned reward every env step;
- ``lazy``: the pref-rl path, ``per_sample_reward``: replay rows labelled in batches
  (``LazyRewardReplayBuffer``) when a sampled batch first reaches an unlabelled one.

Each first takes ``--warmup`` random steps (SAC's ``learning_starts``) so its buffer is not tiny,
then they take turns, ``--round`` steps at a time: true, per_step, lazy, true, ... A change in
machine speed (other work on a shared machine) hits the turns of one cycle alike. Steps/s are
medians over turns; each ratio is the median of the per-cycle ratios against ``true``. Torch
runs on one thread. ``--clock cpu`` counts this process's CPU time instead of wall time: on a
machine shared with other work (load far above its cores) wall-clock turns mostly measure the
others. Prints one JSON line; ``ok`` is ``lazy`` at >= 0.95x ``true``.

    [OMP_WAIT_POLICY=PASSIVE] .venv/bin/python benchmarks/sac_reward.py [--rounds N] [--round S]
        [--clock {wall,cpu}]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from stable_baselines3 import SAC
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import VecEnv

from rlkit.factories.builders import build_reward_model
from rlkit.factories.configs import PrefRLConfig
from rlkit.reward import RunningNorm
from rlkit.reward.normalize import NormalizedReward
from rlkit.reward.numpy_rewards import TorchRewardFn
from rlkit.wrappers import LazyRewardReplayBuffer, RewardVecEnvWrapper, per_sample_reward

GOAL_RATIO = 0.95
KINDS = ("true", "per_step", "lazy")
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


def make_sac(kind: str, args: argparse.Namespace) -> SAC:
    """One agent; the reward model is seeded alike for ``per_step`` and ``lazy``."""
    venv: VecEnv = make_vec_env(args.env, n_envs=1, seed=args.seed)
    kwargs: dict[str, Any] = {"learning_starts": args.warmup, "seed": args.seed, "device": "cpu"}
    if kind != "true":
        model_config = PrefRLConfig().model  # the section as `rlkit pref-rl` builds it
        model = build_reward_model(model_config, venv.observation_space, venv.action_space, args.seed)
        reward_fn = NormalizedReward(TorchRewardFn(model), RunningNorm())
        if kind == "per_step":
            venv = RewardVecEnvWrapper(venv, reward_fn)
        else:
            venv, buffer_kwargs = per_sample_reward(venv, reward_fn)
            kwargs.update(buffer_kwargs)
    agent = SAC("MlpPolicy", venv, **kwargs)
    agent.set_logger(Logger(folder=None, output_formats=[]))
    return agent


def timed_round(agent: SAC, steps: int, clock: Callable[[], float]) -> float:
    """Steps/s of ``steps`` more env steps (and their gradient steps)."""
    start = clock()
    agent.learn(steps, reset_num_timesteps=False)
    return steps / (clock() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="Pendulum-v1")
    parser.add_argument("--warmup", type=int, default=10_000, help="random steps before training")
    parser.add_argument("--round", type=int, default=200, help="env steps per turn")
    parser.add_argument("--rounds", type=int, default=15, help="turns per agent")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="wall")
    args = parser.parse_args()
    torch.set_num_threads(1)
    load_before = os.getloadavg()[0]

    agents = {kind: make_sac(kind, args) for kind in KINDS}
    for agent in agents.values():  # random steps, then one short round to warm caches up
        agent.learn(args.warmup + args.round // 3)
    speeds: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for _ in range(args.rounds):
        for kind, agent in agents.items():
            speeds[kind].append(timed_round(agent, args.round, CLOCKS[args.clock]))

    def ratio(kind: str) -> float:
        return statistics.median(s / t for s, t in zip(speeds[kind], speeds["true"], strict=True))

    buffer = agents["lazy"].replay_buffer
    assert isinstance(buffer, LazyRewardReplayBuffer)
    lazy_ratio = ratio("lazy")
    print(json.dumps({
        "benchmark": "sac_reward",
        "env": args.env,
        "reward": "pref-rl default model (3-member ensemble, obs+act -> 256 -> 256 -> 1), normalised",
        "warmup_steps": args.warmup,
        "round_steps": args.round,
        "rounds": args.rounds,
        "torch_threads": 1,
        "clock": args.clock,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default"),
        **{f"{kind}_steps_per_s": round(statistics.median(speeds[kind]), 1) for kind in KINDS},
        "per_step_ratio": round(ratio("per_step"), 4),
        "lazy_ratio": round(lazy_ratio, 4),
        "lazy_cycle_ratios": [round(s / t, 3) for s, t in zip(speeds["lazy"], speeds["true"],
                                                              strict=True)],
        "lazy_labelling_calls": buffer.n_labelled_calls,
        "lazy_steps": agents["lazy"].num_timesteps,
        "load_avg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "goal": f"lazy >= {GOAL_RATIO}x true",
        "ok": lazy_ratio >= GOAL_RATIO,
    }))


if __name__ == "__main__":
    main()

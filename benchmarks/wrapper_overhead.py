"""PPO steps/s on MuJoCo with the learned-reward ``RewardVecEnvWrapper`` against plain PPO.

The learned reward is an MLP (obs + act -> 256 -> 256 -> 1) with one batched forward per
vectorised step, the way a preference-learned reward runs during RL. 8 envs in a DummyVecEnv,
2 torch threads, PPO with n_steps 256 / batch 256 / 10 epochs (as in STACK_NOTES). Many short
runs alternate plain, wrapped, plain, wrapped, ...; steps/s are medians over runs and ``ratio`` is
the median of the per-pair ratios, so a drift in machine speed (a shared machine) hits both sides
of a pair alike. ``rollout_*`` counts only the time outside ``PPO.train`` (stepping, policy and
reward), where the wrapper's cost is least diluted. The 1-minute load average before and after is
printed too: with other work on the machine the numbers mean little. Prints one JSON line.

    .venv/bin/python benchmarks/wrapper_overhead.py [--env Hopper-v5] [--timesteps N]
        [--pairs P] [--reward {mlp,rlkit}]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv
from torch import nn

from rlkit.types import RewardFn
from rlkit.wrappers import RewardVecEnvWrapper

GOAL_SLOWDOWN = 0.05


class MlpReward:
    """The learned reward as a numpy ``RewardFn``: one inference-mode forward over all envs.

    Inputs are copied into one preallocated float32 buffer that a tensor shares, so a step
    allocates nothing but the output.
    """

    def __init__(self, obs_dim: int, act_dim: int, n_envs: int, hidden: int, seed: int) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.net = nn.Sequential(
            nn.Linear(obs_dim + act_dim, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, 1),
        )
        with torch.no_grad():  # seeded from our generator, not torch's global RNG
            for param in self.net.parameters():
                bound = 1.0 / np.sqrt(param.shape[-1])
                param.uniform_(-bound, bound, generator=generator)
        self.obs_dim = obs_dim
        self._inputs = np.empty((n_envs, obs_dim + act_dim), dtype=np.float32)
        self._tensor = torch.from_numpy(self._inputs)

    def __call__(
        self, obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray, dones: np.ndarray
    ) -> np.ndarray:
        self._inputs[:, : self.obs_dim] = obs
        self._inputs[:, self.obs_dim :] = acts
        with torch.inference_mode():
            return self.net(self._tensor).squeeze(1).numpy()


def rlkit_reward(venv: VecEnv, hidden: int, seed: int) -> RewardFn:
    """The same shape of net through rlkit's own reward-net adapter, for comparison."""
    from rlkit.reward import build_reward_net
    from rlkit.reward.nets import TorchRewardFn

    net = build_reward_net(
        venv.observation_space, venv.action_space, hidden=(hidden, hidden), seed=seed
    )
    return TorchRewardFn(net)


def run_ppo(
    args: argparse.Namespace, wrapped: bool, timesteps: int, seed: int
) -> tuple[float, float]:
    """(steps/s of the whole ``learn``, steps/s of the time outside ``train``) for one fresh run."""
    venv = make_vec_env(args.env, n_envs=args.n_envs, seed=seed, vec_env_cls=DummyVecEnv)
    if wrapped:
        obs_dim = int(np.prod(venv.observation_space.shape))
        act_dim = int(np.prod(venv.action_space.shape))
        reward_fn: RewardFn = (
            MlpReward(obs_dim, act_dim, args.n_envs, args.hidden, seed)
            if args.reward == "mlp"
            else rlkit_reward(venv, args.hidden, seed)
        )
        venv = RewardVecEnvWrapper(venv, reward_fn)
    model = PPO(
        "MlpPolicy",
        venv,
        n_steps=args.n_steps,
        batch_size=args.batch_size,
        n_epochs=args.n_epochs,
        seed=seed,
        device="cpu",
    )
    train_seconds = time_calls(model, "train")
    start = time.perf_counter()
    model.learn(total_timesteps=timesteps)
    elapsed = time.perf_counter() - start
    venv.close()
    return model.num_timesteps / elapsed, model.num_timesteps / (elapsed - train_seconds())


def time_calls(model: PPO, method: str) -> Callable[[], float]:
    """Wrap ``model.<method>`` to add up its run time; returns a reader of the total."""
    original = getattr(model, method)
    total = [0.0]

    def timed() -> None:
        start = time.perf_counter()
        original()
        total[0] += time.perf_counter() - start

    setattr(model, method, timed)
    return lambda: total[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="HalfCheetah-v5")
    parser.add_argument("--n-envs", type=int, default=8)
    parser.add_argument("--timesteps", type=int, default=4096, help="per timed run")
    parser.add_argument("--pairs", type=int, default=7, help="plain/wrapped pairs of runs")
    parser.add_argument("--n-steps", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--n-epochs", type=int, default=10)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--reward", choices=("mlp", "rlkit"), default="mlp")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()[0]

    warmup = args.n_envs * args.n_steps  # one rollout + update each: imports, MuJoCo, allocator
    run_ppo(args, wrapped=False, timesteps=warmup, seed=args.seed)
    run_ppo(args, wrapped=True, timesteps=warmup, seed=args.seed)
    results: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    for pair in range(args.pairs):
        for wrapped in (False, True):
            results[wrapped].append(run_ppo(args, wrapped, args.timesteps, args.seed + pair))

    plain, wrapped = results[False], results[True]
    ratio = statistics.median(w[0] / p[0] for p, w in zip(plain, wrapped, strict=True))
    rollout_ratio = statistics.median(w[1] / p[1] for p, w in zip(plain, wrapped, strict=True))
    print(
        json.dumps(
            {
                "benchmark": "wrapper_overhead",
                "env": args.env,
                "n_envs": args.n_envs,
                "torch_threads": args.threads,
                "reward": f"{args.reward} obs+act -> {args.hidden} -> {args.hidden} -> 1",
                "ppo": {"n_steps": args.n_steps, "batch_size": args.batch_size,
                        "n_epochs": args.n_epochs},
                "timesteps_per_run": args.timesteps,
                "pairs": args.pairs,
                "plain_steps_per_s": round(statistics.median(r[0] for r in plain), 1),
                "wrapped_steps_per_s": round(statistics.median(r[0] for r in wrapped), 1),
                "ratio": round(ratio, 4),
                "pair_ratios": [round(w[0] / p[0], 3) for p, w in zip(plain, wrapped, strict=True)],
                "rollout_plain_steps_per_s": round(statistics.median(r[1] for r in plain), 1),
                "rollout_wrapped_steps_per_s": round(statistics.median(r[1] for r in wrapped), 1),
                "rollout_ratio": round(rollout_ratio, 4),
                "load_avg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
                "goal": f"slowdown < {GOAL_SLOWDOWN:.0%}",
                "ok": ratio > 1.0 - GOAL_SLOWDOWN,
            }
        )
    )


if __name__ == "__main__":
    main()

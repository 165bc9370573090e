"""PPO steps/s on MuJoCo with the learned-reward ``RewardVecEnvWrapper`` against plain PPO.

The learned reward is an MLP (obs + act -> 256 -> 256 -> 1) with one batched forward per
vectorised step, the way a preference-learned reward runs during RL. 8 envs in a DummyVecEnv,
2 torch threads, PPO with n_steps 256 / batch 256 / 10 epochs (as in STACK_NOTES).

Two models live side by side and take turns, one PPO iteration (a rollout of n_envs x n_steps
steps and its update) at a time: plain, wrapped, plain, wrapped, ... Turns of a second or two mean
a change in machine speed (other work on a shared machine) hits both sides of a pair alike.
Steps/s are medians over turns; ``ratio`` is the median of the per-pair ratios. ``rollout_*``
counts only the time outside ``PPO.train`` (stepping, policy and reward), where the wrapper's
cost is least diluted. ``wrapper_only_us_per_step`` times the wrapper alone (a free reward on a
VecEnv that does nothing), to tell its cost from the reward net's. ``--clock cpu`` counts this
process's CPU time instead of wall time. On a machine shared with other work, run it with
``OMP_WAIT_POLICY=PASSIVE``: torch's OpenMP threads otherwise spin against the other processes
and single turns take 10x longer at random. Prints one JSON line.

    [OMP_WAIT_POLICY=PASSIVE] .venv/bin/python benchmarks/wrapper_overhead.py [--turns N]
        [--env Hopper-v5] [--reward {mlp,rlkit}] [--clock {wall,cpu}]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from rlkit.types import RewardFn
from rlkit.wrappers import RewardVecEnvWrapper, RolloutRewardRelabeller, per_rollout_reward

GOAL_SLOWDOWN = 0.05
# "cpu" counts this process's CPU time: on a shared machine it barely moves with other load.
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


class MlpReward:
    """The learned reward as a numpy ``RewardFn``: one inference-mode forward over all envs.

    Three ``addmm`` calls into preallocated buffers on one thread: at a batch of 8, ``nn.Module``
    call overhead and allocations cost more than the arithmetic (2.5x slower measured on this
    machine), and so does waking a second OpenMP thread. The output is a fresh array each step,
    as callers may keep it.
    """

    def __init__(self, obs_dim: int, act_dim: int, n_envs: int, hidden: int, seed: int) -> None:
        generator = torch.Generator().manual_seed(seed)  # not torch's global RNG
        sizes = (obs_dim + act_dim, hidden, hidden, 1)
        self.layers: list[tuple[torch.Tensor, torch.Tensor]] = []
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
            bound = 1.0 / np.sqrt(fan_in)  # nn.Linear's default init range
            weight = (torch.rand(fan_in, fan_out, generator=generator) * 2 - 1) * bound
            bias = (torch.rand(fan_out, generator=generator) * 2 - 1) * bound
            self.layers.append((weight, bias))
        self.obs_dim = obs_dim
        self._inputs = np.empty((n_envs, sizes[0]), dtype=np.float32)
        self._input_tensor = torch.from_numpy(self._inputs)  # shares the buffer's memory
        self._hidden = [torch.empty(n_envs, width) for width in sizes[1:-1]]

    def __call__(
        self, obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray, dones: np.ndarray
    ) -> np.ndarray:
        self._inputs[:, : self.obs_dim] = obs
        self._inputs[:, self.obs_dim :] = acts
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # n_envs rows are too few to split: waking a thread costs more
        try:
            with torch.inference_mode():
                features = self._input_tensor
                for (weight, bias), out in zip(self.layers[:-1], self._hidden, strict=True):
                    features = torch.addmm(bias, features, weight, out=out).relu_()
                weight, bias = self.layers[-1]
                return torch.addmm(bias, features, weight).squeeze(1).numpy()
        finally:
            torch.set_num_threads(threads)


def rlkit_reward(venv: VecEnv, hidden: int, seed: int) -> RewardFn:
    """The same shape of net through rlkit's own reward-net adapter, for comparison."""
    from rlkit.reward import build_reward_net
    from rlkit.reward.numpy_rewards import TorchRewardFn

    net = build_reward_net(
        venv.observation_space, venv.action_space, hidden=(hidden, hidden), seed=seed
    )
    return TorchRewardFn(net)


class TimedPPO:
    """A PPO model that is trained one iteration per call and times each one."""

    def __init__(self, args: argparse.Namespace, wrapped: bool) -> None:
        venv = make_vec_env(args.env, n_envs=args.n_envs, seed=args.seed, vec_env_cls=DummyVecEnv)
        self.callback: RolloutRewardRelabeller | None = None
        if wrapped and args.evaluate == "per-rollout":
            venv, self.callback = per_rollout_reward(venv, make_reward(args, venv))
        elif wrapped:
            venv = RewardVecEnvWrapper(venv, make_reward(args, venv))
        self.model = PPO(
            "MlpPolicy",
            venv,
            n_steps=args.n_steps,
            batch_size=args.batch_size,
            n_epochs=args.n_epochs,
            learning_rate=args.learning_rate,
            seed=args.seed,
            device="cpu",
        )
        # SB3 would otherwise make a new (empty) temp log folder on every learn() call.
        self.model.set_logger(Logger(folder=None, output_formats=[]))
        self.clock = CLOCKS[args.clock]
        self.iteration_steps = args.n_envs * args.n_steps
        self._train_seconds = 0.0
        train = self.model.train

        def timed_train() -> None:
            start = self.clock()
            train()
            self._train_seconds += self.clock() - start

        self.model.train = timed_train  # type: ignore[method-assign]

    def iterate(self) -> tuple[float, float]:
        """One rollout + update: (steps/s of it all, steps/s of the time outside ``train``)."""
        self._train_seconds = 0.0
        start = self.clock()
        self.model.learn(total_timesteps=self.iteration_steps, reset_num_timesteps=False,
                         callback=self.callback)
        elapsed = self.clock() - start
        return self.iteration_steps / elapsed, self.iteration_steps / (elapsed - self._train_seconds)


def make_reward(args: argparse.Namespace, venv: VecEnv) -> RewardFn:
    if args.reward == "rlkit":
        return rlkit_reward(venv, args.hidden, args.seed)
    obs_dim = int(np.prod(venv.observation_space.shape))
    act_dim = int(np.prod(venv.action_space.shape))
    return MlpReward(obs_dim, act_dim, args.n_envs, args.hidden, args.seed)


class ReadyVecEnv(VecEnv):
    """A VecEnv whose step costs nothing but fresh arrays, to time the wrapper on its own."""

    def __init__(self, template: VecEnv) -> None:
        super().__init__(template.num_envs, template.observation_space, template.action_space)
        self._obs = np.zeros((self.num_envs, *self.observation_space.shape), dtype=np.float32)
        self._infos = [{"TimeLimit.truncated": False} for _ in range(self.num_envs)]

    def reset(self) -> np.ndarray:
        return self._obs.copy()

    def step_async(self, actions: np.ndarray) -> None:
        pass

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        dones = np.zeros(self.num_envs, dtype=bool)
        rewards = np.zeros(self.num_envs, dtype=np.float32)
        return self._obs.copy(), rewards, dones, [dict(info) for info in self._infos]

    def close(self) -> None:
        pass

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return [None] * self.num_envs

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        pass

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list:
        return [None] * self.num_envs

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False] * self.num_envs


def wrapper_us_per_step(template: VecEnv, steps: int = 2000, repeats: int = 7) -> float:
    """Microseconds the wrapper adds per vectorised step with a free reward: best of ``repeats``
    (the least disturbed), wrapped minus bare, so neither env nor reward net is in the number."""

    def best_seconds(venv: VecEnv) -> float:
        actions = np.zeros((venv.num_envs, *venv.action_space.shape), dtype=np.float32)
        venv.reset()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(steps):
                venv.step(actions)
            times.append(time.perf_counter() - start)
        return min(times)

    def free_reward(obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray, dones: np.ndarray
                    ) -> np.ndarray:
        return np.zeros(len(obs), dtype=np.float32)

    bare = best_seconds(ReadyVecEnv(template))
    wrapped = best_seconds(RewardVecEnvWrapper(ReadyVecEnv(template), free_reward))
    return (wrapped - bare) / steps * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="HalfCheetah-v5")
    parser.add_argument("--n-envs", type=int, default=8)
    parser.add_argument("--turns", type=int, default=14, help="iterations per model")
    parser.add_argument("--n-steps", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--n-epochs", type=int, default=10)
    parser.add_argument("--learning-rate", type=float, default=3e-4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--reward", choices=("mlp", "rlkit"), default="rlkit")
    parser.add_argument("--evaluate", choices=("per-step", "per-rollout"), default="per-rollout",
                        help="reward evaluated in the wrapper every step, or once per PPO rollout")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="wall")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()[0]

    plain_model, wrapped_model = TimedPPO(args, wrapped=False), TimedPPO(args, wrapped=True)
    plain_model.iterate()  # warm-up: lazy imports, MuJoCo, torch's allocator
    wrapped_model.iterate()
    plain: list[tuple[float, float]] = []
    wrapped: list[tuple[float, float]] = []
    for _ in range(args.turns):
        plain.append(plain_model.iterate())
        wrapped.append(wrapped_model.iterate())

    wrapper_cost = wrapper_us_per_step(plain_model.model.get_env())  # type: ignore[arg-type]
    ratio = statistics.median(w[0] / p[0] for p, w in zip(plain, wrapped, strict=True))
    rollout_ratio = statistics.median(w[1] / p[1] for p, w in zip(plain, wrapped, strict=True))
    print(
        json.dumps(
            {
                "benchmark": "wrapper_overhead",
                "env": args.env,
                "n_envs": args.n_envs,
                "torch_threads": args.threads,
                "clock": args.clock,
                "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default"),
                "reward": f"{args.reward} obs+act -> {args.hidden} -> {args.hidden} -> 1",
                "evaluate": args.evaluate,
                "ppo": {"n_steps": args.n_steps, "batch_size": args.batch_size,
                        "n_epochs": args.n_epochs},
                "turns": args.turns,
                "steps_per_turn": plain_model.iteration_steps,
                "plain_steps_per_s": round(statistics.median(r[0] for r in plain), 1),
                "wrapped_steps_per_s": round(statistics.median(r[0] for r in wrapped), 1),
                "ratio": round(ratio, 4),
                "pair_ratios": [round(w[0] / p[0], 3) for p, w in zip(plain, wrapped, strict=True)],
                "rollout_plain_steps_per_s": round(statistics.median(r[1] for r in plain), 1),
                "rollout_wrapped_steps_per_s": round(statistics.median(r[1] for r in wrapped), 1),
                "rollout_ratio": round(rollout_ratio, 4),
                "wrapper_only_us_per_step": round(wrapper_cost, 1),
                "load_avg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
                "goal": f"slowdown < {GOAL_SLOWDOWN:.0%}",
                "ok": ratio > 1.0 - GOAL_SLOWDOWN,
            }
        )
    )


if __name__ == "__main__":
    main()

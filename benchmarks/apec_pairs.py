"""APEC pair generation: pairs/s from 50 checkpoints x 10 rollouts with the OT filter on.

Synthetic rollouts of Hopper size (obs 11, act 3, 1000 steps) whose states drift toward the
demonstration's as the checkpoint index grows, so the filter has something to keep and reject.
Baselines in the same run: (a) recomputing both OT distances for every kept pair (a lower bound
on what a per-pair implementation pays; timed on a sample and scaled), (b) collecting the same rollouts —
500 x 1000 Hopper-v5 steps, timed on a sample with random actions — since the goal is that pair
generation is never the slow step of the pipeline. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np

from rlkit.apec.pairs import PairConfig, select_pairs
from rlkit.apec.transport import demo_ot_distances, reference_ot_distance
from rlkit.data import Trajectory, TrajectoryStore


def synthetic_rollouts(checkpoints: int, per_checkpoint: int, length: int,
                       rng: np.random.Generator) -> tuple[TrajectoryStore, np.ndarray, Trajectory]:
    direction = rng.normal(size=11)
    store, index = TrajectoryStore(), []
    for k in range(checkpoints):
        shift = 3.0 * (1.0 - k / max(checkpoints - 1, 1))
        for _ in range(per_checkpoint):
            obs = (rng.normal(size=(length + 1, 11)) + shift * direction).astype(np.float32)
            store.append(Trajectory(obs=obs, acts=rng.uniform(-1, 1, (length, 3)).astype(np.float32),
                                    rews=obs[:-1, 0].copy()))
            index.append(k)
    demo_obs = rng.normal(size=(length + 1, 11)).astype(np.float32)
    demo = Trajectory(obs=demo_obs, acts=np.zeros((length, 3), np.float32),
                      rews=np.zeros(length, np.float32))
    return store, np.array(index), demo


def env_steps_per_s(env_id: str, steps: int) -> float:
    env = gym.make(env_id)
    env.reset(seed=0)
    env.action_space.seed(0)
    started = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--checkpoints", type=int, default=50)
    parser.add_argument("--per-checkpoint", type=int, default=10)
    parser.add_argument("--length", type=int, default=1000)
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--threshold", type=float, default=0.1,
                        help="the reference's units: mean_i (P C^T)_ii * 1000")
    parser.add_argument("--naive-sample", type=int, default=10)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    store, index, demo = synthetic_rollouts(args.checkpoints, args.per_checkpoint, args.length, rng)
    config = PairConfig(n_pairs=args.pairs, gap=10, ot_threshold=args.threshold)

    started = time.perf_counter()
    distances = demo_ot_distances(store, [demo], config.ot_reg, config.ot_iterations)
    ot_seconds = time.perf_counter() - started
    started = time.perf_counter()
    dataset = select_pairs(store, index, rng, config, ot_distances=distances)
    select_seconds = time.perf_counter() - started
    total = ot_seconds + select_seconds

    demo_states = demo.obs[:-1].astype(np.float64)
    started = time.perf_counter()
    for k in rng.choice(len(store), args.naive_sample, replace=False):  # one solve per candidate
        reference_ot_distance(store[int(k)].obs[:-1].astype(np.float64), demo_states, config.ot_reg,
                              config.ot_iterations)
    per_distance = (time.perf_counter() - started) / args.naive_sample
    # At least one candidate per kept pair, so this is a lower bound on the per-pair cost.
    naive_seconds = 2 * per_distance * len(dataset)
    rollout_seconds = args.checkpoints * args.per_checkpoint * args.length / env_steps_per_s(
        "Hopper-v5", 5000)

    print(json.dumps({
        "benchmark": "apec_pairs",
        "checkpoints": args.checkpoints, "rollouts_per_checkpoint": args.per_checkpoint,
        "length": args.length, "pairs": len(dataset), "ot_threshold": args.threshold,
        "ot_seconds": round(ot_seconds, 2), "select_seconds": round(select_seconds, 3),
        "pairs_per_s": round(len(dataset) / total, 1),
        "per_pair_ot_seconds_lower_bound": round(naive_seconds, 1),
        "speedup_vs_per_pair_ot_at_least": round(naive_seconds / total, 2),
        "rollout_collection_seconds_estimate": round(rollout_seconds, 1),
        "ratio": round(total / rollout_seconds, 3),
        "goal": "pair generation takes less time than collecting the rollouts (ratio < 1)",
        "ok": total < rollout_seconds,
    }))


if __name__ == "__main__":
    main()

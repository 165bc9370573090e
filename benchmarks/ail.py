"""Environment steps/s of an AIL round (PPO generator) against plain SB3 PPO on the same env.

An AIL round is a PPO rollout + update on the discriminator's reward (relabelled in one batched
forward per vectorised step, agent transitions recorded), then the discriminator's update and its
diagnostics. Plain PPO does the same rollout + update on the env's reward. Both take turns, one
round / one PPO iteration at a time (plain, AIL, plain, AIL, ...), so a change of machine speed
hits both sides of a pair alike; ``ratio`` is the median of per-pair AIL/plain steps/s. Goal: the
discriminator and relabelling cost under 15% (ratio >= 0.85). The discriminator is APEC's:
state-only max-ent IRL reward, MLP 256x256, batches of 1000. Demos are random-action episodes
(the cost does not depend on their quality). Run with ``OMP_WAIT_POLICY=PASSIVE`` on a shared
machine. Prints one JSON line.

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/ail.py [--turns N] [--envs Pendulum-v1,Hopper-v5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

from rlkit.ail import AILConfig, AILTrainer, DiscriminatorConfig
from rlkit.data import collect_trajectories

GOAL_RATIO = 0.85
PPO_KWARGS: dict[str, Any] = {"n_steps": 256, "batch_size": 256, "n_epochs": 10}
N_ENVS = 8


def measure(env_id: str, turns: int, seed: int = 0) -> dict[str, Any]:
    plain_env = make_vec_env(env_id, n_envs=N_ENVS, seed=seed)
    ail_env = make_vec_env(env_id, n_envs=N_ENVS, seed=seed)
    demos = collect_trajectories(plain_env, None, np.random.default_rng(seed), n_episodes=4)[:4]
    plain = PPO("MlpPolicy", plain_env, seed=seed, device="cpu", **PPO_KWARGS)
    steps = N_ENVS * PPO_KWARGS["n_steps"]
    disc = DiscriminatorConfig(loss="maxent", state_only=True, hidden=(256, 256), reward_clip=10.0,
                               lr=1e-4, weight_decay=1e-3, batch_size=1000)
    trainer = AILTrainer(AILConfig(rounds=turns + 1, steps_per_round=steps, discriminator=disc, seed=seed),
                         ail_env, demos, "ppo", dict(PPO_KWARGS))
    plain.learn(steps, reset_num_timesteps=False)  # warm-up turn for each, not timed
    trainer.run_round()
    ratios, plain_rates, ail_rates = [], [], []
    for _ in range(turns):
        start = time.perf_counter()
        plain.learn(steps, reset_num_timesteps=False)
        plain_rate = steps / (time.perf_counter() - start)
        start = time.perf_counter()
        trainer.run_round()
        ail_rate = steps / (time.perf_counter() - start)
        plain_rates.append(plain_rate)
        ail_rates.append(ail_rate)
        ratios.append(ail_rate / plain_rate)
    plain_env.close()
    ail_env.close()
    return {"plain_steps_per_s": round(statistics.median(plain_rates), 1),
            "ail_steps_per_s": round(statistics.median(ail_rates), 1),
            "ratio": round(statistics.median(ratios), 3),
            "meets_goal": statistics.median(ratios) >= GOAL_RATIO}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--envs", default="Pendulum-v1,Hopper-v5")
    args = parser.parse_args()
    torch.set_num_threads(1)
    results = {env_id: measure(env_id, args.turns) for env_id in args.envs.split(",")}
    print(json.dumps({"benchmark": "ail_round_vs_ppo", "n_envs": N_ENVS, "steps_per_turn":
                      N_ENVS * PPO_KWARGS["n_steps"], "turns": args.turns, "goal_ratio": GOAL_RATIO,
                      "torch_threads": 1, "envs": results}))


if __name__ == "__main__":
    main()

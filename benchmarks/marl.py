"""rlkit.marl speed against single-agent SB3 PPO on an env of the same step cost (issue 5).

Setting: Overcooked map A, lettuce-tomato salad, 3 agents, macro actions, ``--games`` games in
one ``OvercookedVecEnv``. One training iteration = ``n_steps`` steps of every game + the PPO
update. The reference is SB3's own ``PPO`` on ``SB3OvercookedVecEnv``, the same engine with the
same number of rows and a parameter-shared policy: the same env cost and the same samples.
Measured: IPPO with the reference's hyperparameters (three policies, each on its agent's rows,
same minibatch size: the same samples per epoch in as many minibatches in all); IPPO with
minibatches a third of the size (each agent takes as many gradient steps as the reference's one
policy: three times the optimizer steps, the price of independent nets); the shared variant
(exactly the reference's work); and, for scale, the env alone under random actions.
Times are this process's CPU time (one torch thread), rounds are interleaved and the best counts:
the machine is shared, and wall time would measure the neighbours. Prints one JSON line.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/marl.py [--games G] [--n-steps N] [--rounds R]
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

import envs.overcooked as oc
from envs.overcooked.sb3 import SB3OvercookedVecEnv
from rlkit.marl import MarlConfig, MultiAgentPPO, OvercookedRows

SETTING = {"layout": "A", "recipe": "lettuce-tomato", "n_agents": 3, "macro_actions": True, "obs_radius": 2}
# CPU time of this process: on a shared machine wall time measures the neighbours too
CLOCK = time.process_time
PPO_ARGS = {"n_epochs": 4, "learning_rate": 3e-4, "ent_coef": 0.01}


def marl_iteration(sharing: str, games: int, n_steps: int, batch: int) -> Callable[[], float]:
    """Game-steps/s of one ``learn`` call of ``n_steps`` steps (one iteration)."""
    rows = OvercookedRows(oc.OvercookedVecEnv(games, **SETTING))
    config = MarlConfig(sharing=sharing, n_steps=n_steps, batch_size=batch, **PPO_ARGS)
    trainer = MultiAgentPPO(rows, config)

    def run() -> float:
        start = CLOCK()
        trainer.learn(n_steps * games)
        return n_steps * games / (CLOCK() - start)

    return run


def sb3_iteration(games: int, n_steps: int, batch: int) -> Callable[[], float]:
    """The same for SB3 PPO; it counts rows as steps, so one iteration is ``n_steps * rows``."""
    venv = SB3OvercookedVecEnv(oc.OvercookedVecEnv(games, **SETTING))
    model = PPO("MlpPolicy", venv, n_steps=n_steps, batch_size=batch, device="cpu", seed=0, **PPO_ARGS)

    def run() -> float:
        start = CLOCK()
        model.learn(n_steps * venv.num_envs)
        return n_steps * games / (CLOCK() - start)

    return run


def env_only(games: int, n_steps: int) -> Callable[[], float]:
    venv = oc.OvercookedVecEnv(games, **SETTING)
    actions = np.random.default_rng(0).integers(0, len(venv.action_names), (n_steps, venv.num_envs))

    def run() -> float:
        venv.reset()
        start = CLOCK()
        for row in actions:
            venv.step(row)
        return n_steps * games / (CLOCK() - start)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=32)
    parser.add_argument("--n-steps", type=int, default=128)
    parser.add_argument("--batch", type=int, default=384, help="minibatch of the reference (rows)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    load_start = os.getloadavg()[0]
    t0 = time.perf_counter()
    measures = {
        "sb3_ppo": sb3_iteration(args.games, args.n_steps, args.batch),
        "ippo": marl_iteration("independent", args.games, args.n_steps, args.batch),
        "ippo_equal_updates": marl_iteration("independent", args.games, args.n_steps, args.batch // 3),
        "shared": marl_iteration("shared", args.games, args.n_steps, args.batch),
        "env_only": env_only(args.games, args.n_steps),
    }
    for run in measures.values():
        run()  # warm up: first iterations pay for allocation
    results: dict[str, list[float]] = {name: [] for name in measures}
    for _ in range(args.rounds):
        for name, run in measures.items():
            results[name].append(run())
    best = {k: max(v) for k, v in results.items()}
    median = {k: statistics.median(v) for k, v in results.items()}
    print(
        json.dumps(
            {
                "benchmark": "marl",
                "setting": SETTING,
                "games": args.games,
                "rows": args.games * 3,
                "n_steps": args.n_steps,
                "batch_rows": args.batch,
                "unit": "game steps per CPU second of a training iteration (rollout + update); x3 for rows",
                "best": {k: round(v, 1) for k, v in best.items()},
                "median": {k: round(v, 1) for k, v in median.items()},
                "ratio_to_sb3": {
                    "ippo": round(best["ippo"] / best["sb3_ppo"], 3),
                    "ippo_equal_updates": round(best["ippo_equal_updates"] / best["sb3_ppo"], 3),
                    "shared": round(best["shared"] / best["sb3_ppo"], 3),
                },
                "rounds": args.rounds,
                "seconds": round(time.perf_counter() - t0, 1),
                "load_average_1m": {"start": round(load_start, 2), "end": round(os.getloadavg()[0], 2)},
            }
        )
    )


if __name__ == "__main__":
    main()

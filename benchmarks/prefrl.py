"""Preference RL against the agent it trains (issue 14): ``rlkit pref-rl`` with its defaults
against PPO on the true reward, on the same work and seeds.

Work: Pendulum-v1, ``--steps`` env steps (100k), synthetic labels from the simulated teacher
capped at ``--labels`` (500: 200 first, then 100 per round of ``query.every_steps``), every other
setting the command's default (agent settings: rl-zoo3's tuned PPO for Pendulum-v1 when rl_zoo3 is
installed, as the command resolves them). The baseline is the same agent settings trained on the
true reward. Each seed runs both, alternating which goes first, in this process (one torch
thread). A final return is the mean true return of the deterministic policy over ``--episodes``
fresh episodes.

Goals: median wall of pref-rl <= 1.5x the baseline's; with pref-rl's defaults every seed's final
return >= -250 and their mean >= -205. Prints one JSON line (per-seed walls and returns too).
Each run's CPU seconds are reported beside its wall (``cpu_ratio``, the medians' ratio): on a
machine other jobs share, they tell what the run itself cost where wall clocks do not; the goal
stays the wall ratio on quiet cores. ``load_average`` is the 1-minute load at each seed's end.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/prefrl.py [--seeds 0 1 2] [--steps 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch

from rlkit.config import load_config
from rlkit.factories.agent import train_on_env_reward
from rlkit.factories.builders import true_return
from rlkit.factories.configs import PrefRLConfig
from rlkit.prefrl import PreferenceRL

GOAL_WALL_RATIO = 1.5
GOAL_EVERY_SEED = -250.0
GOAL_MEAN = -205.0


def config_for(seed: int, steps: int, labels: int, extra: list[str]) -> PrefRLConfig:
    return load_config(PrefRLConfig, None, [
        "env.id=Pendulum-v1", f"agent.total_timesteps={steps}", f"query.max_pairs={labels}",
        f"seed={seed}", f"env.seed={seed}", *extra,
    ])


def run_prefrl(config: PrefRLConfig, episodes: int) -> tuple[float, float, float]:
    """Wall and CPU seconds of the run, and its final return."""
    start, cpu = time.perf_counter(), time.process_time()
    result = PreferenceRL.from_config(config).learn()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return wall, cpu, true_return(result.agent, config.env, episodes)[0]


def run_true_reward(config: PrefRLConfig, episodes: int) -> tuple[float, float, float]:
    """The same agent settings and env steps, paid the env's own reward (``rlkit pref-rl
    reward=env``'s baseline: exactly the budget, not on to the end of a rollout)."""
    start, cpu = time.perf_counter(), time.process_time()
    agent, _ = train_on_env_reward(config.env, config.agent, config.seed)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return wall, cpu, true_return(agent, config.env, episodes)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--labels", type=int, default=500)
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("overrides", nargs="*", help="pref-rl config overrides (key=value)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows, configs = [], [config_for(seed, args.steps, args.labels, args.overrides) for seed in args.seeds]
    for i, (seed, config) in enumerate(zip(args.seeds, configs, strict=True)):
        runs = {}
        order = ("prefrl", "true_reward") if i % 2 == 0 else ("true_reward", "prefrl")
        for name in order:
            runs[name] = (run_prefrl if name == "prefrl" else run_true_reward)(config, args.episodes)
        rows.append({"seed": seed, **{f"{name}_wall_s": round(runs[name][0], 1) for name in runs},
                     **{f"{name}_cpu_s": round(runs[name][1], 1) for name in runs},
                     **{f"{name}_return": round(runs[name][2], 1) for name in runs},
                     "load_average": round(os.getloadavg()[0], 2)})
    walls, cpus = ({name: statistics.median(row[f"{name}_{kind}_s"] for row in rows)
                    for name in ("prefrl", "true_reward")} for kind in ("wall", "cpu"))
    returns = [row["prefrl_return"] for row in rows]
    ratio = walls["prefrl"] / walls["true_reward"]
    hyperparams = configs[0].agent.hyperparams
    print(json.dumps({
        "benchmark": "prefrl", "steps": args.steps, "labels": args.labels, "n_seeds": len(rows),
        "agent_hyperparams": hyperparams if isinstance(hyperparams, str) else "rl-zoo3's, resolved",
        "median_wall_prefrl_s": round(walls["prefrl"], 1),
        "median_wall_true_reward_s": round(walls["true_reward"], 1),
        "wall_ratio": round(ratio, 2), "goal_wall_ratio": GOAL_WALL_RATIO,
        "cpu_ratio": round(cpus["prefrl"] / cpus["true_reward"], 2),
        "prefrl_returns": returns, "prefrl_mean_return": round(statistics.mean(returns), 1),
        "true_reward_returns": [row["true_reward_return"] for row in rows],
        "rows": rows, "load_average": os.getloadavg()[0],
        "ok": ratio <= GOAL_WALL_RATIO and min(returns) >= GOAL_EVERY_SEED
        and statistics.mean(returns) >= GOAL_MEAN,
    }))


if __name__ == "__main__":
    main()

"""Overcooked speed against the reference (issue 3): steps/s, reset, render, batched steps/s.

Setting of the reference figures: map A, lettuce-tomato, 3 agents, obs radius 2, random
actions, reset when an episode ends (ours truncate at the default 200 steps). Random actions
are drawn up front from a seeded generator, so only the environment is timed. The machine is
shared: each measure runs ``--rounds`` short times, interleaved with the others, and the best
round counts toward the goals (the reference figures are those of a quiet machine; the medians
are printed beside them). ``calibration_us`` times a fixed pure-Python loop in every round, so
the spread between its best and median shows how much other work slowed the machine; the
1-minute load average before and after is printed too. Prints one JSON line.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/overcooked.py [--steps N] [--rounds R] [--games G]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable

import numpy as np

import envs.overcooked as oc

REFERENCE = {"macro": 12_219.0, "primitive": 50_355.0, "render_ms": 290.0, "reset_us_macro": 55.0}
GOAL = {"macro": 2.0, "primitive": 1.5, "render_ms": 5.0, "batched": 5.0}
SETTING = {"layout": "A", "recipe": "lettuce-tomato", "n_agents": 3, "obs_radius": 2}


def single_env(macro: bool, steps: int, seed: int) -> Callable[[], float]:
    """Steps/s of one ParallelEnv under random actions."""
    env = oc.parallel_env(macro_actions=macro, **SETTING)
    names = env.possible_agents
    rows = np.random.default_rng(seed).integers(0, len(env.action_names), (steps, len(names))).tolist()
    actions = [dict(zip(names, row, strict=True)) for row in rows]

    def run() -> float:
        env.reset()
        start = time.perf_counter()
        for action in actions:
            env.step(action)
            if not env.agents:
                env.reset()
        return steps / (time.perf_counter() - start)

    return run


def batched(games: int, steps: int, seed: int) -> Callable[[], float]:
    """Game-steps/s (each game stepping all its agents) of ``OvercookedVecEnv``."""
    venv = oc.OvercookedVecEnv(games, **SETTING)
    n_steps = max(1, steps // games)
    actions = np.random.default_rng(seed).integers(0, len(venv.action_names), (n_steps, venv.num_envs))

    def run() -> float:
        venv.reset()
        start = time.perf_counter()
        for row in actions:
            venv.step(row)
        return n_steps * games / (time.perf_counter() - start)

    return run


def render_ms(frames: int) -> Callable[[], float]:
    env = oc.parallel_env(render_mode="rgb_array", **SETTING)
    env.reset()
    env.render()  # tiles are drawn once and cached: time the steady state

    def run() -> float:
        start = time.perf_counter()
        for _ in range(frames):
            env.render()
        return (time.perf_counter() - start) / frames * 1e3

    return run


def reset_us(macro: bool, n: int) -> Callable[[], float]:
    env = oc.parallel_env(macro_actions=macro, **SETTING)

    def run() -> float:
        start = time.perf_counter()
        for _ in range(n):
            env.reset()
        return (time.perf_counter() - start) / n * 1e6

    return run


def calibration_us() -> Callable[[], float]:
    """A fixed pure-Python workload (list building and dict lookups), per iteration."""
    table = {i: i * i for i in range(64)}

    def run() -> float:
        start = time.perf_counter()
        for _ in range(20_000):
            [table[i] for i in range(16)]
        return (time.perf_counter() - start) / 20_000 * 1e6

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000, help="env steps per round and measure")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--games", type=int, default=64, help="games in the batched env")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    t0 = time.perf_counter()
    measures = {
        "macro": single_env(True, args.steps, args.seed),
        "primitive": single_env(False, args.steps, args.seed),
        "batched": batched(args.games, args.steps * 2, args.seed),
        "render_ms": render_ms(100),
        "reset_us_macro": reset_us(True, 2_000),
        "reset_us_primitive": reset_us(False, 2_000),
        "calibration_us": calibration_us(),
    }
    results: dict[str, list[float]] = {name: [] for name in measures}
    for _ in range(args.rounds):
        for name, run in measures.items():
            results[name].append(run())
    lower_is_better = {"render_ms", "reset_us_macro", "reset_us_primitive", "calibration_us"}
    best = {k: (min(v) if k in lower_is_better else max(v)) for k, v in results.items()}
    median = {k: statistics.median(v) for k, v in results.items()}
    ratio = {
        "macro": best["macro"] / REFERENCE["macro"],
        "primitive": best["primitive"] / REFERENCE["primitive"],
        "render_ms": best["render_ms"],
        "render_speedup": REFERENCE["render_ms"] / best["render_ms"],
        "batched": best["batched"] / REFERENCE["macro"],
    }
    ok = (
        ratio["macro"] >= GOAL["macro"]
        and ratio["primitive"] >= GOAL["primitive"]
        and best["render_ms"] <= GOAL["render_ms"]
        and ratio["batched"] >= GOAL["batched"]
    )
    print(
        json.dumps(
            {
                "benchmark": "overcooked",
                "setting": SETTING,
                "steps_per_round": args.steps,
                "rounds": args.rounds,
                "games": args.games,
                "best": {k: round(v, 2) for k, v in best.items()},
                "median": {k: round(v, 2) for k, v in median.items()},
                "reference": REFERENCE,
                "ratio": {k: round(v, 3) for k, v in ratio.items()},
                "goal": {
                    "macro": f">= {GOAL['macro']}x",
                    "primitive": f">= {GOAL['primitive']}x",
                    "render_ms": f"<= {GOAL['render_ms']}",
                    "batched": f">= {GOAL['batched']}x the reference macro steps/s at {args.games} games",
                },
                "ok": ok,
                "seconds": round(time.perf_counter() - t0, 1),
                "load_average_1m": {"start": round(load_start, 2), "end": round(os.getloadavg()[0], 2)},
            }
        )
    )


if __name__ == "__main__":
    main()

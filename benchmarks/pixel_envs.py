"""Frames per second of the numpy-drawn pixel tasks (``envs/pixels.py``), stepping with random
actions, against MuJoCo's own renderer on a DMControl-like task where it can run here.

Goal (issue 18): >= 1,000 frames/s at 64x64 on one core, so pixel tests and a CPU-scale pixel
experiment are not bound by rendering. For scale, MuJoCo's software EGL measured ~42 ms per 64x64
frame on this machine; ``--mujoco`` times ``InvertedPendulum-v5`` with ``render_mode="rgb_array"``
in the same run (skipped when no GL backend works). ``--dmc`` times the DMControl pixel tasks
(``envs/dmc.py``: cheetah run and walker walk, one rendered frame per agent step of 2 control
steps; needs the ``dmc`` extra, null in the line without it). Median over rounds for the numpy
tasks, one run of ``steps / 20`` (at least 50) for MuJoCo and DMC. Prints one JSON line.

    .venv/bin/python benchmarks/pixel_envs.py [--rounds 5] [--steps 2000] [--size 64] [--mujoco] [--dmc]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import gymnasium

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.dmc import register_dmc_envs  # noqa: E402
from envs.pixels import PIXEL_ENV_IDS, register_pixel_envs  # noqa: E402
from rlkit.errors import ConfigError  # noqa: E402

DMC_TIMED = ("rlkit/dmc-cheetah-run-pixels-v0", "rlkit/dmc-walker-walk-pixels-v0")

GOAL_FPS = 1_000.0


def frames_per_second(env: gymnasium.Env, steps: int, render: bool = False) -> float:
    env.reset(seed=0)
    env.action_space.seed(0)
    start = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if render:
            env.render()
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def mujoco_fps(steps: int, size: int) -> float | None:
    os.environ.setdefault("MUJOCO_GL", "egl")
    try:
        env = gymnasium.make("InvertedPendulum-v5", render_mode="rgb_array", width=size, height=size)
        return frames_per_second(env, steps, render=True)
    except Exception as error:  # no GL backend: say so in the line, do not fail the benchmark
        print(f"MuJoCo rendering unavailable: {error}", file=sys.stderr)
        return None


def dmc_fps(env_id: str, steps: int, size: int) -> float | None:
    try:
        env = gymnasium.make(env_id, size=size)
    except (ModuleNotFoundError, ConfigError) as error:  # no dmc extra, or no renderer
        print(f"{env_id} unavailable: {error}", file=sys.stderr)
        return None
    return frames_per_second(env, steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2_000)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--mujoco", action="store_true")
    parser.add_argument("--dmc", action="store_true")
    args = parser.parse_args()
    register_pixel_envs()
    result: dict[str, object] = {"benchmark": "pixel_envs", "size": args.size, "rounds": args.rounds,
                                 "goal_fps": GOAL_FPS, "load_average": os.getloadavg()[0]}
    medians = {}
    for env_id in PIXEL_ENV_IDS:
        env = gymnasium.make(env_id, size=args.size)
        medians[env_id] = statistics.median(frames_per_second(env, args.steps)
                                            for _ in range(args.rounds))
        result[f"{env_id.split('/')[1]}_fps"] = round(medians[env_id])
    if args.mujoco:
        fps = mujoco_fps(max(args.steps // 20, 50), args.size)
        result["mujoco_inverted_pendulum_fps"] = None if fps is None else round(fps, 1)
    if args.dmc:
        register_dmc_envs()
        for env_id in DMC_TIMED:
            fps = dmc_fps(env_id, max(args.steps // 20, 50), args.size)
            name = env_id.split("/")[1].removesuffix("-pixels-v0").replace("-", "_")
            result[f"{name}_fps"] = None if fps is None else round(fps, 1)
    result["ok"] = min(medians.values()) >= GOAL_FPS
    print(json.dumps(result))


if __name__ == "__main__":
    main()

"""Speed of the pixel generator: rlkit's ``DrQSAC`` against SB3's ``SAC("CnnPolicy")`` defaults.

Both run on ``rlkit/PixelPointMass-v0`` (or ``--env rlkit/PixelPendulum-v0``; 64x64 frames, 3
stacked: ``(9, 64, 64)`` uint8) with the same batch size. ``steps_per_s``: env steps collected by
``learn`` before any update (policy forward + env + replay insert); ``updates_per_s``: gradient
steps of ``train`` on a filled buffer (DrQSAC's include the random-shift augmentation). Rounds
alternate between the variants (the cores are shared) and each figure is the median over rounds.
``ok``: DrQSAC's updates/s are at least 90% of SB3's (env steps/s are reported, not judged: both
are bound by the same env and a policy forward of about the same cost). Prints one JSON line.

    .venv/bin/python benchmarks/pixel_generator.py [--env ID] [--rounds 3] [--steps 300]
        [--updates 30] [--batch 64] [--threads 1] [--strides 2,2,1,1]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from stable_baselines3 import SAC
from stable_baselines3.common.vec_env import DummyVecEnv

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.pixels import make_pixel_env  # noqa: E402
from rlkit.factories.pixel_sac import DrQSAC  # noqa: E402

ENV_IDS = ("rlkit/PixelPointMass-v0", "rlkit/PixelPendulum-v0")
SLACK = 0.9  # DrQSAC may be at most 10% slower than SB3's default


def build(env_id: str, variant: str, batch: int, learning_starts: int, strides: list[int]) -> SAC:
    venv = DummyVecEnv([lambda: make_pixel_env(env_id, 3)])
    kwargs: dict[str, Any] = {"seed": 0, "batch_size": batch, "buffer_size": 20_000,
                              "learning_starts": learning_starts, "device": "cpu"}
    if variant == "drqsac":
        encoder = {"strides": strides}
        return DrQSAC("CnnPolicy", venv, policy_kwargs={"features_extractor_kwargs": encoder}, **kwargs)
    return SAC("CnnPolicy", venv, **kwargs)


def timed(run: Callable[[], object], count: int) -> float:
    start = time.perf_counter()
    run()
    return count / (time.perf_counter() - start)


def measure(env_id: str, variant: str, steps: int, updates: int, batch: int, strides: list[int],
            ) -> tuple[float, float]:
    model = build(env_id, variant, batch, 10 * steps, strides)
    steps_per_s = timed(lambda: model.learn(steps), steps)  # no updates before learning_starts
    model.train(gradient_steps=1, batch_size=batch)  # warm-up
    updates_per_s = timed(lambda: model.train(gradient_steps=updates, batch_size=batch), updates)
    return steps_per_s, updates_per_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", choices=ENV_IDS, default=ENV_IDS[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--updates", type=int, default=30)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--strides", default="2,2,1,1",
                        help="DrQSAC's conv strides (the reference's 84x84 encoder: 2,1,1,1)")
    args = parser.parse_args()
    strides = [int(s) for s in args.strides.split(",")]
    torch.set_num_threads(args.threads)
    results: dict[str, dict[str, list[float]]] = {v: {"steps": [], "updates": []} for v in ("sb3", "drqsac")}
    for _ in range(args.rounds):
        for variant, store in results.items():
            steps_per_s, updates_per_s = measure(args.env, variant, args.steps, args.updates,
                                                 args.batch, strides)
            store["steps"].append(steps_per_s)
            store["updates"].append(updates_per_s)
    line: dict[str, object] = {"benchmark": "pixel_generator", "env": args.env, "batch": args.batch,
                               "threads": args.threads, "rounds": args.rounds, "strides": strides}
    for variant, store in results.items():
        line[f"{variant}_steps_per_s"] = round(statistics.median(store["steps"]), 1)
        line[f"{variant}_updates_per_s"] = round(statistics.median(store["updates"]), 2)
    ratio = float(line["drqsac_updates_per_s"]) / float(line["sb3_updates_per_s"])  # type: ignore[arg-type]
    line["updates_ratio"] = round(ratio, 2)
    line["ok"] = ratio >= SLACK
    print(json.dumps(line))


if __name__ == "__main__":
    main()

"""What bfloat16 autocast (``TrainerConfig.precision``) saves on APEC's reward model, and what it costs.

Setting: APEC's reference reward training (``rlkit.apec.config.RewardSettings``): a state-only MLP
2x512, Bradley-Terry, AdamW, full batches of 1000 pairs of whole rollouts, each distinct rollout
run once per step (the trainer's deduplication). Hopper-sized states (11 dims), random-walk
rollouts with a linear true reward (``benchmarks/reward_dedup.py``'s data).

Two measurements, the arms ``float32`` and ``bfloat16`` (the same trainer, weights and seed):

- speed, at APEC's own size (``--trajectories`` 500 rollouts of ``--length`` 1000 steps): seconds
  per full-batch step, each arm's median over ``--rounds`` fits of ``--steps`` steps, the arms
  alternating round by round so drifts in machine speed hit both;
- quality, on smaller rollouts (``--quality-length`` 200) so a whole fit of the reference's 100
  steps stays short: each arm's accuracy on 1000 held-out pairs of 500 fresh rollouts, and its
  last training loss.

``ok``: bfloat16 is at least ``GOAL`` times faster per step and its held-out accuracy is within
``TOLERANCE`` of float32's. Prints one JSON line.

    .venv/bin/python benchmarks/reward_precision.py [--length 1000] [--steps 2] [--rounds 3]

About 6 minutes with the defaults on one torch thread (~5 GB peak resident, float32's).
Measured 2026-12-01 (load ~4 on 2 cores, two experiments running): see
``docs/results/reward_training.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

from rlkit.apec.config import RewardSettings
from rlkit.data import SegmentPairs
from rlkit.reward import RewardNet, RewardNetSpec, RewardTrainer

sys.path.insert(0, str(Path(__file__).parent))  # the data of benchmarks/reward_dedup.py
from reward_dedup import ACT_DIM, OBS_DIM, rollouts, whole_rollout_pairs  # noqa: E402

ARMS = ("float32", "bfloat16")
GOAL = 2.0
TOLERANCE = 0.01  # held-out accuracy, absolute


def trainer(precision: str, steps: int, seed: int) -> RewardTrainer:
    spec = RewardNetSpec("mlp", (OBS_DIM,), (ACT_DIM,), inputs=("obs",), hidden=(512, 512))
    config = RewardSettings().trainer.replace(max_epochs=steps, seed=seed, precision=precision)
    return RewardTrainer(RewardNet(spec, seed=seed), config)


def data(n: int, length: int, seed: int) -> tuple[SegmentPairs, np.ndarray]:
    rng = np.random.default_rng(seed)
    store, _ = rollouts(n, length, rng)
    return whole_rollout_pairs(store, length, rng)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trajectories", type=int, default=500, help="distinct rollouts")
    parser.add_argument("--length", type=int, default=1000, help="steps per rollout (speed)")
    parser.add_argument("--steps", type=int, default=2, help="full-batch steps per timed fit")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quality-length", type=int, default=200, help="steps per rollout (quality)")
    parser.add_argument("--quality-steps", type=int, default=100, help="the reference's 100 steps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    started = time.perf_counter()

    pairs, labels = data(args.trajectories, args.length, args.seed)
    seconds: dict[str, list[float]] = {arm: [] for arm in ARMS}
    for round_ in range(args.rounds):
        for arm in ARMS if round_ % 2 == 0 else ARMS[::-1]:
            fit = trainer(arm, args.steps, args.seed).fit
            report = fit(pairs, labels, rng=np.random.default_rng(args.seed))
            seconds[arm].append(report.seconds / report.steps)
    median = {arm: statistics.median(seconds[arm]) for arm in ARMS}
    speedup = median["float32"] / median["bfloat16"]

    train_pairs, train_labels = data(args.trajectories, args.quality_length, args.seed + 1)
    test_pairs, test_labels = data(args.trajectories, args.quality_length, args.seed + 2)
    quality = {}
    for arm in ARMS:
        fitted = trainer(arm, args.quality_steps, args.seed)
        report = fitted.fit(train_pairs, train_labels, rng=np.random.default_rng(args.seed))
        quality[arm] = {"heldout_accuracy": round(fitted.evaluate(test_pairs, test_labels)["accuracy"], 4),
                        "last_train_loss": round(report.train_loss[-1], 5)}
    gap = abs(quality["bfloat16"]["heldout_accuracy"] - quality["float32"]["heldout_accuracy"])
    print(json.dumps({
        "benchmark": "reward_precision",
        "pairs": len(labels), "trajectories": args.trajectories, "rollout_length": args.length,
        "obs_dim": OBS_DIM, "hidden": [512, 512], "steps_per_fit": args.steps, "rounds": args.rounds,
        "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
        "seconds_per_step": {arm: round(median[arm], 3) for arm in ARMS},
        "round_seconds_per_step": {arm: [round(s, 3) for s in seconds[arm]] for arm in ARMS},
        "speedup": round(speedup, 2), "goal": GOAL,
        "quality": {"rollout_length": args.quality_length, "steps": args.quality_steps,
                    "heldout_pairs": len(test_labels), **quality},
        "accuracy_gap": round(gap, 4), "tolerance": TOLERANCE,
        "ok": speedup >= GOAL and gap <= TOLERANCE,
        "seconds": round(time.perf_counter() - started, 1),
        "load_average": {"start": load_at_start, "end": [round(x, 2) for x in os.getloadavg()]},
    }))


if __name__ == "__main__":
    main()

"""What running a ``linear_first`` head's first two layers as one linear map saves per step.

Setting: APEC's reference reward training (``rlkit.apec.config.RewardSettings``): a state-only MLP
2x512 with no activation after its first layer (``linear_first``, as the reference's
``PrefRewardModel``), Bradley-Terry, Adam, full batches of 1000 pairs of whole rollouts, each
distinct rollout run once per step (the trainer's deduplication), so one step runs ~500k states
forward and back. Hopper-sized states (11 dims), random-walk rollouts
(``benchmarks/reward_dedup.py``'s data).

Arms: ``layer_by_layer`` (``RewardNet.compose_first = False``: ``W2 (W1 x + b1) + b2``, ~270k
multiplications per state) and ``composed`` (the library's default: ``(W2 W1) x + (W2 b1 + b2)``,
~6k per state and one 512 x 512 x 11 product per block of rows). Each arm fits ``--steps``
full-batch steps from the same seed, ``--rounds`` times, the arms in alternating order round by
round; seconds per step are each arm's median. Both compute the same function and gradients up to
float rounding, so the composed arm's training loss at its last step must match the other's.

``ok``: ``composed`` is at least ``GOAL`` times faster per step than ``layer_by_layer`` and its
last training loss is within ``TOLERANCE`` (relative) of it. Prints one JSON line.

    .venv/bin/python benchmarks/reward_linear_first.py [--trajectories 500] [--length 1000] [--rounds 3]

About 2 minutes with the defaults on one torch thread. Measured 2026-12-02: see
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
from rlkit.reward import RewardNet, RewardNetSpec, RewardTrainer

sys.path.insert(0, str(Path(__file__).parent))  # the data of benchmarks/reward_dedup.py
from reward_dedup import ACT_DIM, OBS_DIM, rollouts, whole_rollout_pairs  # noqa: E402

GOAL = 3.0
TOLERANCE = 1e-4


def fitted(composed: bool, steps: int, seed: int, pairs, labels) -> tuple[float, float]:
    """Seconds per step and the training loss at the last step of ``steps`` full-batch steps."""
    spec = RewardNetSpec("mlp", (OBS_DIM,), (ACT_DIM,), inputs=("obs",), hidden=(512, 512),
                         linear_first=True)
    net = RewardNet(spec, seed=seed)
    net.compose_first = composed
    config = RewardSettings().trainer.replace(max_epochs=steps, seed=seed, precision="float32")
    report = RewardTrainer(net, config).fit(pairs, labels, rng=np.random.default_rng(seed))
    return report.seconds / report.steps, report.train_loss[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trajectories", type=int, default=500, help="distinct rollouts")
    parser.add_argument("--length", type=int, default=1000, help="steps per rollout")
    parser.add_argument("--steps", type=int, default=2, help="full-batch steps per timed fit")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    started = time.perf_counter()

    rng = np.random.default_rng(args.seed)
    store, _ = rollouts(args.trajectories, args.length, rng)
    pairs, labels = whole_rollout_pairs(store, args.length, rng)
    arms = {"layer_by_layer": False, "composed": True}
    seconds: dict[str, list[float]] = {arm: [] for arm in arms}
    losses: dict[str, float] = {}
    for round_ in range(args.rounds):
        for arm in list(arms) if round_ % 2 == 0 else list(arms)[::-1]:
            per_step, losses[arm] = fitted(arms[arm], args.steps, args.seed, pairs, labels)
            seconds[arm].append(per_step)
    median = {arm: statistics.median(seconds[arm]) for arm in arms}
    speedup = median["layer_by_layer"] / median["composed"]
    loss_gap = abs(losses["composed"] - losses["layer_by_layer"]) / losses["layer_by_layer"]
    print(json.dumps({
        "benchmark": "reward_linear_first",
        "pairs": len(labels), "trajectories": args.trajectories, "rollout_length": args.length,
        "obs_dim": OBS_DIM, "hidden": [512, 512], "steps_per_fit": args.steps, "rounds": args.rounds,
        "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
        "seconds_per_step": {arm: round(median[arm], 3) for arm in arms},
        "round_seconds_per_step": {arm: [round(s, 3) for s in seconds[arm]] for arm in arms},
        "speedup": round(speedup, 2), "goal": GOAL,
        "last_train_loss": {arm: round(loss, 6) for arm, loss in losses.items()},
        "loss_gap": float(f"{loss_gap:.2e}"), "tolerance": TOLERANCE,
        "ok": speedup >= GOAL and loss_gap <= TOLERANCE,
        "seconds": round(time.perf_counter() - started, 1),
        "load_average": {"start": load_at_start, "end": [round(x, 2) for x in os.getloadavg()]},
    }))


if __name__ == "__main__":
    main()

"""What running a reward net's MLP head in blocks of rows (``RewardNet.head_rows``) saves per step.

Setting: APEC's reference reward training (``rlkit.apec.config.RewardSettings``): a state-only MLP
2x512, Bradley-Terry, Adam, full batches of 1000 pairs of whole rollouts, each distinct rollout run
once per step (the trainer's deduplication), so one step runs ~500k states forward and back.
Hopper-sized states (11 dims), random-walk rollouts (``benchmarks/reward_dedup.py``'s data).

Arms: ``one_pass`` (``head_rows = None``: every row in one pass) and one per ``--blocks`` size (the
library's ``HEAD_ROWS`` among them). Each arm fits ``--steps`` full-batch steps from the same seed,
``--rounds`` times, the arms in alternating order round by round; seconds per step are each arm's
median. The arms must also train alike: the gradients are sums over the same rows in another
order, so each arm's training loss at its last step must match ``one_pass``'s. (Their weights are
reported but not compared: Adam moves a coordinate whose gradient is ~0 by up to its learning rate
either way, so float rounding alone can part them by ~lr per step.)

``ok``: the ``HEAD_ROWS`` arm is at least ``GOAL`` times faster per step than ``one_pass`` and its
last training loss is within ``TOLERANCE`` (relative) of ``one_pass``'s. Prints one JSON line.

    .venv/bin/python benchmarks/reward_head_rows.py [--trajectories 500] [--length 1000] [--rounds 3]

About 5 minutes with the defaults on one torch thread (~5 GB peak resident). Measured 2026-12-01:
see ``docs/results/reward_training.md``.
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
from rlkit.reward.nets import HEAD_ROWS

sys.path.insert(0, str(Path(__file__).parent))  # the data of benchmarks/reward_dedup.py
from reward_dedup import ACT_DIM, OBS_DIM, rollouts, whole_rollout_pairs  # noqa: E402

GOAL = 1.15
TOLERANCE = 1e-4


def fitted(head_rows: int | None, steps: int, seed: int, pairs, labels
           ) -> tuple[RewardNet, float, float]:
    """A net after ``steps`` full-batch steps with ``head_rows``, its seconds per step and its
    training loss at the last step."""
    spec = RewardNetSpec("mlp", (OBS_DIM,), (ACT_DIM,), inputs=("obs",), hidden=(512, 512))
    net = RewardNet(spec, seed=seed)
    net.head_rows = head_rows
    config = RewardSettings().trainer.replace(max_epochs=steps, seed=seed, precision="float32")
    report = RewardTrainer(net, config).fit(pairs, labels, rng=np.random.default_rng(seed))
    return net, report.seconds / report.steps, report.train_loss[-1]


def weight_gap(net: RewardNet, other: RewardNet) -> float:
    """The largest relative difference between two nets' weights, over their tensors."""
    with torch.no_grad():
        return max(float((a - b).abs().max() / a.abs().max())
                   for a, b in zip(net.parameters(), other.parameters(), strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trajectories", type=int, default=500, help="distinct rollouts")
    parser.add_argument("--length", type=int, default=1000, help="steps per rollout")
    parser.add_argument("--steps", type=int, default=2, help="full-batch steps per timed fit")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--blocks", type=int, nargs="+", default=[2048, HEAD_ROWS, 8192],
                        help="head_rows arms besides one_pass")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    started = time.perf_counter()

    rng = np.random.default_rng(args.seed)
    store, _ = rollouts(args.trajectories, args.length, rng)
    pairs, labels = whole_rollout_pairs(store, args.length, rng)
    arms: dict[str, int | None] = {"one_pass": None} | {f"rows_{n}": n for n in sorted(set(args.blocks))}
    seconds: dict[str, list[float]] = {arm: [] for arm in arms}
    nets: dict[str, RewardNet] = {}
    losses: dict[str, float] = {}
    for round_ in range(args.rounds):
        for arm in list(arms) if round_ % 2 == 0 else list(arms)[::-1]:
            nets[arm], per_step, losses[arm] = fitted(arms[arm], args.steps, args.seed, pairs, labels)
            seconds[arm].append(per_step)
    median = {arm: statistics.median(seconds[arm]) for arm in arms}
    speedup = {arm: median["one_pass"] / median[arm] for arm in arms}
    library_arm = f"rows_{HEAD_ROWS}"
    others = [arm for arm in arms if arm != "one_pass"]
    loss_gaps = {arm: abs(losses[arm] - losses["one_pass"]) / losses["one_pass"] for arm in others}
    print(json.dumps({
        "benchmark": "reward_head_rows",
        "pairs": len(labels), "trajectories": args.trajectories, "rollout_length": args.length,
        "obs_dim": OBS_DIM, "hidden": [512, 512], "steps_per_fit": args.steps, "rounds": args.rounds,
        "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
        "seconds_per_step": {arm: round(median[arm], 3) for arm in arms},
        "round_seconds_per_step": {arm: [round(s, 3) for s in seconds[arm]] for arm in arms},
        "speedup": {arm: round(speedup[arm], 3) for arm in arms if arm != "one_pass"},
        "head_rows": HEAD_ROWS, "goal": GOAL,
        "last_train_loss": {arm: round(loss, 6) for arm, loss in losses.items()},
        "loss_gap": {arm: float(f"{gap:.2e}") for arm, gap in loss_gaps.items()}, "tolerance": TOLERANCE,
        "weight_gap": {arm: float(f"{weight_gap(nets[arm], nets['one_pass']):.2e}") for arm in others},
        "ok": library_arm in arms and speedup[library_arm] >= GOAL and loss_gaps[library_arm] <= TOLERANCE,
        "seconds": round(time.perf_counter() - started, 1),
        "load_average": {"start": load_at_start, "end": [round(x, 2) for x in os.getloadavg()]},
    }))


if __name__ == "__main__":
    main()

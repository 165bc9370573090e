"""Pairs/s of ``RewardTrainer`` against a bare batched-torch loop doing the same work.

Hopper sizes (obs 11, act 3), 50-step segments, 64-pair batches, ordinal cross-entropy, AdamW,
2 torch threads (``--threads``). The bare loop gets pre-gathered tensors and does nothing but
train; the trainer's time is its whole ``fit`` (gather, label checks, validation, best-weight
snapshots). The two alternate round by round so drifts in machine speed hit both; ``ratio`` is
the median over rounds of trainer/bare within a round. Prints one JSON line.

    .venv/bin/python benchmarks/reward_training.py [--pairs N] [--epochs E] [--rounds R]

About 40 s on an idle 2-core machine. On a busy one every parallel torch op waits for a
descheduled thread, so both loops slow down many times over; their ratio stays meaningful.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from rlkit.data import SegmentPairs, Trajectory, TrajectoryStore, sample_pairs
from rlkit.reward import RewardNet, RewardNetSpec, RewardTrainer, TrainerConfig

OBS_DIM, ACT_DIM, SEGMENT, BATCH = 11, 3, 50, 64
LR, WEIGHT_DECAY = 1e-3, 1e-4
GOAL = 0.8


def make_pairs(n_pairs: int, rng: np.random.Generator) -> tuple[SegmentPairs, np.ndarray]:
    """Random trajectories with a linear true reward, labelled by Bernoulli(σ(ΔG))."""
    weights = rng.normal(size=OBS_DIM + ACT_DIM).astype(np.float32) / 4
    store = TrajectoryStore()
    for _ in range(64):
        obs = rng.normal(size=(501, OBS_DIM)).astype(np.float32)
        acts = rng.uniform(-1, 1, size=(500, ACT_DIM)).astype(np.float32)
        store.append(Trajectory(obs, acts, np.concatenate([obs[:-1], acts], 1) @ weights))
    pairs = sample_pairs(store, n_pairs, SEGMENT, rng)
    left, right = pairs.gather()
    p = 1 / (1 + np.exp(-(left.returns() - right.returns())))
    return pairs, (rng.random(n_pairs) < p).astype(np.float32)


def trainer_pairs_per_s(pairs: SegmentPairs, labels: np.ndarray, hidden: tuple[int, ...],
                        epochs: int, seed: int) -> float:
    spec = RewardNetSpec("mlp", (OBS_DIM,), (ACT_DIM,), hidden=hidden)
    config = TrainerConfig(lr=LR, weight_decay=WEIGHT_DECAY, batch_size=BATCH, max_epochs=epochs,
                           patience=None, seed=seed)
    report = RewardTrainer(RewardNet(spec, seed=seed), config).fit(pairs, labels)
    return report.pairs_per_s


def bare_pairs_per_s(pairs: SegmentPairs, labels: np.ndarray, hidden: tuple[int, ...],
                     epochs: int, seed: int) -> float:
    """The floor any trainer pays: index, one forward over both sides, loss, AdamW step."""
    left, right = pairs.gather()
    obs = torch.from_numpy(np.stack([left.obs, right.obs], axis=1))
    acts = torch.from_numpy(np.stack([left.acts, right.acts], axis=1))
    z = torch.from_numpy(labels)
    generator = torch.Generator().manual_seed(seed)
    layers: list[nn.Module] = []
    width = OBS_DIM + ACT_DIM
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for size in hidden:
            layers += [nn.Linear(width, size), nn.ReLU()]
            width = size
        net = nn.Sequential(*layers, nn.Linear(width, 1))
    optimizer = torch.optim.AdamW(net.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    started = time.perf_counter()
    for _ in range(epochs):
        order = torch.randperm(len(z), generator=generator)
        for start in range(0, len(z), BATCH):
            index = order[start:start + BATCH]
            returns = net(torch.cat([obs[index], acts[index]], dim=-1)).squeeze(-1).sum(-1)
            loss = F.binary_cross_entropy_with_logits(returns[:, 0] - returns[:, 1], z[index])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    return len(z) * epochs / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=2048)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    pairs, labels = make_pairs(args.pairs, np.random.default_rng(args.seed))
    results: dict[str, dict[str, float]] = {}
    load_at_start = round(os.getloadavg()[0], 2)  # other processes on the box skew both timings
    started = time.perf_counter()
    for hidden in ((32, 32), (256, 256)):
        trainer, bare = [], []
        for round_ in range(args.rounds):
            runs = [(trainer, trainer_pairs_per_s), (bare, bare_pairs_per_s)]
            for sink, run in runs if round_ % 2 == 0 else runs[::-1]:
                sink.append(run(pairs, labels, hidden, args.epochs, args.seed + round_))
        # each round's two runs are adjacent in time, so their ratio cancels slow drifts in load
        ratios = [t / b for t, b in zip(trainer, bare, strict=True)]
        results[f"hidden_{hidden[0]}x2"] = {
            "trainer_pairs_per_s": round(statistics.median(trainer), 1),
            "bare_pairs_per_s": round(statistics.median(bare), 1),
            "ratio": round(statistics.median(ratios), 3),
            "round_ratios": [round(r, 3) for r in ratios],
        }
    ratio = {name: result["ratio"] for name, result in results.items()}
    ratio["min"] = min(ratio.values())
    print(json.dumps({
        "benchmark": "reward_training",
        "pairs": args.pairs, "epochs": args.epochs, "rounds": args.rounds,
        "segment_length": SEGMENT, "batch_size": BATCH, "obs_dim": OBS_DIM, "act_dim": ACT_DIM,
        "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
        "results": results, "ratio": ratio, "goal": GOAL, "ok": ratio["min"] >= GOAL,
        "seconds": round(time.perf_counter() - started, 1),
        "load_average_1m": {"start": load_at_start, "end": round(os.getloadavg()[0], 2)},
    }))


if __name__ == "__main__":
    main()

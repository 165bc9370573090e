"""What a pref-rl query round's refit costs: the old loop-style refit against the batched one.

Setting: Pendulum-v1 sizes (obs 3, act 1) and rlkit pref-rl's reward model and label schedule: a
3-member 256x256 ensemble, 50-step segments, 64-pair batches, up to 30 epochs with patience 10,
200 labels first and 100 more per round up to 500 (``--labels``), each round refitting the same
trainer on the grown dataset. Trajectories are random swings of a pendulum, labelled by
Pendulum's own reward (Bernoulli of sigma(return difference)).

Arms (each runs the whole schedule with fresh weights, same seed):
- ``old``: what rlkit did before: members one after another, every pair gathered again each
  round, up to 30 epochs over every label each round (``batch_members=false``, ``refit=epochs``);
- ``batched``: members as one batched model, pairs cached (``refit=epochs``);
- ``steps``: the per-member loop with the step budget (``refit=steps``);
- ``new``: both (the defaults).
The arms alternate round by round so drifts in machine speed hit all; each arm's time is its
median. Also measured at the last round: gathering the pairs (full vs only the new ones), and
scoring ``--candidates`` query candidates (per member through numpy vs one batched pass); and
each arm's preference accuracy on 1,000 fresh pairs, so speed is not bought with a worse model.
``ok``: the new refit is at least ``GOAL`` times faster than the old one and its accuracy is
within 0.02 of it. Prints one JSON line.

    .venv/bin/python benchmarks/refit.py [--rounds 3] [--labels 200,300,400,500] [--width 256]

Several minutes on an idle 2-core machine, most of it the ``old`` arm (~660 gradient steps of the
3 members against ~230 for ``new``); on a busy one, ``--width 64 --rounds 1`` keeps it short.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np
import torch

from rlkit.data import SegmentPairs, Trajectory, TrajectoryStore, sample_pairs
from rlkit.feedback import PreferenceDataset
from rlkit.prefrl.query import preference_probabilities
from rlkit.reward import (
    RewardEnsemble,
    RewardNet,
    RewardNetSpec,
    RewardTrainer,
    TorchRewardFn,
    TrainerConfig,
    evaluate_reward,
)
from rlkit.reward.pair_tensors import PairTensors

SEGMENT, MEMBERS = 50, 3
GOAL = 3.0
ARMS = {
    "old": {"batch_members": False, "refit": "epochs"},
    "batched": {"batch_members": True, "refit": "epochs"},
    "steps": {"batch_members": False, "refit": "steps"},
    "new": {"batch_members": True, "refit": "steps"},
}


def pendulum_store(n_episodes: int, rng: np.random.Generator) -> TrajectoryStore:
    """200-step episodes of a randomly driven pendulum with Pendulum-v1's reward."""
    store = TrajectoryStore()
    for _ in range(n_episodes):
        theta = rng.uniform(-np.pi, np.pi) + np.cumsum(rng.normal(0, 0.15, 201))
        speed = np.clip(np.diff(theta, prepend=theta[0]) * 20, -8, 8)
        obs = np.stack([np.cos(theta), np.sin(theta), speed], 1).astype(np.float32)
        acts = rng.uniform(-2, 2, size=(200, 1)).astype(np.float32)
        angle = (theta[:-1] + np.pi) % (2 * np.pi) - np.pi
        rews = -(angle**2 + 0.1 * speed[:-1] ** 2 + 0.001 * acts[:, 0] ** 2)
        store.append(Trajectory(obs, acts, rews.astype(np.float32)))
    return store


def oracle_labels(pairs: SegmentPairs, rng: np.random.Generator) -> np.ndarray:
    left, right = pairs.gather()
    p = 1 / (1 + np.exp(-np.clip(left.returns() - right.returns(), -50, 50)))
    return (rng.random(len(pairs)) < p).astype(np.float32)


def make_ensemble(seed: int, width: int) -> RewardEnsemble:
    spec = RewardNetSpec("mlp", (3,), (1,), hidden=(width, width))
    return RewardEnsemble([RewardNet(spec, seed=seed + i) for i in range(MEMBERS)])


def run_schedule(arm: str, store: TrajectoryStore, pairs: SegmentPairs, labels: np.ndarray,
                 schedule: list[int], test: tuple[SegmentPairs, np.ndarray],
                 args: argparse.Namespace) -> dict[str, float]:
    """The whole label schedule on one trainer: refit seconds and the final model's accuracy."""
    seed = args.seed
    config = TrainerConfig(max_epochs=args.epochs, seed=seed, **ARMS[arm])
    trainer = RewardTrainer(make_ensemble(seed, args.width), config)
    dataset = PreferenceDataset(store)
    rng = np.random.default_rng(seed)
    seconds, steps, shown = 0.0, 0, 0
    for n in schedule:
        dataset.append(pairs.subset(np.arange(shown, n)), labels[shown:n], source="simulated")
        shown = n
        if arm == "old":
            trainer._data = None  # the old trainer gathered every pair again on every fit
        report = trainer.fit(dataset, rng=rng)
        seconds += report.seconds
        steps += report.steps
    accuracy = evaluate_reward(trainer.model, *test)["accuracy"]
    return {"seconds": seconds, "steps": steps, "accuracy": accuracy}


def gather_seconds(pairs: SegmentPairs, schedule: list[int], model: RewardEnsemble
                   ) -> tuple[float, float]:
    """Gathering the last round's pairs: all of them, or only those added since the round before."""
    z = torch.zeros(schedule[-1])
    rows, before = np.arange(schedule[-1]), np.arange(schedule[-2])
    args = (model.spec.inputs, model, 1.0, 2**30)
    started = time.perf_counter()
    PairTensors(pairs, rows, z, *args)
    full = time.perf_counter() - started
    previous = PairTensors(pairs, before, z[:len(before)], *args)
    started = time.perf_counter()
    PairTensors(pairs, rows, z, *args, previous=previous)
    return full, time.perf_counter() - started


def scoring_seconds(candidates: SegmentPairs, model: RewardEnsemble) -> tuple[float, float, float]:
    """Query scoring: each member through numpy (before) vs one batched pass; max |difference|."""
    started = time.perf_counter()
    loop = preference_probabilities([_NumpyOnly(TorchRewardFn(m)) for m in model.members],
                                    candidates)
    per_member = time.perf_counter() - started
    started = time.perf_counter()
    batched = preference_probabilities(model, candidates)
    return per_member, time.perf_counter() - started, float(np.abs(loop - batched).max())


class _NumpyOnly:
    """A member's numpy reward, hidden from the batched path (as query scoring ran before)."""

    def __init__(self, reward: TorchRewardFn) -> None:
        self.reward = reward

    def __call__(self, obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray,
                 dones: np.ndarray) -> np.ndarray:
        return self.reward(obs, acts, next_obs, dones)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--labels", default="200,300,400,500", help="labels at each refit")
    parser.add_argument("--candidates", type=int, default=1000, help="query candidates scored")
    parser.add_argument("--width", type=int, default=256, help="hidden width (2 layers)")
    parser.add_argument("--epochs", type=int, default=30, help="max_epochs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    schedule = [int(n) for n in args.labels.split(",")]
    rng = np.random.default_rng(args.seed)
    store = pendulum_store(100, rng)
    pairs = sample_pairs(store, schedule[-1], SEGMENT, rng)
    labels = oracle_labels(pairs, rng)
    test_pairs = sample_pairs(store, 1000, SEGMENT, rng)
    test = (test_pairs, (oracle_labels(test_pairs, rng) > 0.5).astype(np.float32))
    load_at_start = round(os.getloadavg()[0], 2)  # other processes on the box skew every timing
    started = time.perf_counter()
    runs: dict[str, list[dict[str, float]]] = {arm: [] for arm in ARMS}
    for round_ in range(args.rounds):
        order = list(ARMS) if round_ % 2 == 0 else list(ARMS)[::-1]
        for arm in order:
            runs[arm].append(run_schedule(arm, store, pairs, labels, schedule, test, args))
    results = {arm: {
        "refit_s": round(statistics.median(r["seconds"] for r in rs), 2),
        "steps": int(statistics.median(r["steps"] for r in rs)),
        "accuracy": round(statistics.median(r["accuracy"] for r in rs), 4),
        "round_refit_s": [round(r["seconds"], 2) for r in rs],
    } for arm, rs in runs.items()}
    speedup = {arm: round(results["old"]["refit_s"] / results[arm]["refit_s"], 2)
               for arm in ARMS if arm != "old"}
    model = make_ensemble(args.seed, args.width)
    repeats = max(args.rounds, 5)  # these take milliseconds: the best of several
    full, appended = np.min([gather_seconds(pairs, schedule, model) for _ in range(repeats)], 0)
    candidates = sample_pairs(store, args.candidates, SEGMENT, rng)
    per_member, batched, difference = np.min(
        [scoring_seconds(candidates, model) for _ in range(repeats)], 0)
    accuracy_kept = results["new"]["accuracy"] >= results["old"]["accuracy"] - 0.02
    print(json.dumps({
        "benchmark": "refit",
        "labels": schedule, "rounds": args.rounds, "segment_length": SEGMENT, "members": MEMBERS,
        "hidden": [args.width, args.width], "max_epochs": args.epochs,
        "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
        "results": results, "speedup_vs_old": speedup,
        "gather_last_round_s": {"all_pairs": round(full, 4), "new_pairs_only": round(appended, 4)},
        "query_scoring_s": {"candidates": args.candidates, "per_member_numpy": round(per_member, 4),
                            "batched": round(batched, 4), "speedup": round(per_member / batched, 2),
                            "max_abs_difference": float(difference)},
        "goal": GOAL, "ok": speedup["new"] >= GOAL and accuracy_kept,
        "seconds": round(time.perf_counter() - started, 1),
        "load_average_1m": {"start": load_at_start, "end": round(os.getloadavg()[0], 2)},
    }))


if __name__ == "__main__":
    main()

"""Bytes held by a PreferenceDataset of many pairs, against the bytes of the stored trajectories.

A pair is three integers per segment into the store, so the dataset should add little.
Goal: dataset + trajectories at most 1.2x the trajectories alone. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc

import numpy as np

from rlkit.data import Trajectory, TrajectoryStore, sample_pairs
from rlkit.feedback import FIVE, PreferenceDataset, SimulatedTeacher, TeacherConfig


def build_store(n_steps: int, episode_length: int, rng: np.random.Generator) -> TrajectoryStore:
    store = TrajectoryStore()
    for _ in range(n_steps // episode_length):  # Hopper sizes: obs 11, act 3
        obs = rng.normal(size=(episode_length + 1, 11)).astype(np.float32)
        acts = rng.uniform(-1, 1, size=(episode_length, 3)).astype(np.float32)
        store.append(Trajectory(obs=obs, acts=acts, rews=obs[:-1, 5].copy()))
    _ = store.lengths  # consolidate: from here the store holds its arrays once
    return store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--segment-length", type=int, default=50)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    store = build_store(args.steps, 1000, rng)
    trajectory_bytes = store.nbytes

    tracemalloc.start()
    started = time.perf_counter()
    dataset = PreferenceDataset(store, scale=FIVE)
    teacher = SimulatedTeacher(TeacherConfig(scale="five", beta=0.5), rng)
    for _ in range(10):  # labelled in rounds, as an online loop would
        pairs = sample_pairs(store, args.pairs // 10, args.segment_length, rng)
        labels, oracle_p = teacher.label_with_oracle(pairs)
        dataset.append(pairs, labels, source="teacher", annotator="sim-0",
                       meta={"oracle_p": oracle_p})
    seconds = time.perf_counter() - started
    traced_now, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    ratio = (trajectory_bytes + dataset.nbytes) / trajectory_bytes
    print(json.dumps({
        "benchmark": "dataset_memory",
        "pairs": len(dataset),
        "stored_steps": store.n_steps,
        "segment_length": args.segment_length,
        "trajectory_bytes": trajectory_bytes,
        "dataset_bytes": dataset.nbytes,
        "traced_bytes_after_labelling": traced_now,
        "bytes_per_pair": round(dataset.nbytes / len(dataset), 1),
        "label_seconds": round(seconds, 2),
        "ratio": round(ratio, 4),
        "goal": "<= 1.2",
        "ok": ratio <= 1.2,
    }))


if __name__ == "__main__":
    main()

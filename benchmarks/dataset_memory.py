"""Bytes held by a PreferenceDataset of many pairs, against the bytes of the stored trajectories.

A pair is three integers per segment into the store, so the dataset should add little.
Goal: dataset + trajectories at most 1.2x the trajectories alone. Prints one JSON line.

``--case image`` (issue 18): 64x64 RGB frames of ``rlkit/PixelPointMass-v0`` stacked 3 deep
(``StackFrames``), 200-step episodes, 5,000 pairs of 10-step windows (the APEC pixel reference's
counts) in a ``TrajectoryStore(frame_stack=3)``. There the goal is against the frames' bytes, each
distinct frame counted once (64 * 64 * 3 per env step and per reset, plus each episode's k - 1
padding copies of its first frame): (store + dataset) at most 1.2x that; the stacks as they come
would be ~3x (``stacked_ratio``).
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc

import numpy as np

from envs.pixels import make_pixel_env
from rlkit.data import Trajectory, TrajectoryStore, sample_pairs
from rlkit.feedback import FIVE, PreferenceDataset, SimulatedTeacher, TeacherConfig

FRAME_STACK = 3


def build_store(n_steps: int, episode_length: int, rng: np.random.Generator) -> TrajectoryStore:
    store = TrajectoryStore()
    for _ in range(n_steps // episode_length):  # Hopper sizes: obs 11, act 3
        obs = rng.normal(size=(episode_length + 1, 11)).astype(np.float32)
        acts = rng.uniform(-1, 1, size=(episode_length, 3)).astype(np.float32)
        store.append(Trajectory(obs=obs, acts=acts, rews=obs[:-1, 5].copy()))
    _ = store.lengths  # consolidate: from here the store holds its arrays once
    return store


def build_image_store(n_steps: int, episode_length: int, seed: int) -> tuple[TrajectoryStore, int]:
    """Random-action episodes of the stacked pixel point mass; returns the store and the bytes the
    stacked observations had as they came (what a store of whole stacks would hold)."""
    env = make_pixel_env("rlkit/PixelPointMass-v0", frame_stack=FRAME_STACK)
    env.action_space.seed(seed)
    store, stacked_bytes = TrajectoryStore(frame_stack=FRAME_STACK), 0
    for episode in range(n_steps // episode_length):
        obs, _ = env.reset(seed=seed + episode)
        steps = []
        for _ in range(episode_length):
            action = env.action_space.sample()
            next_obs, reward, *_ = env.step(action)
            steps.append((obs, action, float(reward)))
            obs = next_obs
        trajectory = Trajectory.from_steps(steps, obs, terminal=False)
        stacked_bytes += trajectory.obs.nbytes
        store.append(trajectory)  # keeps its frames once; the stacks are dropped with it
    _ = store.lengths
    return store, stacked_bytes


def label(store: TrajectoryStore, n_pairs: int, rounds: int, segment_length: int,
          rng: np.random.Generator) -> tuple[PreferenceDataset, float, int]:
    """A dataset of ``n_pairs`` labelled in rounds, as an online loop would; with the seconds it
    took and the bytes tracemalloc still counts after it (what labelling left behind)."""
    tracemalloc.start()
    started = time.perf_counter()
    dataset = PreferenceDataset(store, scale=FIVE)
    teacher = SimulatedTeacher(TeacherConfig(scale="five", beta=0.5), rng)
    for _ in range(rounds):
        pairs = sample_pairs(store, n_pairs // rounds, segment_length, rng)
        labels, oracle_p = teacher.label_with_oracle(pairs)
        dataset.append(pairs, labels, source="teacher", annotator="sim-0",
                       meta={"oracle_p": oracle_p})
    seconds = time.perf_counter() - started
    traced_now, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return dataset, seconds, traced_now


def image_case(args: argparse.Namespace) -> dict[str, object]:
    steps = args.steps or 10_000
    store, stacked_bytes = build_image_store(steps, 200, seed=0)
    frames_bytes = store.frames.nbytes  # each distinct frame once, padding included
    distinct = steps * 64 * 64 * 3 + len(store) * FRAME_STACK * 64 * 64 * 3
    assert frames_bytes == distinct, (frames_bytes, distinct)
    dataset, seconds, traced_now = label(store, args.pairs or 5_000, 50, args.segment_length or 10,
                                         np.random.default_rng(0))
    ratio = (store.nbytes + dataset.nbytes) / frames_bytes
    return {
        "benchmark": "dataset_memory",
        "case": "image",
        "frame": [64, 64, 3],
        "frame_stack": FRAME_STACK,
        "episode_length": 200,
        "pairs": len(dataset),
        "stored_steps": store.n_steps,
        "segment_length": args.segment_length or 10,
        "frames_bytes": frames_bytes,
        "store_bytes": store.nbytes,
        "stacked_obs_bytes": stacked_bytes,
        "dataset_bytes": dataset.nbytes,
        "traced_bytes_after_labelling": traced_now,
        "bytes_per_pair": round(dataset.nbytes / len(dataset), 1),
        "label_seconds": round(seconds, 2),
        "stacked_ratio": round(stacked_bytes / frames_bytes, 4),
        "ratio": round(ratio, 4),
        "goal": "<= 1.2",
        "ok": ratio <= 1.2,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--case", choices=("vector", "image"), default="vector")
    parser.add_argument("--pairs", type=int, default=None, help="default 100,000 (vector), 5,000 (image)")
    parser.add_argument("--steps", type=int, default=None, help="default 1,000,000 (vector), 10,000 (image)")
    parser.add_argument("--segment-length", type=int, default=None, help="default 50 (vector), 10 (image)")
    args = parser.parse_args()
    if args.case == "image":
        print(json.dumps(image_case(args)))
        return
    args.pairs, args.steps = args.pairs or 100_000, args.steps or 1_000_000
    args.segment_length = args.segment_length or 50
    rng = np.random.default_rng(0)
    store = build_store(args.steps, 1000, rng)
    trajectory_bytes = store.nbytes

    dataset, seconds, traced_now = label(store, args.pairs, 10, args.segment_length, rng)

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

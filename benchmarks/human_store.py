"""Label-submit latency with two annotators labelling at once over HTTP, and the store's labels/s.

A real server (uvicorn, SQLite in WAL mode, every label committed before the reply) serves a queue
of pairs that each need both annotators (redundancy 2). Two annotator processes each fetch the
next pair and submit a label until the queue is empty, as fast as they can — far faster than any
person, so this is the worst case for the store. Reported: submit and next latency p50/p99 (ms),
labels/s over HTTP, and labels/s of the store alone (two threads calling ``LabelStore.submit``).
Goal: submit p99 under 50 ms. Prints one JSON line.

    .venv/bin/python benchmarks/human_store.py [--pairs 500]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from rlkit.data import SegmentPairs, Trajectory, TrajectoryStore
from rlkit.human import LabelStore
from rlkit.human.client import AnnotatorClient
from rlkit.human.server import free_port, start_server_process
from rlkit.human.settings import ServeConfig

GOAL_P99_MS = 50.0


def make_queue(location: Path, n_pairs: int) -> LabelStore:
    """``n_pairs`` distinct pairs of 10-step segments, each to be labelled by two annotators."""
    rng = np.random.default_rng(0)
    trajectories = TrajectoryStore()
    trajectories.extend([Trajectory(obs=rng.normal(size=(101, 3)).astype(np.float32),
                                    acts=rng.normal(size=(100, 1)).astype(np.float32),
                                    rews=np.zeros(100, np.float32)) for _ in range(n_pairs)])
    left = np.stack([np.arange(n_pairs), np.zeros(n_pairs), np.full(n_pairs, 10)], axis=1)
    right = np.stack([np.arange(n_pairs), np.full(n_pairs, 50), np.full(n_pairs, 10)], axis=1)
    store = LabelStore(location)
    store.add_queries(SegmentPairs(trajectories, left, right), redundancy=2)
    return store


def annotate(url: str, annotator: str, results: Any) -> None:
    """One annotator process: next, submit, until done; sends back its latencies in seconds."""
    client = AnnotatorClient(url, annotator)
    next_s, submit_s = [], []
    while True:
        start = time.perf_counter()
        query = client.next()["query"]
        next_s.append(time.perf_counter() - start)
        if query is None:
            break
        start = time.perf_counter()
        client.submit(query["id"], 1.0).raise_for_status()
        submit_s.append(time.perf_counter() - start)
    client.close()
    results.put((next_s, submit_s))


def over_http(run_dir: Path, n_pairs: int) -> dict[str, Any]:
    make_queue(run_dir, n_pairs).close()
    port = free_port()
    server = start_server_process(ServeConfig(run_dir=str(run_dir), port=port))
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    workers = [context.Process(target=annotate, args=(f"http://127.0.0.1:{port}", name, results))
               for name in ("ann", "bob")]
    start = time.perf_counter()
    for worker in workers:
        worker.start()
    collected = [results.get() for _ in workers]
    wall = time.perf_counter() - start
    for worker in workers:
        worker.join()
    server.kill()
    server.join()
    next_ms = np.concatenate([c[0] for c in collected]) * 1e3
    submit_ms = np.concatenate([c[1] for c in collected]) * 1e3
    labels = len(LabelStore(run_dir).live_labels())
    return {
        "labels": labels,
        "lost_or_doubled": 2 * n_pairs - labels,
        "submit_ms": {"p50": round(float(np.percentile(submit_ms, 50)), 2),
                      "p99": round(float(np.percentile(submit_ms, 99)), 2)},
        "next_ms": {"p50": round(float(np.percentile(next_ms, 50)), 2),
                    "p99": round(float(np.percentile(next_ms, 99)), 2)},
        "http_labels_per_s": round(labels / wall, 1),
    }


def store_alone(location: Path, n_pairs: int) -> float:
    """Labels/s of two threads submitting straight into the store (no HTTP), both on every pair."""
    store = make_queue(location, n_pairs)

    def submit_all(annotator: str) -> None:
        for query_id in range(1, n_pairs + 1):
            store.submit(query_id, annotator, 0.0)

    threads = [threading.Thread(target=submit_all, args=(name,)) for name in ("ann", "bob")]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return round(2 * n_pairs / (time.perf_counter() - start), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=500, help="pairs in the queue (each labelled twice)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        http = over_http(Path(tmp) / "http", args.pairs)
        alone = store_alone(Path(tmp) / "alone", args.pairs)
    print(json.dumps({
        "benchmark": "human_store", "annotators": 2, "pairs": args.pairs, **http,
        "store_labels_per_s": alone, "goal_submit_p99_ms": GOAL_P99_MS,
        "meets_goal": http["submit_ms"]["p99"] < GOAL_P99_MS and http["lost_or_doubled"] == 0,
    }))


if __name__ == "__main__":
    main()

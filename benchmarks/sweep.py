"""What ``rlkit sweep --backend ray`` gains on this machine: 4 short trials as Ray Tune trials
against the same 4 run one after another, in the same run (and the local backend, for reference).

Each trial is ``rlkit train-reward`` on one small preference dataset (Pendulum, 200 pairs; the
epochs set its length), in its own subprocess, exactly as a sweep runs it. Sequential: the four
``run_trial`` calls in a row, then the sweep's aggregate (table and PNG), so both ways do the same
work. Ray: ``run_sweep`` on a local Ray with ``--num-cpus`` CPUs, one per trial, started as
``rlkit sweep`` starts it (Ray's start-up is timed apart: on a cluster it is already running;
the ``speedup_with_ray_start`` counts it). Reported, one JSON
line: both wall times, the speed-up (goal >= 1.7x on 2 cores) without and with Ray's start-up,
and the overhead per trial: ``(cpus * ray_wall - sequential_wall) / trials``, the slot-seconds a
trial costs beyond its own work (Tune, the subprocess start, and sharing the cores). The load
average before and after is in the line: other people's work on the same cores lowers the speed-up.

    .venv/bin/python benchmarks/sweep.py [--epochs 150] [--trials 4] [--num-cpus 2]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import tempfile
import time
from pathlib import Path

os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")


def make_dataset(folder: Path) -> str:
    from rlkit.cli import main

    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["collect", "env.id=Pendulum-v1", "env.n_envs=2",
                     'policies=[{"kind":"random","n_steps":2000}]', "--run-dir",
                     str(folder / "c"), "--logger", "jsonl"]) == 0
        assert main(["label", f"trajectories={folder / 'c' / 'trajectories.npz'}", "n_pairs=200",
                     "segment_length=20", "--run-dir", str(folder / "l"), "--logger", "jsonl"]) == 0
    return str(folder / "l" / "preferences")


def cpu_jiffies() -> list[int]:
    """The machine's CPU time so far (/proc/stat): user, nice, system, idle, iowait, ..."""
    with open("/proc/stat", encoding="ascii") as handle:
        return [int(x) for x in handle.readline().split()[1:8]]


def shares(before: list[int], after: list[int]) -> dict[str, float]:
    """Where the machine's CPU went between two readings: ours and others' at normal priority
    (user + system), niced background work (which yields to us), and idle."""
    d = [b - a for a, b in zip(before, after, strict=True)]
    total = max(1, sum(d))
    return {"busy": round((d[0] + d[2] + d[5] + d[6]) / total, 2), "niced": round(d[1] / total, 2),
            "idle": round((d[3] + d[4]) / total, 2)}


def children_cpu() -> float:
    """CPU seconds of this process's finished children (the trials run here, not Ray's)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=150)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--num-cpus", type=int, default=2)
    args = parser.parse_args()

    from rlkit.scale.aggregate import write_aggregate
    from rlkit.scale.ray_backend import import_ray, init_ray
    from rlkit.scale.sweep import SweepSpec, run_sweep, sweep_units
    from rlkit.scale.trial import run_trial
    from rlkit.scale.units import Backend, execute

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="rlkit-bench-sweep-") as tmp:
        root = Path(tmp)
        dataset = make_dataset(root)
        spec = SweepSpec("train-reward", {"trainer.lr": [f"{1e-3 * (i + 1):g}" for i in range(args.trials)]},
                         overrides=(f"dataset={dataset}", f"trainer.max_epochs={args.epochs}",
                                    "trainer.patience=null", "model.hidden=[64,64]"),
                         logger="jsonl")

        marks = [cpu_jiffies()]
        ours = [children_cpu()]
        start = time.perf_counter()
        sequential_trials = []
        units = sweep_units(spec, root / "sequential", "bench")
        results = {}
        for unit in units:
            results[unit.id] = execute(run_trial, unit, lambda _metrics: None)
            sequential_trials.append(results[unit.id].seconds)
        write_aggregate(spec, units, results, root / "sequential")
        sequential = time.perf_counter() - start
        load_between = os.getloadavg()
        marks.append(cpu_jiffies())
        ours.append(children_cpu())

        t0 = time.perf_counter()  # the local backend (a process per trial) on the same cores
        run_sweep(spec, root / "local", Backend("local", workers=args.num_cpus))
        local = time.perf_counter() - t0
        marks.append(cpu_jiffies())
        ours.append(children_cpu())

        ray = import_ray()
        t0 = time.perf_counter()
        init_ray(ray, Backend("ray", num_cpus=args.num_cpus))
        ray_start = time.perf_counter() - t0
        try:
            t0 = time.perf_counter()
            table = run_sweep(spec, root / "ray", Backend("ray", resources={"cpu": 1, "gpu": 0}))
            on_ray = time.perf_counter() - t0
            marks.append(cpu_jiffies())
        finally:
            ray.shutdown()
        done = sum(row["seeds_done"] for row in table["rows"])
        sequential_done = sum(result.status == "done" for result in results.values())
    load_after = os.getloadavg()
    speedup = sequential / on_ray
    print(json.dumps({
        "benchmark": "sweep", "trials": args.trials, "trials_done_on_ray": done,
        "command": f"rlkit train-reward, 200 pairs, {args.epochs} epochs, 64x64 MLP",
        "sequential_s": round(sequential, 2),
        "sequential_trial_s": [round(t, 2) for t in sequential_trials],
        "ray_sweep_s": round(on_ray, 2), "ray_start_s": round(ray_start, 2),
        "local_backend_s": round(local, 2), "local_speedup": round(sequential / local, 2),
        "speedup": round(speedup, 2), "speedup_with_ray_start": round(sequential / (on_ray + ray_start), 2),
        "overhead_per_trial_s": round((args.num_cpus * on_ray - sequential) / args.trials, 2),
        "ok": bool(speedup >= 1.7 and done == sequential_done == args.trials), "goal": ">= 1.7x on 2 cores",
        "cpus": len(os.sched_getaffinity(0)), "ray_num_cpus": args.num_cpus,
        "load_avg_1m": {"before": round(load_before[0], 2), "between": round(load_between[0], 2),
                        "after": round(load_after[0], 2)},
        "trial_cpu_s": {"sequential": round(ours[1] - ours[0], 1), "local": round(ours[2] - ours[1], 1),
                        "cores_obtained_local": round((ours[2] - ours[1]) / local, 2)},
        "cpu_shares": {"sequential": shares(marks[0], marks[1]), "local": shares(marks[1], marks[2]),
                       "ray": shares(marks[2], marks[3])},
        "note": "the cores are shared with other work (other people's tests and a niced background "
                "run, which kept about cpu_shares.niced of the machine despite its nice level); "
                "when two trials at once obtain about one core (cores_obtained_local), no backend "
                "can reach 2x",
    }))


if __name__ == "__main__":
    main()

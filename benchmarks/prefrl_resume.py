"""What pref-rl's resume point costs: writing it, against the agent training between two rounds.

Setting: SAC on Pendulum-v1 (the pref-rl loop of ``rlkit pref-rl``), with ``--steps`` steps of
experience already gathered: the trajectory store and the replay buffer both hold that many, as
late in a long run. Each query round first writes the resume point (``rlkit.prefrl.resume``);
the baseline is the SAC training that happens between two rounds (``--every`` env steps,
one gradient step per env step). Reported: write time, training time per round, and their ratio
(the share of wall time resuming costs). Best of ``--rounds`` interleaved rounds. One JSON line.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/prefrl_resume.py [--steps 100000] [--every 2000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from rlkit.config import load_config
from rlkit.data import Trajectory
from rlkit.factories.configs import PrefRLConfig
from rlkit.prefrl import PreferenceRL
from rlkit.prefrl import resume as prefrl_resume


def loop_with_experience(steps: int, every: int) -> PreferenceRL:
    config = load_config(PrefRLConfig, None, [
        "env.id=Pendulum-v1", "env.n_envs=1", "agent.algo=sac",
        f"agent.kwargs={{learning_starts: 0, batch_size: 256, buffer_size: {steps}}}",
        f"query.every_steps={every}", "model.hidden=[64, 64]",
    ])
    loop = PreferenceRL.from_config(config)
    rng = np.random.default_rng(0)
    for _ in range(steps // 200):  # Pendulum's 200-step episodes
        loop.store.append(Trajectory(obs=rng.normal(size=(201, 3)).astype(np.float32),
                                     acts=rng.uniform(-2, 2, size=(200, 1)).astype(np.float32),
                                     rews=rng.normal(size=200).astype(np.float32)))
    buffer = loop.agent.replay_buffer
    buffer.observations[:] = rng.normal(size=buffer.observations.shape)
    buffer.next_observations[:] = rng.normal(size=buffer.next_observations.shape)
    buffer.actions[:] = rng.uniform(-1, 1, size=buffer.actions.shape)
    buffer.rewards[:] = rng.normal(size=buffer.rewards.shape)
    buffer.full, buffer.pos = True, 0
    return loop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    loop = loop_with_experience(args.steps, args.every)
    loop.agent.learn(1)  # set up the agent's env and logger once
    writes, trains = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            start = time.perf_counter()
            prefrl_resume.save(loop, Path(tmp) / "resume", pending_pairs=10)
            writes.append(time.perf_counter() - start)
            start = time.perf_counter()
            loop.agent.learn(args.every, reset_num_timesteps=False)
            trains.append(time.perf_counter() - start)
        size_mb = sum(p.stat().st_size for p in (Path(tmp) / "resume").rglob("*") if p.is_file()) / 2**20
    write_s, train_s = min(writes), min(trains)
    print(json.dumps({
        "benchmark": "prefrl_resume", "experience_steps": args.steps, "steps_per_round": args.every,
        "resume_point_mb": round(size_mb, 1), "write_s": round(write_s, 3),
        "train_s_per_round": round(train_s, 2), "overhead": round(write_s / train_s, 4),
    }))


if __name__ == "__main__":
    main()

"""rlkit on a GPU (issue 17): a tiny pipeline of each kind on CUDA with its networks checked to be
there, and reward-training pairs/s on the GPU against the CPU. Prints one JSON line.

    .venv/bin/python benchmarks/gpu.py [--device cuda:N] [--pairs N] [--epochs E] [--rounds R]

Stages, each on ``--device`` (default ``cuda``), each recording whether every network it built
(and reloaded) sits there: a reward model fitted on preference pairs; an AIL run of one round with
a SAC generator and APEC's discriminator (state-only max-ent, MLP 512x2, batches of 1000),
checkpointed, loaded back, and resumed by a trainer on the CPU; an AIRL round with a PPO
generator and a gradient penalty (the generator's log-probabilities on the device); IPPO and
parameter-shared PPO updates on Overcooked (two IPPO runs of one seed must take the same actions,
which the CPU RNG samples), checkpointed and loaded back; an SB3 agent from ``make_agent``; and
D-REX's behaviour cloning. Then the reward-training speed: an MLP 256x2 on 50-step segments of
Hopper's sizes, batches of 256, fitted ``--rounds`` times on each device in turn (after an
untimed warm-up each), medians reported; the pairs are ``benchmarks/reward_training.py``'s.

Where torch sees no CUDA device it prints ``{"benchmark": "gpu", "cuda": false, ...}`` and exits 0
(nothing measured). ``--device cpu`` runs every stage on the CPU: a dry run of this script.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from reward_training import ACT_DIM, OBS_DIM, SEGMENT, make_pairs  # this folder's: run as a script
from stable_baselines3.common.env_util import make_vec_env

import envs.overcooked as oc
from rlkit.ail import AILConfig, AILTrainer, CheckpointStore, DiscriminatorConfig
from rlkit.apec.drex import DrexConfig, train_bc
from rlkit.data import SegmentPairs, Trajectory, collect_trajectories
from rlkit.devices import resolve_device
from rlkit.factories.builders import make_agent
from rlkit.factories.configs import AgentConfig
from rlkit.marl import MarlConfig, MultiAgentPPO, OvercookedRows, load_checkpoint, save_checkpoint
from rlkit.reward import RewardNet, RewardNetSpec, RewardTrainer, TrainerConfig

BATCH, HIDDEN = 256, (256, 256)
ENV = "Pendulum-v1"
OVERCOOKED: dict[str, Any] = {"layout": "A", "recipe": "lettuce-tomato", "n_agents": 3}


def placed(device: torch.device, *modules: torch.nn.Module, tensors: Iterable[torch.Tensor] = ()) -> bool:
    """Whether every parameter of ``modules`` and every tensor is on ``device``'s kind."""
    found = {p.device.type for m in modules for p in m.parameters()} | {t.device.type for t in tensors}
    return found == {device.type}


def fit(pairs: SegmentPairs, labels: np.ndarray, device: torch.device, epochs: int) -> tuple[float, bool]:
    """Pairs/s of one ``RewardTrainer.fit`` on ``device``, and whether the model trained there."""
    net = RewardNet(RewardNetSpec("mlp", (OBS_DIM,), (ACT_DIM,), hidden=HIDDEN), seed=0)
    config = TrainerConfig(batch_size=BATCH, max_epochs=epochs, patience=None, device=str(device))
    trainer = RewardTrainer(net, config)
    report = trainer.fit(pairs, labels)
    return report.pairs_per_s, placed(device, trainer.model)


def reward_speed(device: torch.device, n_pairs: int, epochs: int, rounds: int) -> dict[str, Any]:
    pairs, labels = make_pairs(n_pairs, np.random.default_rng(0))
    cpu = torch.device("cpu")
    for where in (device, cpu):  # warm-up: CUDA context, kernels, allocator
        fit(pairs.subset(np.arange(min(n_pairs, 4 * BATCH))), labels[: 4 * BATCH], where, 1)
    rates: dict[str, list[float]] = {"device": [], "cpu": []}
    on_device = True
    for _ in range(rounds):
        rate, here = fit(pairs, labels, device, epochs)
        rates["device"].append(rate)
        on_device &= here
        rates["cpu"].append(fit(pairs, labels, cpu, epochs)[0])
    device_rate, cpu_rate = statistics.median(rates["device"]), statistics.median(rates["cpu"])
    return {"on_device": on_device, "pairs": n_pairs, "epochs": epochs, "rounds": rounds,
            "hidden": list(HIDDEN), "batch_size": BATCH, "segment_length": SEGMENT,
            "device_pairs_per_s": round(device_rate, 1), "cpu_pairs_per_s": round(cpu_rate, 1),
            "speedup": round(device_rate / cpu_rate, 2), "cpu_threads": torch.get_num_threads()}


def demos(n: int = 2) -> list[Trajectory]:
    venv = make_vec_env(ENV, n_envs=2, seed=0)
    try:
        return collect_trajectories(venv, None, np.random.default_rng(0), n_episodes=n)[:n]
    finally:
        venv.close()


def ail_sac(device: torch.device) -> dict[str, Any]:
    disc = DiscriminatorConfig(loss="maxent", state_only=True, hidden=(512, 512), reward_clip=10.0,
                               reward_on="next_obs", batch_size=1000, lr=1e-4, weight_decay=1e-3)
    config = AILConfig(rounds=1, steps_per_round=256, discriminator=disc, device=str(device))
    with tempfile.TemporaryDirectory() as folder:
        store = CheckpointStore(folder)
        trainer = AILTrainer(config, make_vec_env(ENV, n_envs=2, seed=1), demos(), "sac",
                             {"learning_starts": 64, "batch_size": 256}, checkpoints=store)
        trainer.train()
        loaded = store.load(0, device)
        on_cpu = AILTrainer(config.replace(rounds=2, device="cpu"), make_vec_env(ENV, n_envs=2, seed=1),
                            demos(), "sac", {"learning_starts": 64, "batch_size": 256}, checkpoints=store)
        return {"on_device": placed(device, trainer.discriminator, trainer.generator.policy,
                                    tensors=trainer.expert_tensors.values()),
                "reloaded_on_device": placed(device, loaded.discriminator, loaded.generator.policy),
                "resumed_on_cpu": on_cpu.resume() == 0 and placed(torch.device("cpu"), on_cpu.discriminator),
                "disc": trainer.records[-1].disc}


def ail_airl(device: torch.device) -> dict[str, Any]:
    disc = DiscriminatorConfig(loss="airl", hidden=(64, 64), grad_penalty=1.0, batch_size=256,
                               updates_per_round=4)
    config = AILConfig(rounds=1, steps_per_round=256, discriminator=disc, device=str(device))
    trainer = AILTrainer(config, make_vec_env(ENV, n_envs=2, seed=2), demos(), "ppo")
    record = trainer.run_round()
    return {"on_device": placed(device, trainer.discriminator, trainer.generator.policy), "disc": record.disc}


def marl(device: torch.device) -> dict[str, Any]:
    def trained(sharing: str) -> MultiAgentPPO:
        rows = OvercookedRows(oc.OvercookedVecEnv(8, **OVERCOOKED))
        trainer = MultiAgentPPO(rows, MarlConfig(sharing=sharing, n_steps=32, batch_size=128, n_epochs=2,
                                                 device=str(device)))
        trainer.learn(32 * 8)
        return trainer

    first, again, shared = trained("independent"), trained("independent"), trained("shared")
    with tempfile.TemporaryDirectory() as folder:
        save_checkpoint(first, Path(folder) / "ckpt")
        loaded = load_checkpoint(Path(folder) / "ckpt", OvercookedRows(oc.OvercookedVecEnv(8, **OVERCOOKED)))
    obs = first.env.reset(seed=9)
    return {
        "on_device": placed(device, *first.policies, *shared.policies),
        "reloaded_on_device": placed(device, *loaded.policies),
        "same_seed_same_actions": all(np.array_equal(a.rollout_buffer.actions, b.rollout_buffer.actions)
                                      for a, b in zip(first.models, again.models, strict=True)),
        "reloaded_same_greedy_actions": bool(np.array_equal(first.predict(obs, deterministic=True),
                                                            loaded.predict(obs, deterministic=True))),
    }


def agent(device: torch.device) -> dict[str, Any]:
    config = AgentConfig(algo="sac", hyperparams="sb3", kwargs={"learning_starts": 32}, device=str(device))
    venv = make_vec_env(ENV, n_envs=1, seed=3)
    model = make_agent(config, venv, seed=3)
    model.learn(128)
    return {"on_device": model.device.type == device.type and placed(device, model.policy)}


def behaviour_cloning(device: torch.device) -> dict[str, Any]:
    given = demos()
    space = make_vec_env(ENV, n_envs=1).action_space
    policy = train_bc(given, space, DrexConfig(bc_epochs=5, device=str(device)))
    acts = policy.act(given[0].obs[:8])
    return {"on_device": placed(device, policy), "acts_shape": list(acts.shape)}


STAGES: dict[str, Callable[[torch.device], dict[str, Any]]] = {
    "ail_sac_maxent": ail_sac, "ail_ppo_airl": ail_airl, "marl": marl, "agent": agent,
    "bc": behaviour_cloning,
}


def run_stage(stage: Callable[[torch.device], dict[str, Any]], device: torch.device) -> dict[str, Any]:
    """The stage's record with its seconds; an exception is recorded (the others still run)."""
    start = time.perf_counter()
    try:
        record = stage(device)
    except Exception as error:  # a benchmark reports every stage, whichever fails
        record = {"on_device": False, "error": f"{type(error).__name__}: {error}",
                  "where": traceback.format_exc(limit=-3).splitlines()[-4:]}
    return record | {"seconds": round(time.perf_counter() - start, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N, or cpu for a dry run")
    parser.add_argument("--pairs", type=int, default=8192)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(json.dumps({"benchmark": "gpu", "cuda": False, "torch": torch.__version__, "ok": None,
                          "note": "torch sees no CUDA device here: nothing measured; run this on a GPU "
                                  "machine with a CUDA build of torch (see the Makefile)"}))
        return 0
    device = resolve_device(args.device)
    started = time.perf_counter()
    stages = {name: run_stage(stage, device) for name, stage in STAGES.items()}
    stages["reward_training"] = run_stage(
        lambda where: reward_speed(where, args.pairs, args.epochs, args.rounds), device)
    checks = [value for record in stages.values() for key, value in record.items()
              if key.endswith(("on_device", "on_cpu")) or key.startswith(("same_", "reloaded_same"))]
    print(json.dumps({
        "benchmark": "gpu", "cuda": device.type == "cuda", "device": str(device),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "torch": torch.__version__,
        "reward_pairs_per_s": {key: stages["reward_training"].get(key)
                               for key in ("device_pairs_per_s", "cpu_pairs_per_s", "speedup")},
        "stages": stages, "ok": all(checks) and not any("error" in r for r in stages.values()),
        "seconds": round(time.perf_counter() - started, 1),
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

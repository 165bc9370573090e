"""``rlkit demo``: the whole loop on embedded defaults, with a table and a plot at the end."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from rlkit.factories.agent import EpisodeLog, train_agent_on_reward
from rlkit.factories.builders import (
    build_reward_model,
    collect_store,
    label_pairs,
    store_spaces,
    trainer_config,
    true_return,
)
from rlkit.factories.configs import CollectConfig, DemoConfig
from rlkit.logging import Logger, Track, progress_of
from rlkit.persistence import atomic_write_json
from rlkit.persistence.agents import save_agent
from rlkit.reward import RewardTrainer, TrainReport, save_reward_model
from rlkit.reward.metrics import evaluate_dataset, predict_step_rewards
from rlkit.reward.numpy_rewards import TorchRewardFn


def run_demo(config: DemoConfig, run_dir: Path, logger: Logger) -> dict[str, Any]:
    started = time.perf_counter()
    rng = np.random.default_rng(config.seed)
    timings: dict[str, float] = {}

    progress = progress_of(logger)
    stages = None if progress is None else progress.task("demo stages", 5)

    def lap(name: str, since: float) -> float:
        timings[name] = round(time.perf_counter() - since, 1)
        if stages is not None:
            stages.advance()
        return time.perf_counter()

    t = time.perf_counter()
    collect = CollectConfig(env=config.env, policies=config.policies,
                            max_length=config.max_length, seed=config.seed)
    store = collect_store(collect, rng)
    t = lap("collect", t)
    dataset = label_pairs(store, config.label, rng)
    dataset.save(run_dir / "preferences")
    train, held_out = dataset.split(config.train_reward.held_out_fraction, rng)
    t = lap("label", t)

    model = build_reward_model(config.train_reward.model, *store_spaces(store), config.seed)
    trainer = RewardTrainer(model, trainer_config(config.train_reward.trainer, config.seed))
    report = trainer.fit(train, rng=rng)
    held_out_metrics = evaluate_dataset(model, held_out)
    save_reward_model(model, run_dir / "reward_model")
    for epoch, (loss, acc) in enumerate(zip(report.val_loss, report.val_accuracy, strict=True)):
        logger.log({"reward/val_loss": loss, "reward/val_accuracy": acc}, step=epoch)
    t = lap("train_reward", t)

    steps = None if progress is None else progress.follow(  # moved by the agent/... episode returns
        Track("demo agent env steps", config.agent.total_timesteps, prefixes=("agent/",)))
    agent, episodes = train_agent_on_reward(
        TorchRewardFn(model), config.env, config.agent, config.seed, logger
    )
    if steps is not None:  # trained: whatever episode was logged last
        steps.update(config.agent.total_timesteps)
    save_agent(agent, run_dir / "agent")
    t = lap("train_agent", t)
    agent_mean, agent_std = true_return(agent, config.env, config.agent.eval_episodes)
    random_mean, random_std = true_return(None, config.env, config.agent.eval_episodes)
    lap("evaluate", t)

    summary = {
        "env": config.env.id,
        "pairs": {"train": len(train), "held_out": len(held_out), "scale": config.label.teacher.scale},
        "held_out": held_out_metrics,
        "reward_training": {"epochs": report.epochs, "best_epoch": report.best_epoch,
                            "pairs_per_s": round(report.pairs_per_s)},
        "agent_true_return": {"mean": agent_mean, "std": agent_std},
        "random_true_return": {"mean": random_mean, "std": random_std},
        "seconds": timings | {"total": round(time.perf_counter() - started, 1)},
    }
    atomic_write_json(run_dir / "summary.json", summary)
    plot_path = plot_demo(run_dir / "demo.png", dataset=held_out, model=model, report=report,
                          episodes=episodes, random_return=random_mean, title=config.env.id)
    logger.log_image("demo", plot_path, step=config.agent.total_timesteps)
    logger.log({"held_out/" + k: float(v) for k, v in held_out_metrics.items()},
               step=config.agent.total_timesteps)
    return summary


def summary_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    held = summary["held_out"]
    agent, random = summary["agent_true_return"], summary["random_true_return"]
    rows = [
        ("held-out preference accuracy", f"{held['accuracy']:.3f}"),
        ("held-out oracle cross-entropy", f"{held.get('oracle_cross_entropy', float('nan')):.3f}"),
        ("per-step reward correlation (Pearson)", f"{held['step_pearson']:.3f}"),
        ("segment return correlation (Pearson)", f"{held['return_pearson']:.3f}"),
        ("agent true return (learned reward)", f"{agent['mean']:.1f} ± {agent['std']:.1f}"),
        ("random policy true return", f"{random['mean']:.1f} ± {random['std']:.1f}"),
        ("wall time (s)", _seconds(summary["seconds"])),
    ]
    return rows


def _seconds(timings: dict[str, float]) -> str:
    parts = ", ".join(f"{name} {value:.0f}" for name, value in timings.items() if name != "total")
    return f"{timings['total']:.0f} ({parts})"


def plot_demo(
    path: Path, *, dataset: Any, model: Any, report: TrainReport, episodes: EpisodeLog,
    random_return: float, title: str,
) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    left, _ = dataset.pairs.gather()
    predicted = predict_step_rewards(model, left).sum(axis=1)
    figure, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    axes[0].scatter(left.returns(), predicted, s=6, alpha=0.5)
    axes[0].set(xlabel="true segment return", ylabel="predicted segment return",
                title="held-out segments")
    axes[1].plot(report.train_loss, label="train loss")
    axes[1].plot(report.val_loss, label="validation loss")
    axes[1].axvline(report.best_epoch, color="grey", linestyle=":", label="kept")
    axes[1].set(xlabel="epoch", title="reward model training")
    axes[1].legend()
    axes[2].plot(episodes.timesteps, episodes.true_returns, ".", alpha=0.4, label="episodes")
    if len(episodes.true_returns) >= 5:
        window = max(5, len(episodes.true_returns) // 10)
        smooth = np.convolve(episodes.true_returns, np.ones(window) / window, mode="valid")
        axes[2].plot(episodes.timesteps[window - 1:], smooth, label=f"mean of {window}")
    axes[2].axhline(random_return, color="red", linestyle="--", label="random policy")
    axes[2].set(xlabel="timestep", ylabel="true episode return",
                title="agent trained on the learned reward")
    axes[2].legend()
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path

"""``rlkit demo``: online preference RL against the same agent on the true reward and a random
policy, on embedded defaults, with a table and a plot at the end.

The arms, in this order, each from the config's seed: the pref-rl loop (``rlkit.prefrl``: random
steps, then the agent on the learned reward with a query round every ``query.every_steps``); the
same agent settings for the same env steps on the env's own reward (``true_reward_arm``); and
uniformly random actions. Every arm is scored the same way: its true return on
``eval_episodes`` fresh episodes (deterministic actions for the agents), on env seeds that no
training env used. The run is the same for the same seed on one machine (tested); the command
pins torch to one thread (``--torch-threads``) and its CPU kernels to AVX2 code paths
(``rlkit.devices.pin_cpu_kernels``), which the summary records.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm

from rlkit.devices import cpu_kernel_settings
from rlkit.factories.agent import EpisodeLog
from rlkit.factories.budget import agent_updates
from rlkit.factories.builders import true_returns
from rlkit.factories.configs import DemoConfig
from rlkit.logging import Logger
from rlkit.persistence import atomic_write_json
from rlkit.persistence.agents import save_agent
from rlkit.prefrl import PrefRLResult
from rlkit.prefrl.loop import train_on_true_reward
from rlkit.reward import save_reward_model
from rlkit.runners.prefrl import build_preference_rl

PROTOCOL = "deterministic actions"  # how the agents act in the evaluation episodes
LEARNED, TRUE, RANDOM = "pref-rl agent (learned reward)", "same agent on the true reward", "random policy"
ARM_KEYS = {LEARNED: "learned_reward", TRUE: "true_reward", RANDOM: "random"}  # metric names; arm order


def run_demo(config: DemoConfig, run_dir: Path, logger: Logger) -> dict[str, Any]:
    """Run every arm of the demo; save its agents, the reward model, the labels, the summary and
    the plot in ``run_dir``.

    Args:
        config: the demo's settings (a ``PrefRLConfig`` with the demo's defaults).
        run_dir: where the agents, ``summary.json`` and ``demo.png`` go.
        logger: the run's logger (pref-rl's metrics and SB3's, then the arms' evaluated returns).

    Returns:
        The summary written to ``summary.json``.
    """
    started = time.perf_counter()
    timings: dict[str, float] = {}

    t = time.perf_counter()
    loop = build_preference_rl(config, logger)  # as `rlkit pref-rl` builds it: SB3's metrics, progress
    result = loop.learn()
    save_agent(result.agent, run_dir / "agent_learned_reward")
    save_reward_model(loop.model, run_dir / "reward_model", norm=loop.reward_norm)
    result.dataset.save(run_dir / "preferences")
    timings["pref_rl"] = round(time.perf_counter() - t, 1)
    arms: dict[str, BaseAlgorithm | None] = {LEARNED: result.agent}
    curves = {LEARNED: result.episodes}
    updates = {LEARNED: agent_updates(result.agent)}
    if config.true_reward_arm:
        t = time.perf_counter()
        baseline = train_on_true_reward(config)  # not logged: its steps would run backwards
        save_agent(baseline.agent, run_dir / "agent_true_reward")
        timings["true_reward"] = round(time.perf_counter() - t, 1)
        arms[TRUE], curves[TRUE] = baseline.agent, baseline.episodes
        updates[TRUE] = agent_updates(baseline.agent)
    arms[RANDOM] = None

    t = time.perf_counter()
    returns = {name: true_returns(agent, config.env, config.eval_episodes) for name, agent in arms.items()}
    timings["evaluate"] = round(time.perf_counter() - t, 1)
    stats = {name: return_stats(values) for name, values in returns.items()}
    summary = {
        "env": config.env.id,
        "env_steps": config.agent.total_timesteps,
        "agent": config.agent.algo,
        "seed": config.seed,
        "evaluation": {"episodes": config.eval_episodes, "actions": PROTOCOL,
                       "env_seed": config.env.seed + 10_000},
        "arms": stats,
        "agent_updates": updates,
        "reward_model": reward_model_summary(result),
        "training_episodes": {name: {"timesteps": [int(t) for t in log.timesteps],
                                     "true_returns": [float(r) for r in log.true_returns]}
                              for name, log in curves.items()},
        "seconds": timings | {"total": round(time.perf_counter() - started, 1)},
        "cpu_kernels": cpu_kernel_settings(),
    }
    atomic_write_json(run_dir / "summary.json", summary)
    plot_path = plot_demo(run_dir / "demo.png", result, curves, summary)
    logger.log_image("demo", plot_path, step=config.agent.total_timesteps)
    logger.log({f"demo/{ARM_KEYS[name]}_true_return": arm["mean"] for name, arm in stats.items()},
               step=config.agent.total_timesteps)
    return summary


def return_stats(returns: np.ndarray) -> dict[str, Any]:
    """Mean, sample sd (ddof 1) and n of one arm's evaluation returns (the returns kept too)."""
    return {"mean": float(np.mean(returns)), "sd": float(np.std(returns, ddof=1)),
            "n": int(returns.size), "returns": [float(r) for r in returns]}


def reward_model_summary(result: PrefRLResult) -> dict[str, Any]:
    """The labels the loop asked for and how well the reward model predicted each round's new
    pairs before it was refit on them (generalisation to the agent's newer behaviour)."""
    rounds = result.rounds
    return {"labels": len(result.dataset), "query_rounds": len(rounds),
            "fresh_accuracy_by_round": [float(r.fresh_accuracy) for r in rounds],
            "last_fresh_accuracy": float(rounds[-1].fresh_accuracy) if rounds else float("nan"),
            "last_return_pearson": float(rounds[-1].return_pearson) if rounds else float("nan")}


def summary_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The console table: each arm's true return (mean ± sd), then the reward model and the wall
    time; ``evaluation_note`` says how the returns were measured."""
    arms = summary["arms"]  # (a summary read back from its file has its keys sorted)
    rows = [(f"{name}: true return", f"{arms[name]['mean']:.1f} ± {arms[name]['sd']:.1f}")
            for name in ARM_KEYS if name in arms]
    reward = summary["reward_model"]
    rows += [
        ("agent updates (SB3's: epochs over rollouts, or gradient steps)",
         ", ".join(f"{name.split(' (')[0]} {n}" for name, n in summary["agent_updates"].items())),
        ("labels (query rounds)", f"{reward['labels']} ({reward['query_rounds']})"),
        ("reward model: accuracy on the last round's new pairs", f"{reward['last_fresh_accuracy']:.3f}"),
        ("wall time (s)", _seconds(summary["seconds"])),
    ]
    return rows


def evaluation_note(summary: dict[str, Any]) -> str:
    """How every true return of the summary was measured, in one line."""
    evaluation = summary["evaluation"]
    return (f"true return: mean ± sd (ddof 1) over {evaluation['episodes']} fresh episodes per arm, the "
            f"agents' {evaluation['actions']}, env seed {evaluation['env_seed']}")


def _seconds(timings: dict[str, float]) -> str:
    parts = ", ".join(f"{name.replace('_', ' ')} {value:.0f}" for name, value in timings.items()
                      if name != "total")
    return f"{timings['total']:.0f} ({parts})"


def plot_demo(path: Path, result: PrefRLResult, curves: dict[str, EpisodeLog],
              summary: dict[str, Any]) -> Path:
    """Training curves of the agents with the evaluated returns beside them, and the reward
    model's accuracy on each round's new pairs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [2, 1]})
    colours = {LEARNED: "tab:blue", TRUE: "tab:green", RANDOM: "tab:red"}
    for name, episodes in curves.items():
        steps, values = np.asarray(episodes.timesteps), np.asarray(episodes.true_returns)
        axes[0].plot(steps, values, ".", alpha=0.25, color=colours[name])
        window = max(5, len(values) // 20)
        if len(values) >= window:
            smooth = np.convolve(values, np.ones(window) / window, mode="valid")
            axes[0].plot(steps[window - 1:], smooth, color=colours[name],
                         label=f"{name}, training episodes (mean of {window})")
    evaluation = summary["evaluation"]
    for name, stats in summary["arms"].items():
        axes[0].errorbar([summary["env_steps"] * 1.03], [stats["mean"]], yerr=[stats["sd"]], fmt="o",
                         capsize=4, color=colours[name],
                         label=f"{name}: evaluated {stats['mean']:.0f} ± {stats['sd']:.0f}")
    axes[0].axhline(summary["arms"][RANDOM]["mean"], color=colours[RANDOM], linestyle="--", linewidth=1)
    axes[0].set(xlabel="env steps", ylabel="true episode return",
                title=f"true return; evaluated: mean ± sd, {evaluation['episodes']} episodes, "
                      f"{evaluation['actions']}")
    axes[0].legend(fontsize=7, loc="lower right")
    rounds = result.rounds
    axes[1].plot([r.timestep for r in rounds], [r.fresh_accuracy for r in rounds], "o-")
    axes[1].set(xlabel="env steps", ylabel="accuracy", ylim=(0, 1.02),
                title="reward model on each round's new pairs\n(before refitting on them)")
    axes[1].axhline(0.5, color="grey", linestyle=":", label="chance")
    axes[1].legend(fontsize=7)
    figure.suptitle(f"rlkit demo: {summary['env']}, {summary['agent'].upper()}, seed {summary['seed']}, "
                    f"{summary['reward_model']['labels']} labels")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path

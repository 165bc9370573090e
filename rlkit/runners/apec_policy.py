"""The last stage of ``rlkit apec``: a fresh agent trained on a learned reward, and its true return.

``run_policy`` builds the agent (SAC from pixels on a pixel task, ``rlkit.factories`` otherwise),
pays it the learned reward on ``s`` or ``s'``, seeds an off-policy agent's replay buffer with AIL
rollouts as the reference does (``eval_reward.py:150-151``), trains it in resumable chunks
(``rlkit.factories.resumable``) and reports its true return: deterministic, and sampled from the
policy as the reference evaluates (``eval_reward.py:40-41``, ``StoEpRetTest``).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rlkit.ail.generator import make_generator
from rlkit.apec.config import ApecConfig
from rlkit.apec.pair_config import RolloutConfig
from rlkit.apec.rollouts import VenvFactory, policy_rollouts, real_part
from rlkit.data import Trajectory, TrajectoryStore
from rlkit.devices import machine, resolve_device
from rlkit.factories.agent import EpisodeLog, EpisodeLogCallback
from rlkit.factories.algorithms import ALGORITHMS
from rlkit.factories.budget import agent_updates
from rlkit.factories.builders import make_agent
from rlkit.factories.resumable import ResumableTraining
from rlkit.logging import Logger, Track, progress_of
from rlkit.logging.local import metrics_dirs, rewind_metrics
from rlkit.persistence import atomic_write_json, read_json
from rlkit.persistence.agents import load_agent, save_agent
from rlkit.persistence.formats import weights_sha256
from rlkit.reward.normalize import NormalizedReward, RunningNorm
from rlkit.reward.numpy_rewards import TorchRewardFn
from rlkit.types import RewardFn
from rlkit.wrappers import RewardVecEnvWrapper
from rlkit.wrappers.reward_batch import transition_rewards

__all__ = ["POLICY_POINT_EVERY", "STOCHASTIC", "evaluation_episodes", "paid_reward", "policy_chunk",
           "run_policy", "seed_replay", "stochastic_return", "true_returns"]

STOCHASTIC = "final_true_return_stochastic"  # result.json's key of the reference's protocol


def run_policy(config: ApecConfig, make_venv: VenvFactory, reward: Any, out_dir: Path,
               logger: Logger | None, seed_store: TrajectoryStore | None = None,
               train_venv: VenvFactory | None = None) -> dict[str, Any]:
    """A fresh agent on the learned reward (``r(s')`` by default, normalised if asked); its TRUE
    return during and after training. An off-policy agent's replay buffer is first seeded with
    ``policy.seed_rollouts`` trajectories of ``seed_store`` (the AIL checkpoints' rollouts), as the
    reference (eval_reward.py:150-151), and its random steps are counted from the buffer's size.
    Cached in ``out_dir/result.json``: a rerun reports it without training again. Resumable: a
    point every ``policy_chunk`` steps in ``out_dir/resume`` (with the episode curve, the reward
    normaliser and the evaluations), removed once ``result.json`` is written. With
    ``policy.eval_every`` the points come that often, each after a deterministic evaluation of the
    true return as the final one (``eval_timesteps``, ``eval_true_returns``); the last is the
    final evaluation. Its rows are named ``policy/<out_dir name>/...`` (``true_return`` and
    ``learned_return`` over the last 10 training episodes, ``eval_true_return``); a resumed run
    drops those logged after its point from ``metrics.jsonl``, so each is logged once. The
    result also holds the true return of episodes sampled from the policy (``stochastic_return``);
    a result written before that evaluation existed gets it from the saved agent on a rerun, as
    one without ``agent_updates`` (the agent's SB3 ``_n_updates``) does."""
    if (out_dir / "result.json").is_file():
        result = dict(read_json(out_dir / "result.json"))
        missing = STOCHASTIC not in result or "agent_updates" not in result
        if missing and (out_dir / "agent.zip").is_file():  # a result written before they were
            saved = load_agent(ALGORITHMS, out_dir / "agent")
            result.setdefault("agent_updates", agent_updates(saved))
            if STOCHASTIC not in result:
                result |= stochastic_return(config, make_venv, saved)
            atomic_write_json(out_dir / "result.json", result)
        return result
    settings = config.policy.agent
    reward_fn: RewardFn = paid_reward(TorchRewardFn(reward), config.policy.reward_on)
    normalized = NormalizedReward(reward_fn, RunningNorm()) if settings.normalize_reward else None
    reward_fn = normalized or reward_fn
    venv = RewardVecEnvWrapper((train_venv or make_venv)(config.seed + 7), reward_fn)
    seeded: list[Trajectory] = []
    if seed_store is not None and config.policy.seed_rollouts and settings.algo == "sac":
        rng = np.random.default_rng(config.seed + 8)
        picks = rng.integers(0, len(seed_store), config.policy.seed_rollouts)
        seeded = [seed_store[int(k)] for k in picks]
        if config.env.agents_end_at_termination:
            seeded = [real_part(t) for t in seeded]  # as the agent's own episodes: no absorbing steps
        starts = int(settings.kwargs.get("learning_starts", 100))  # SB3's default
        n_seeded = sum(len(t) for t in seeded)
        settings = settings.replace(kwargs={**settings.kwargs, "learning_starts": max(0, starts - n_seeded)})
    if config.env.pixels:  # SAC from pixels (DrQSAC); SB3's arguments as given, no rl-zoo3 lookup
        agent: Any = make_generator(settings.algo, venv, settings.total_timesteps, config.seed,
                                    resolve_device(settings.device), settings.kwargs)
    else:
        agent = make_agent(settings, venv, config.seed)
    point_settings = {  # what the points depend on (device and evaluation may change)
        "agent": settings.model_dump(mode="json", exclude={"device", "eval_episodes"}),
        "reward_on": config.policy.reward_on, "seed": config.seed,
        "seed_rollouts": config.policy.seed_rollouts, "reward_sha256": weights_sha256(reward)}
    every = config.policy.eval_every  # a deterministic evaluation after each chunk, if set
    training = ResumableTraining(out_dir / "resume", settings.total_timesteps,
                                 every or policy_chunk(settings.total_timesteps), settings=point_settings)
    resumed = training.resume(agent)
    prefix = f"policy/{out_dir.name}/"
    if resumed is not None:  # the steps after the point are trained (and logged) again: their rows go
        for folder in metrics_dirs(logger):
            rewind_metrics(folder, after_step=resumed.timesteps, prefix=prefix)
    log = EpisodeLog(**resumed.progress["log"]) if resumed is not None else EpisodeLog()
    curve: dict[str, list[Any]] = {"timesteps": [], "true_returns": []}  # the evaluations so far
    if resumed is not None:
        curve = resumed.progress.get("evaluations", curve)
    if resumed is not None and normalized is not None:
        normalized.norm = RunningNorm.from_state(resumed.progress["reward_norm"])
    if resumed is None and seeded:  # a resumed buffer holds them already
        seed_replay(agent, seeded, reward_fn)
    progress = progress_of(logger)
    steps = None if progress is None else progress.follow(  # moved by the agent/... episode returns
        Track(f"apec policy {out_dir.name} env steps", settings.total_timesteps, prefixes=(prefix,)),
        completed=agent.num_timesteps)

    def evaluate() -> None:
        curve["timesteps"].append(int(agent.num_timesteps))
        curve["true_returns"].append(true_returns(config, make_venv, agent))
        if logger is not None:
            logger.log({f"{prefix}eval_true_return": float(np.mean(curve["true_returns"][-1]))},
                       step=int(agent.num_timesteps))

    training.train(agent, EpisodeLogCallback(log, logger, prefix=prefix), progress=lambda: {
        "log": asdict(log), "reward_norm": None if normalized is None else normalized.norm.state_dict(),
        "evaluations": curve}, after_chunk=evaluate if every else None)
    if steps is not None:  # trained: whatever episode was logged last
        steps.update(settings.total_timesteps)
    venv.close()
    out_dir.mkdir(parents=True, exist_ok=True)
    save_agent(agent, out_dir / "agent")
    ended = bool(curve["timesteps"]) and curve["timesteps"][-1] == agent.num_timesteps
    returns = curve["true_returns"][-1] if ended else true_returns(config, make_venv, agent)
    spread = float(np.std(returns, ddof=1)) if len(returns) > 1 else float("nan")
    result = {"final_true_return": float(np.mean(returns)), "final_true_return_std": spread,
              "n_episodes": len(returns), "seeded_transitions": sum(len(t) for t in seeded),
              "agent_updates": agent_updates(agent),
              "curve_timesteps": log.timesteps, "curve_true_returns": log.true_returns,
              "eval_timesteps": curve["timesteps"],
              "eval_true_returns": [float(np.mean(r)) for r in curve["true_returns"]],
              **stochastic_return(config, make_venv, agent), "trained_on": machine()}
    atomic_write_json(out_dir / "result.json", result)
    training.clear()
    return result


def evaluation_episodes(config: ApecConfig, make_venv: VenvFactory, agent: Any,
                        deterministic: bool = True) -> list[Trajectory]:
    """``policy.agent.eval_episodes`` episodes of ``agent`` on the evaluation env (seed
    ``config.seed + 10_000``, reseeded per call: every evaluation of a run plays the same starts):
    deterministic, the episodes a policy's reported true return is the mean of; or with actions
    sampled from the policy, torch's CPU RNG seeded the same way for them and restored after (so
    the same agent samples the same episodes in any sitting, and training is left as it was)."""
    venv = make_venv(config.seed + 10_000)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed + 10_000)
            finals, _ = policy_rollouts([(0, agent)], venv, np.random.default_rng(config.seed),
                                        RolloutConfig(per_checkpoint=config.policy.agent.eval_episodes,
                                                      deterministic=deterministic))
    finally:
        venv.close()
    return list(finals)


def true_returns(config: ApecConfig, make_venv: VenvFactory, agent: Any,
                 deterministic: bool = True) -> list[float]:
    """The true returns of ``evaluation_episodes``."""
    return [float(t.ret) for t in evaluation_episodes(config, make_venv, agent, deterministic)]


def stochastic_return(config: ApecConfig, make_venv: VenvFactory, agent: Any) -> dict[str, float | int]:
    """The true return of ``agent`` as APEC's reference reports a policy's: its actions sampled,
    not its mean action (``eval_reward.py:40-41``, ``utils/eval.py:29-50``; ``StoEpRetTest``),
    on the episodes of ``evaluation_episodes``.

    Args:
        config: the run's config (``policy.agent.eval_episodes``, ``seed``).
        make_venv: the task's env factory.
        agent: the trained agent.

    Returns:
        ``final_true_return_stochastic`` (the mean), ``..._std`` (ddof = 1) and
        ``n_stochastic_episodes``.
    """
    returns = true_returns(config, make_venv, agent, deterministic=False)
    spread = float(np.std(returns, ddof=1)) if len(returns) > 1 else float("nan")
    return {STOCHASTIC: float(np.mean(returns)), f"{STOCHASTIC}_std": spread,
            "n_stochastic_episodes": len(returns)}


POLICY_POINT_EVERY = 50_000  # env steps between a policy's resume points, at most


def policy_chunk(total_timesteps: int) -> int:
    """Env steps between a policy's resume points: a tenth of the run, at most ``POLICY_POINT_EVERY``.

    Args:
        total_timesteps: the policy's training steps.

    Returns:
        The chunk (``ResumableTraining`` rounds it to whole rollouts).
    """
    return min(POLICY_POINT_EVERY, max(1, total_timesteps // 10))


def paid_reward(reward_fn: RewardFn, on: str) -> RewardFn:
    """``reward_fn`` as the agent is paid: on ``s`` (``"obs"``) or on ``s'`` (``"next_obs"``)."""
    if on == "obs":
        return reward_fn

    def on_next(obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray, dones: np.ndarray) -> np.ndarray:
        return reward_fn(next_obs, acts, next_obs, dones)

    return on_next


def seed_replay(agent: Any, trajectories: list[Trajectory], reward_fn: RewardFn) -> None:
    """Add whole trajectories to an off-policy agent's replay buffer, rewards from ``reward_fn``
    (one checked call per trajectory: ``rlkit.wrappers.reward_batch.transition_rewards``); the last
    step of a fixed-horizon episode is a truncation, so every transition bootstraps (done = False)
    unless the trajectory ended in a true termination."""
    buffer = agent.replay_buffer
    for t in trajectories:
        n = len(t)
        dones = np.zeros(n, bool)
        dones[-1] = bool(t.terminal)
        rewards = transition_rewards(reward_fn, (t.obs[:-1], t.acts, t.obs[1:], dones), 1,
                                     "seeding the replay buffer", stepwise=False).astype(np.float32).ravel()
        actions = agent.policy.scale_action(t.acts) if hasattr(agent.policy, "scale_action") else t.acts
        for k in range(n):
            buffer.add(t.obs[k][None], t.obs[k + 1][None], np.asarray(actions[k])[None],
                       rewards[k:k + 1], dones[k:k + 1], [{}])

"""``rlkit apec``: demos -> AIL with checkpoints -> rollouts -> pairs -> reward models -> policies
-> evaluation, for APEC and its baselines on the same demos, AIL run and held-out set (the reward
stages: ``rlkit.runners.apec_rewards``; the policy stage: ``rlkit.runners.apec_policy``).

Every stage writes its outputs under the run directory and is skipped when they are already
there, so a killed run started again with the same ``--run-dir`` goes on where it stopped (the AIL
stage resumes from its last checkpoint). Layout::

    demos/        demos.npz, demos.json, demonstrator/step_*.zip (or a copy of committed
                  inputs: inputs.json, demonstrator/step_*.safetensors; rlkit.apec.inputs)
    ail/          round_*/ (generator, discriminator, diagnostics), resume/
    rollouts/     store.npz, index.npz (checkpoint index and OT distance per trajectory)
    datasets/     <method>.npz/.json      rewards/ <method>/ (safetensors + JSON)
    heldout/      ail/ (a separate AIL run, seed heldout_ail_seed), store.npz, sources.npz
    policies/     <method>/agent.zip, result.json      metrics.json (per method, diagnostics;
                  written once every policy is in)
    reward_metrics.json   metrics.json before the policy stage (the rewards' held-out results)

The demonstrator and each policy train in chunks with a resume point after each
(``rlkit.factories.resumable``, in ``demos/demonstrator/resume`` and ``policies/<method>/resume``,
removed once the stage's outputs are written): a run killed part way through them goes on from
the last point instead of from scratch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv

from envs.fixed_horizon import make_fixed_horizon
from rlkit.ail import AILTrainer, CheckpointStore, load_demos, save_demos
from rlkit.apec.config import ApecConfig, ApecEnvConfig, DemonstratorConfig, Method, split_method
from rlkit.apec.demonstrator import (
    RESUME_DIR,
    VenvFactory,
    checkpoint_step,
    demonstrator_checkpoints,
    load_demonstrator,
    save_demo_set,
    suboptimal_demos,
    train_demonstrator,
)
from rlkit.apec.drex import drex_pairs, noisy_rollouts, train_bc
from rlkit.apec.evaluation import (
    ail_progress,
    heldout_pairs,
    heldout_rollouts,
    heldout_tasks,
    label_agreement,
)
from rlkit.apec.inputs import demonstrator_policies, float16_store
from rlkit.apec.pair_config import DrexConfig
from rlkit.apec.pairs import ot_only_pairs, select_pairs
from rlkit.apec.rollouts import (
    checkpoint_tasks,
    load_generator,
    real_part,
    rollout_tasks,
    sequential_map,
)
from rlkit.apec.tasks import make_pixel_task
from rlkit.apec.transport import demo_ot_distances
from rlkit.data import Trajectory, TrajectoryStore
from rlkit.data.store import load_npz
from rlkit.devices import machine
from rlkit.errors import ConfigError, InvalidDataError
from rlkit.factories.algorithms import ALGORITHMS
from rlkit.factories.budget import agent_updates
from rlkit.feedback import PreferenceDataset
from rlkit.logging import Logger, ProgressTask, Track, progress_of
from rlkit.logging.local import metrics_dirs, rewind_metrics
from rlkit.persistence import atomic_write_json, read_json
from rlkit.persistence.arrays import save_npz
from rlkit.runners.apec_policy import run_policy
from rlkit.runners.apec_rewards import (
    absorbing_masked,
    cached_dataset,
    fitted_reward,
    masks_absorbing,
    score_rewards,
    scored_before,
    scores_key,
)
from rlkit.types import TaskMap

REWARD_METRICS = "reward_metrics.json"


def _one_env(env: ApecEnvConfig, training: bool = False) -> gym.Env[Any, Any]:
    if env.pixels:  # frames stacked channel-first; never padded (the config refuses a horizon)
        return make_pixel_task(env.id, env.frame_stack, **env.kwargs)
    if env.horizon is None:
        return gym.make(env.id, **env.kwargs)
    pad = not (training and env.agents_end_at_termination)
    return make_fixed_horizon(env.id, env.horizon, pad, **env.kwargs)


def frame_stack(env: ApecEnvConfig) -> int:
    """Frames per observation of the env's trajectories, for their stores (1: vector tasks)."""
    return env.frame_stack if env.pixels else 1


@dataclass(frozen=True)
class EnvFactory:
    """``seed -> VecEnv`` of an env config; picklable, so rollout tasks build their own env."""

    env: ApecEnvConfig
    training: bool = False

    def __call__(self, seed: int) -> VecEnv:
        return make_vec_env(partial(_one_env, self.env, self.training), n_envs=self.env.n_envs, seed=seed)


def venv_factory(env: ApecEnvConfig, training: bool = False) -> VenvFactory:
    """Fixed-horizon (absorbing state) envs when ``horizon`` is set, as APEC uses; a pixel task's
    frames stacked channel-first (``env.frame_stack``). ``training``: the envs an agent trains in
    (demonstrator, AIL generator, policies), whose episodes end where ``env.agent_episodes`` says."""
    return EnvFactory(env, training)


def run_demos(env: ApecEnvConfig, settings: DemonstratorConfig, seed: int, out_dir: Path,
              logger: Logger | None = None) -> list[Trajectory]:
    """The demos stage (``rlkit demos``): given demos are checked and copied, else trained for
    (with ``seed``, the run's). SAC takes one update per vectorised step, so ``settings.n_envs``
    sets its update ratio."""
    if settings.n_envs is not None:
        env = env.replace(n_envs=settings.n_envs)
    make_venv, train_venv = venv_factory(env), venv_factory(env, training=True)
    if (out_dir / "demos.npz").is_file():
        return load_demos(out_dir / "demos.npz")
    if settings.path is not None:
        demos = load_demos(settings.path)
        save_demos(demos, out_dir / "demos.npz", frame_stack(env))
        return demos
    config = settings.replace(seed=seed)
    checkpoints = demonstrator_checkpoints(out_dir / "demonstrator")
    trained = bool(checkpoints) and not (out_dir / "demonstrator" / RESUME_DIR).is_dir() and (
        checkpoint_step(checkpoints[-1]) + settings.checkpoint_every > settings.total_timesteps)
    if not trained:  # never started, or killed part way: goes on from its last resume point
        checkpoints = train_demonstrator(train_venv, config, out_dir / "demonstrator", ALGORITHMS)
    demos, report = suboptimal_demos(make_venv, checkpoints, config, ALGORITHMS,
                                     np.random.default_rng(seed))
    save_demo_set(demos, report, out_dir, frame_stack(env))
    if logger is not None:
        logger.log({"demos/return": float(np.mean(report.demo_returns)), "demos/fraction": report.fraction,
                    "demos/best_return": report.best_return}, step=0)
    return demos


def run_apec(config: ApecConfig, run_dir: Path, logger: Logger | None = None,
             task_map: TaskMap = sequential_map, policies: Sequence[str] | None = None) -> dict[str, Any]:
    """Every stage in order; returns (and writes to ``metrics.json``) the per-method results,
    the AIL run's progress diagnostic and each dataset's label agreement with the true return,
    and what each learner did: ``ail`` (the generator's ``agent_updates``, the discriminator's
    ``reward_updates``), each fitted reward's ``reward_updates``, each policy's ``agent_updates``
    and the demonstrator's (``demos``, None for given demos). ``task_map`` runs the checkpoint
    and held-out rollouts (one task per policy; Ray's map from ``rlkit.scale.tasks`` fans them
    out); the results do not depend on it. Seeds that share one held-out set link
    ``run_dir/heldout`` to it once it is built (``run_heldout``).

    ``policies`` names the methods whose policy this call trains (default: every method of
    ``policy.methods``); a policy finished by an earlier call is reported from its
    ``result.json``. ``metrics.json`` is written once every policy is in: a call with ``()``
    stops after the rewards' scores, and calls of one policy each can run side by side, each
    after the stages before are done (they are then read, not run again)."""
    wanted = config.policy_methods
    unknown = sorted(set(policies or ()) - set(wanted))
    if unknown:
        raise ConfigError(f"policies {unknown}: not among the methods with a policy, {wanted}")
    trained = wanted if policies is None else [method for method in wanted if method in policies]
    make_venv = venv_factory(config.env)
    stages = _stage_bar(logger, 4 + len(config.methods) + len(trained))
    demos = run_demos(config.env, config.demos, config.seed, run_dir / "demos", logger)
    _advance(stages)
    train_venv = venv_factory(config.env, training=True)
    checkpoints, ail_updates = run_ail(config, train_venv, demos, run_dir / "ail", logger)
    _advance(stages)
    store, index, distances = run_rollouts(config, make_venv, checkpoints, demos, run_dir / "rollouts",
                                           task_map)
    _advance(stages)
    space_venv = make_venv(config.seed)
    observation_space, action_space = space_venv.observation_space, space_venv.action_space
    space_venv.close()

    rewards: dict[Method, Any] = {}
    training: dict[Method, Any] = {}
    for method in config.methods:
        if method == "raw_ail":
            net = checkpoints.load(checkpoints.rounds()[-1]).discriminator.reward_net
            rewards[method] = absorbing_masked(net) if masks_absorbing(config) else net
        else:
            dataset = cached_dataset(run_dir / "datasets" / method, partial(
                build_dataset, method, config, make_venv, demos, store, index, distances))
            rewards[method], training[method] = fitted_reward(
                run_dir / "rewards" / method, config, dataset, observation_space, action_space)
            training[method] |= label_agreement(dataset)
        _advance(stages)

    heldout, pairs, sources = run_heldout(config, make_venv, demos, run_dir / "demos",
                                          run_dir / "heldout", logger, task_map)
    _advance(stages)
    key = scores_key(run_dir / "heldout" / "store.npz", rewards)
    results = scored_before(run_dir / REWARD_METRICS, key)
    if results is None:  # not scored on this held-out set and these rewards before (and logged)
        scores = score_rewards(rewards, training, heldout, pairs, sources, config.env.horizon is not None,
                               logger)
        results = {"methods": scores, "demos": _demo_summary(run_dir / "demos", demos, config.demos.algo),
                   "ail_progress": ail_progress(index, store), "scores_key": key, "scored_on": machine()}
        atomic_write_json(run_dir / REWARD_METRICS, results)  # readable while the policies train
    for method in wanted:
        out_dir = run_dir / "policies" / method
        if method in trained or (out_dir / "result.json").is_file():  # the latter: cached, not trained
            results["methods"][method]["policy"] = run_policy(
                config, make_venv, rewards[method], out_dir, logger, store, train_venv)
        if method in trained:
            _advance(stages)
    results["ail"] = ail_updates
    if all("policy" in results["methods"][method] for method in wanted):
        atomic_write_json(run_dir / "metrics.json", results)
    return results


def _stage_bar(logger: Logger | None, stages: int) -> ProgressTask | None:
    """One bar over the run's stages (demos, AIL, rollouts, a reward per method, the held-out set,
    a policy per method) when the logger has a progress display."""
    progress = progress_of(logger)
    return None if progress is None else progress.task("apec stages", stages)


def _advance(task: ProgressTask | None) -> None:
    if task is not None:
        task.advance()


def run_ail(config: ApecConfig, make_venv: VenvFactory, demos: list[Trajectory], out_dir: Path,
            logger: Logger | None, seed: int | None = None) -> tuple[CheckpointStore, dict[str, int]]:
    """An AIL run with a checkpoint per round (resumed when killed), and the updates its learners
    made (``AILTrainer.updates``: ``agent_updates``, ``reward_updates``); ``seed`` defaults to the
    run's (the held-out set uses a separate run with ``config.heldout_ail_seed``). ``make_venv``:
    the envs the generator trains in (``venv_factory(..., training=True)``); where their episodes
    end at termination, the discriminator sees the demos' real states only, as the reference's
    loss masks the absorbing ones out (apec_mjc/f_div.py:92), so neither side holds any."""
    settings = config.ail
    seed = config.seed if seed is None else seed
    checkpoints = CheckpointStore(out_dir, every=settings.checkpoint_every)
    ail_config = settings.replace(seed=seed)

    def log(record: Any, _: AILTrainer) -> None:
        if logger is not None:
            logger.log({prefix + k: v for k, v in record.to_dict().items() if isinstance(v, int | float)}
                       | {f"{prefix}disc_{k}": v for k, v in record.disc.items()}, step=record.timesteps)

    prefix = "ail/" if seed == config.seed else "heldout_ail/"

    venv = make_venv(seed + 1)
    try:
        expert = [real_part(d) for d in demos] if config.env.agents_end_at_termination else demos
        trainer = AILTrainer(ail_config, venv, expert, settings.generator, settings.generator_kwargs,
                             checkpoints=checkpoints, callbacks=[log])
        if trainer.resume() is not None and logger is not None:
            # rounds after the point resumed from are trained (and logged) again: their rows go
            for folder in metrics_dirs(logger):
                rewind_metrics(folder, after_step=trainer.generator.num_timesteps, prefix=prefix)
        progress = progress_of(logger)
        if progress is not None:  # from the round it resumed at; moved by the rounds' own records
            progress.follow(Track(f"apec {prefix.rstrip('/')} rounds", settings.rounds, prefixes=(prefix,),
                                  metric=f"{prefix}round", offset=1), completed=trainer.round)
        trainer.train()
    finally:
        venv.close()
    return checkpoints, trainer.updates()


def run_rollouts(config: ApecConfig, make_venv: VenvFactory, checkpoints: CheckpointStore,
                 demos: list[Trajectory], out_dir: Path, task_map: TaskMap = sequential_map,
                 ) -> tuple[TrajectoryStore, np.ndarray, np.ndarray]:
    """Rollouts of the first ``max_checkpoints`` checkpoints (a task each, run by ``task_map``,
    seeded by ``config.seed + 2`` and the round) and their OT distances to the demos."""
    if (out_dir / "index.npz").is_file():
        arrays = load_npz(out_dir / "index.npz")
        return TrajectoryStore.load(out_dir / "store.npz"), arrays["checkpoint"], arrays["ot_distance"]
    rounds = checkpoints.rounds()[: config.rollouts.max_checkpoints]
    if len(rounds) < 2:
        raise InvalidDataError(f"{checkpoints.root}: {len(rounds)} checkpoint(s); pairs need at least 2")
    tasks = checkpoint_tasks(checkpoints, rounds, make_venv, config.rollouts.replace(seed=config.seed + 2))
    store, index = rollout_tasks(tasks, task_map, frame_stack(config.env))
    distances = demo_ot_distances(store, demos, config.pairs.ot_reg, config.pairs.ot_iterations,
                                  absorbing_flag=config.env.horizon is not None,
                                  downsample=config.pairs.ot_downsample)
    store.save(out_dir / "store.npz")
    _save_arrays(out_dir / "index.npz", checkpoint=index, ot_distance=distances)
    return store, index, distances


def build_dataset(method: str, config: ApecConfig, make_venv: VenvFactory, demos: list[Trajectory],
                  store: TrajectoryStore, index: np.ndarray, distances: np.ndarray) -> PreferenceDataset:
    """The preference dataset of one method; all share the seed, so they differ only by method."""
    rng = np.random.default_rng(config.seed + 3)
    base, margin = split_method(method)  # ot_only@0.05: the OT-only arm at margin 0.05
    pair_config = config.pairs if margin is None else config.pairs.replace(ot_threshold=margin)
    if base == "apec":
        return select_pairs(store, index, rng, pair_config, ot_distances=distances)
    if base == "apec_ordinal":
        graded = pair_config.replace(labels="gap", scale="five")
        return select_pairs(store, index, rng, graded, ot_distances=distances)
    if base == "gap_only":
        no_ot = pair_config.replace(ot_threshold=None)
        return select_pairs(store, index, rng, no_ot)
    if base == "ot_only":
        return ot_only_pairs(store, index, distances, rng, pair_config)
    if base == "drex":
        drex_config = drex_settings(config)
        venv = make_venv(config.seed + 4)
        try:
            policy = train_bc(demos, venv.action_space, drex_config)
            noisy, noise = noisy_rollouts(policy, venv, rng, drex_config)
        finally:
            venv.close()
        return drex_pairs(noisy, noise, rng, drex_config)
    raise InvalidDataError(f"method {method!r}: has no preference dataset (the raw AIL reward has none)")


def drex_settings(config: ApecConfig) -> DrexConfig:
    """The D-REX arm's config: ``config.drex`` with the pipeline's ``n_pairs`` and
    ``segment_length`` (the other arms' budget, ``config.pairs``), seed and frame stack."""
    return config.drex.replace(n_pairs=config.pairs.n_pairs, segment_length=config.pairs.segment_length,
                               seed=config.seed, frame_stack=frame_stack(config.env))


def run_heldout(config: ApecConfig, make_venv: VenvFactory, demos: list[Trajectory], demos_dir: Path,
                out_dir: Path, logger: Logger | None = None, task_map: TaskMap = sequential_map,
                ) -> tuple[TrajectoryStore, np.ndarray, np.ndarray]:
    """The held-out store and each trajectory's source (cached in ``out_dir``), and its
    true-return pairs (rebuilt from the seed). Its AIL trajectories come from a separate AIL run
    (seed ``config.heldout_ail_seed``, in ``out_dir/ail``), never from the run that made the
    pairs; its demonstrator trajectories from the demonstrator's checkpoints in ``demos_dir`` but
    the demo's own (``rlkit.apec.inputs.demonstrator_policies``: a demos stage's or a folder of
    inputs). Observations and actions are kept at float16 precision (``float16_store``: the
    precision a set committed as data has, so a set built here and one read back are the same).
    Each policy's rollouts are a task of their own, run by ``task_map``."""
    settings = config.heldout
    if not (out_dir / "store.npz").is_file():
        checkpoints, _ = run_ail(config, venv_factory(config.env, training=True), demos, out_dir / "ail",
                                 logger, seed=config.heldout_ail_seed)
        rounds = checkpoints.rounds()
        picks = np.unique(np.linspace(0, len(rounds) - 1, min(settings.ail_checkpoints, len(rounds))).round())
        ail_rounds = [rounds[int(k)] for k in picks]
        tasks, task_sources = heldout_tasks(
            make_venv, [(r, partial(load_generator, str(checkpoints.root), r)) for r in ail_rounds],
            demonstrator_policies(demos_dir, config.demos.algo),
            settings.episodes_per_policy, settings.random_episodes, seed=config.seed + 5)
        store, sources = heldout_rollouts(tasks, task_sources, task_map, frame_stack(config.env))
        float16_store(store).save(out_dir / "store.npz")
        _save_arrays(out_dir / "sources.npz", source=sources)
    store = TrajectoryStore.load(out_dir / "store.npz")
    pairs = heldout_pairs(store, np.random.default_rng(config.seed + 6), settings.n_pairs,
                          settings.segment_length, absorbing_flag=config.env.horizon is not None)
    return store, pairs, load_npz(out_dir / "sources.npz")["source"]


def demonstrator_updates(out_dir: Path, algo: str) -> int | None:
    """The updates the agent of the demonstrator's last checkpoint in ``out_dir`` (the demos
    stage's folder) made (SB3's ``_n_updates``): the most trained agent the demos come from; an
    on-policy one is saved at the budget's last step, before that rollout's update. None when the
    demos were given, not trained.

    Args:
        out_dir: the demos stage's folder (``demonstrator/step_*.zip`` inside).
        algo: the demonstrator's algorithm (``demos.algo``).
    """
    checkpoints = demonstrator_checkpoints(out_dir / "demonstrator")
    if not checkpoints:
        return None
    return agent_updates(load_demonstrator(ALGORITHMS[algo], checkpoints[-1]))


def _demo_summary(out_dir: Path, demos: list[Trajectory], algo: str) -> dict[str, Any]:
    summary: dict[str, Any] = {"n": len(demos), "returns": [float(t.ret) for t in demos],
                               "agent_updates": demonstrator_updates(out_dir, algo)}
    report = out_dir / "demos.json"
    if report.is_file():
        data = read_json(report)
        summary |= {"fraction": data["fraction"], "best_return": data["best_return"]}
    return summary


def _save_arrays(path: Path, **arrays: np.ndarray) -> None:
    save_npz(path, arrays)

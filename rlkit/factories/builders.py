"""The pieces every command chains: envs, collection, labelling, reward training, agents."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from rlkit.data import TrajectoryStore, collect_trajectories, sample_pairs
from rlkit.data.segments import SegmentPairs
from rlkit.data.sim_state import record_states_if_mujoco
from rlkit.devices import resolve_device
from rlkit.errors import ConfigError
from rlkit.factories.algorithms import ALGORITHMS
from rlkit.factories.configs import (
    AgentConfig,
    CollectConfig,
    EnvConfig,
    LabelConfig,
    RewardModelConfig,
    untrusted_zip,
)
from rlkit.factories.hyperparams import resolve_hyperparams, sb3_kwargs
from rlkit.feedback import (
    OrdinalScale,
    PreferenceDataset,
    SimulatedTeacher,
    TeacherConfig,
    beta_for_spread,
)
from rlkit.persistence.agents import load_agent
from rlkit.reward import RewardEnsemble, RewardNet, TrainerConfig, build_reward_net
from rlkit.wrappers.relabel import check_reward_env


def make_venv(env: EnvConfig, seed_offset: int = 0, record_states: bool = False) -> VecEnv:
    """The vectorised env ``env`` describes.

    Args:
        env: the env section of a command's config.
        seed_offset: added to ``env.seed`` (streams that must differ from the training env's).
        record_states: keep a MuJoCo env's simulator state after each step in
            ``info["sim_state"]`` (``rlkit.data.sim_state``): what rendering the segments people
            label as video needs. Other envs are left as they are.

    Returns:
        An SB3 ``VecEnv`` of ``env.n_envs`` copies, seeded ``env.seed + seed_offset`` onwards.
    """
    return make_vec_env(env.id, n_envs=env.n_envs, seed=env.seed + seed_offset,
                        env_kwargs=dict(env.kwargs),
                        wrapper_class=record_states_if_mujoco if record_states else None)


def load_policy(algo: str, path: str | os.PathLike[str], trust_pickle: bool = False,
                field: str = "policy", device: str = "auto") -> BaseAlgorithm:
    """An agent rlkit saved (its ``.json`` beside the zip: nothing unpickled), or, only with
    ``trust_pickle``, any other SB3 zip through SB3's own loader (it unpickles some fields, and a
    pickle can run any code); without it such a zip is refused naming ``field``'s opt-in.

    Args:
        algo: the algorithm of a zip rlkit did not save (``ppo``, ``sac``...).
        path: the zip.
        trust_pickle: whether SB3's unpickling loader may read a zip rlkit did not save.
        field: the config field named in a refusal.
        device: where the networks go: ``auto`` (CUDA when present), ``cpu``, ``cuda[:N]``.

    Returns:
        The agent, on ``device``.
    """
    where = str(resolve_device(device))
    refusal = untrusted_zip(field, path)
    if refusal is None:
        return load_agent(ALGORITHMS, path, device=where)
    if not trust_pickle:
        raise ConfigError(refusal)
    return ALGORITHMS[algo].load(Path(path), device=where)


def collect_store(config: CollectConfig, rng: np.random.Generator) -> TrajectoryStore:
    """Rollouts from each policy source in turn, into one store."""
    store = TrajectoryStore()
    venv = make_venv(config.env)
    try:
        for i, source in enumerate(config.policies):
            policy = None
            if source.kind == "sb3":
                if source.path is None:
                    raise ConfigError(f"policies[{i}]: an sb3 policy needs a path")
                policy = load_policy(source.algo, source.path, source.trust_pickle, f"policies[{i}]",
                                     device=source.device)
            store.extend(collect_trajectories(
                venv, policy, rng, n_steps=source.n_steps, max_length=config.max_length,
                deterministic=source.deterministic, seed=config.seed + i,
            ))
    finally:
        venv.close()
    return store


def make_teacher(
    config: TeacherConfig, calibration: SegmentPairs, rng: np.random.Generator
) -> SimulatedTeacher:
    """A simulated teacher; ``beta="auto"`` is fitted on ``calibration`` pairs' return gaps. A
    section that says more (pref-rl's ``kind``, ``human``) gives the teacher its ``TeacherConfig``
    fields only."""
    beta = config.beta
    if beta == "auto":
        left, right = calibration.gather()
        gaps = left.returns(config.gamma) - right.returns(config.gamma)
        beta = beta_for_spread(gaps, config.auto_beta_std)
    fields = {name: getattr(config, name) for name in TeacherConfig.model_fields}
    return SimulatedTeacher(TeacherConfig(**fields | {"beta": float(beta)}), rng)


def label_pairs(
    store: TrajectoryStore, config: LabelConfig, rng: np.random.Generator
) -> PreferenceDataset:
    """Uniformly sampled pairs labelled by a simulated teacher, oracle probability kept as meta."""
    pairs = sample_pairs(store, config.n_pairs, config.segment_length, rng)
    teacher = make_teacher(config.teacher, pairs, rng)
    labels, oracle_p = teacher.label_with_oracle(pairs)
    dataset = PreferenceDataset(store, scale=OrdinalScale.get(config.teacher.scale))
    dataset.append(pairs, labels, source="simulated", annotator=f"beta={teacher.config.beta:.4g}",
                   meta={"oracle_p": oracle_p})
    return dataset


def build_reward_model(
    config: RewardModelConfig, observation_space: spaces.Space, action_space: spaces.Space,
    seed: int,
) -> RewardNet | RewardEnsemble:
    def member(i: int) -> RewardNet:
        return build_reward_net(observation_space, action_space, inputs=config.inputs,
                                hidden=config.hidden, kind=config.kind,
                                activation=config.activation, seed=seed + i, encoder=config.encoder)

    if config.ensemble_size == 1:
        return member(0)
    return RewardEnsemble([member(i) for i in range(config.ensemble_size)])


def trainer_config(config: TrainerConfig, seed: int) -> TrainerConfig:
    """A command's ``trainer`` section with the command's ``seed``."""
    return config.replace(seed=seed)


def store_spaces(store: TrajectoryStore) -> tuple[spaces.Box, spaces.Space]:
    """Spaces to build a reward net for data without its env (continuous actions assumed; uint8
    observations are images, so ``kind="auto"`` builds a CNN for them)."""
    obs: spaces.Box = (spaces.Box(0, 255, shape=store.obs_shape, dtype=np.uint8)
                       if store.frames.dtype == np.uint8
                       else spaces.Box(-np.inf, np.inf, shape=store.obs_shape, dtype=np.float32))
    return obs, spaces.Box(-np.inf, np.inf, shape=store.act_shape, dtype=np.float32)


def make_agent(config: AgentConfig, venv: VecEnv, seed: int) -> BaseAlgorithm:
    """An SB3 agent on ``venv`` with ``config.hyperparams`` (``agent.kwargs`` over them) on
    ``config.device``. Hyperparameters still ``auto``/``zoo`` (a config that does not resolve them
    when loaded) are resolved here for the env id ``venv`` reports.

    Args:
        config: the agent's settings.
        venv: the env it trains on.
        seed: its seed.

    Returns:
        The untrained agent.
    """
    hyperparams: str | dict[str, Any] = config.hyperparams
    if not isinstance(hyperparams, dict) and hyperparams != "sb3":
        spec = venv.get_attr("spec", indices=[0])[0]
        env_id = spec.id if spec is not None else "?"
        hyperparams = resolve_hyperparams(hyperparams, env_id, config.algo).hyperparams
    algorithm = ALGORITHMS[config.algo]
    action_dim = int(np.prod(venv.action_space.shape)) if isinstance(venv.action_space, spaces.Box) else None
    kwargs: dict[str, Any] = {"verbose": 0, "seed": seed, "device": str(resolve_device(config.device))}
    kwargs.update(sb3_kwargs(hyperparams, algorithm, action_dim))
    # SB3 writes into the policy_kwargs it is given (SAC: use_sde): hand it a copy of that dict,
    # and every other value as it is (a replay buffer's reward function must stay the live one)
    kwargs.update({key: copy.deepcopy(value) if key == "policy_kwargs" else value
                   for key, value in config.kwargs.items()})
    agent = algorithm("MlpPolicy", venv, **kwargs)
    if isinstance(agent, OffPolicyAlgorithm):
        check_reward_env(agent)  # VecNormalize inside a reward wrapper: the env's reward stored
    return agent


def true_returns(
    model: BaseAlgorithm | None, env: EnvConfig, episodes: int, seed_offset: int = 10_000
) -> np.ndarray:
    """The env's own return of each of ``episodes`` fresh episodes of ``model``'s deterministic
    actions (``model=None``: random actions), on one env seeded ``env.seed + seed_offset``.

    Args:
        model: the agent, or None for a uniformly random policy.
        env: the env section of the command's config.
        episodes: how many episodes.
        seed_offset: added to ``env.seed``; the default keeps evaluation episodes off the seeds
            the training envs use.

    Returns:
        One return per episode, in the order they were played.
    """
    venv = make_venv(env.replace(n_envs=1), seed_offset)
    trajectories = collect_trajectories(
        venv, model, np.random.default_rng(seed_offset), n_episodes=episodes,
        deterministic=True,
    )
    venv.close()
    return np.array([t.ret for t in trajectories[:episodes]])


def true_return(
    model: BaseAlgorithm | None, env: EnvConfig, episodes: int, seed_offset: int = 10_000
) -> tuple[float, float]:
    """Mean and std (over this run's episodes, ddof 0) of ``true_returns``."""
    returns = true_returns(model, env, episodes, seed_offset)
    return float(returns.mean()), float(returns.std())


"""Multi-agent PPO on ``AgentRows``: independent policies per agent (IPPO) or one shared policy.

Each policy is a Stable-Baselines3 ``PPO`` object used for its parts only: its
``ActorCriticPolicy``, its ``RolloutBuffer`` and its ``train()`` (SB3's clipped loss, unchanged).
This module owns what SB3 cannot do for several agents: stepping all agents of a game together
and handing each policy only its own rows. IPPO policy ``i`` sees rows ``i::n_agents``; the shared
policy sees every row with the agent's one-hot id appended to its observation. During rollouts
IPPO's plain MLP policies run stacked, one batched matmul per layer for all agents (``stacked``).

SB3 samples actions from torch's global RNG and shuffles minibatches with numpy's; the trainer
keeps private copies of both states and swaps them in around its own work, so a run is fixed by
its seed whatever else uses those generators, and a checkpoint can restore them exactly.

The policies live on ``config.device``. A rollout step sends the observations there once and
brings logits and values back once (the env needs the actions); actions are sampled from those
logits on the CPU, so the private CPU RNG fixes them on any device and a checkpoint restores them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.logger import configure
from stable_baselines3.common.policies import ActorCriticPolicy

from rlkit.devices import resolve_device
from rlkit.errors import ConfigError, InvalidDataError, StateError
from rlkit.logging import Logger
from rlkit.marl.config import MarlConfig
from rlkit.marl.rows import AgentRows
from rlkit.marl.stacked import StackedMlp, stackable


class MultiAgentPPO:
    """Train ``env``'s agents with PPO; ``learn()`` may be called repeatedly (phases).

    Args:
        env: the games' agents as rows (``OvercookedRows``, ``ParallelEnvRows``).
        config: the PPO settings (None: ``MarlConfig()``'s defaults).
        logger: where training metrics go (None: nowhere).
    """

    def __init__(
        self, env: AgentRows, config: MarlConfig | None = None, logger: Logger | None = None
    ) -> None:
        self.env = env
        self.config = config or MarlConfig()
        self.logger = logger
        self.device = resolve_device(self.config.device)
        self.num_timesteps = 0  # env steps of all games (one step of a game moves all its agents)
        n_agents, num_games = env.n_agents, env.num_games
        shared = self.config.sharing == "shared"
        self.groups = [slice(None)] if shared else [slice(a, None, n_agents) for a in range(n_agents)]
        self._shared = shared
        obs_space = env.observation_space
        if shared:
            obs_space = spaces.Box(
                np.append(obs_space.low, np.zeros(n_agents, np.float32)),
                np.append(obs_space.high, np.ones(n_agents, np.float32)),
                dtype=np.float32,
            )
        rows_per_group = num_games * n_agents if shared else num_games
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.config.seed)
            self.models = [self._make_model(obs_space, rows_per_group) for _ in self.groups]
            self._torch_rng = torch.get_rng_state()
        self._numpy_rng = _legacy_state(np.random.RandomState(self.config.seed))
        self._stacked = StackedMlp(self.policies) if stackable(self.policies) else None
        self._episode_original: deque[float] = deque(maxlen=100)
        # every episode this object saw finish (not saved with a checkpoint): a caller takes the
        # mean over a stretch of training, e.g. one M3HF generation
        self.original_returns: list[float] = []
        self._episode_shaped: deque[np.ndarray] = deque(maxlen=100)
        self._episode_length: deque[int] = deque(maxlen=100)

    def _make_model(self, obs_space: spaces.Box, n_envs: int) -> PPO:
        cfg = self.config
        model = PPO(
            "MlpPolicy", env=None,  # type: ignore[arg-type]  # SB3 takes env=None with _init_setup_model=False
            learning_rate=cfg.learning_rate, n_steps=cfg.n_steps,
            batch_size=cfg.batch_size, n_epochs=cfg.n_epochs, gamma=cfg.gamma, gae_lambda=cfg.gae_lambda,
            clip_range=cfg.clip_range, ent_coef=cfg.ent_coef, vf_coef=cfg.vf_coef,
            max_grad_norm=cfg.max_grad_norm, policy_kwargs={"net_arch": list(cfg.net_arch)},
            device=self.device, _init_setup_model=False,
        )  # fmt: skip
        model.observation_space, model.action_space, model.n_envs = obs_space, self.env.action_space, n_envs
        model._setup_model()  # what PPO(env=...) would do, from spaces instead of an env
        model.set_logger(configure(folder=None, format_strings=[]))
        return model

    @property
    def policies(self) -> list[ActorCriticPolicy]:
        """One ``ActorCriticPolicy`` per agent (IPPO) or a single shared one."""
        return [model.policy for model in self.models]

    def updates(self) -> dict[str, int]:
        """Each learner's PPO updates so far (SB3's ``_n_updates``: ``n_epochs`` per iteration,
        fewer where ``target_kl`` stops one early), by agent name (``shared``: one policy for all),
        as the per-agent metrics are named."""
        names = ["shared"] if len(self.models) == 1 else self.env.agent_names
        return {name: int(model._n_updates) for name, model in zip(names, self.models, strict=True)}

    @contextmanager
    def _private_rngs(self) -> Iterator[None]:
        """Run with this trainer's torch and numpy global RNG states; keep what they advanced to."""
        numpy_outside = np.random.get_state()
        with torch.random.fork_rng(devices=[]):
            torch.set_rng_state(self._torch_rng)
            np.random.set_state(self._numpy_rng)
            try:
                yield
            finally:
                self._torch_rng = torch.get_rng_state()
                self._numpy_rng = _legacy_state(np.random)
                np.random.set_state(numpy_outside)

    def _policy_obs(self, obs: np.ndarray) -> np.ndarray:
        if len(obs) % self.env.n_agents:
            raise InvalidDataError(f"rows come in games of {self.env.n_agents} agents, got {len(obs)} rows")
        if not self._shared:
            return obs
        agent_id = np.tile(np.eye(self.env.n_agents, dtype=np.float32), (len(obs) // self.env.n_agents, 1))
        return np.concatenate([obs, agent_id], axis=1)

    def _act(
        self, obs: np.ndarray, deterministic: bool
    ) -> tuple[np.ndarray, list[torch.Tensor], list[torch.Tensor]]:
        """Actions for every row; values and log-probs per group (for the rollout buffers)."""
        if self._stacked is not None and not deterministic:
            return self._act_stacked(obs)
        actions = np.empty(len(obs), dtype=np.int64)
        values, log_probs = [], []
        with torch.no_grad():
            for model, rows in zip(self.models, self.groups, strict=True):
                tensor = torch.as_tensor(obs[rows], device=self.device)
                if deterministic:
                    act = model.policy._predict(tensor, deterministic=True)
                else:
                    act, value, log_prob = _sample(model.policy, tensor)
                    values.append(value)
                    log_probs.append(log_prob)
                actions[rows] = act.cpu().numpy()
        return actions, values, log_probs

    def _act_stacked(self, obs: np.ndarray) -> tuple[np.ndarray, list[torch.Tensor], list[torch.Tensor]]:
        """``_act`` for IPPO in one pass: agents on the leading axis, (n_agents, games, obs)."""
        assert self._stacked is not None
        n_agents = self.env.n_agents
        by_agent = torch.as_tensor(obs.reshape(-1, n_agents, obs.shape[1]).swapaxes(0, 1), device=self.device)
        logits, values = self._stacked(by_agent)
        actions, log_probs = _draw(logits)
        return actions.T.reshape(-1).numpy(), list(values.cpu()), list(log_probs)

    def predict(self, obs: np.ndarray, deterministic: bool = False) -> np.ndarray:
        """Actions for rows laid out like the env's (``num_games * n_agents`` of them)."""
        with self._private_rngs():
            return self._act(self._policy_obs(np.asarray(obs, dtype=np.float32)), deterministic)[0]

    def learn(self, total_steps: int) -> dict[str, float]:
        """Train for at least ``total_steps`` env steps (whole iterations), from freshly reset games.

        Returns the last iteration's metrics (also sent to the logger, if any).
        """
        if total_steps < 1:
            raise ConfigError(f"total_steps must be >= 1, got {total_steps}")
        metrics: dict[str, float] = {}
        with self._private_rngs():
            obs = self._policy_obs(self.env.reset(seed=self.config.seed + self.num_timesteps))
            starts = np.ones(len(obs), dtype=bool)
            sums = np.zeros((2, len(obs)), dtype=np.float64)  # running shaped and original returns
            lengths = np.zeros(self.env.num_games, dtype=np.int64)
            target = self.num_timesteps + total_steps
            while self.num_timesteps < target:
                obs, starts = self._collect(obs, starts, sums, lengths)
                metrics = self._train()
                if self.logger is not None:
                    self.logger.log(metrics, self.num_timesteps)
        return metrics

    def _collect(
        self, obs: np.ndarray, starts: np.ndarray, sums: np.ndarray, lengths: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        for model in self.models:
            model.rollout_buffer.reset()
        if self._stacked is not None:
            self._stacked.refresh()
        for _ in range(self.config.n_steps):
            actions, values, log_probs = self._act(obs, deterministic=False)
            step = self.env.step(actions)
            self.num_timesteps += self.env.num_games
            rewards = step.rewards.astype(np.float32)
            self._track_episodes(step.rewards, step.original, step.dones, sums, lengths)
            if step.truncated.any():
                rewards = rewards + self._bootstrap(step.terminal_obs, step.truncated)
            for model, rows, value, log_prob in zip(self.models, self.groups, values, log_probs, strict=True):
                model.rollout_buffer.add(
                    obs[rows], actions[rows, None], rewards[rows], starts[rows], value, log_prob
                )
            obs, starts = self._policy_obs(step.obs), step.dones
        with torch.no_grad():
            for model, rows in zip(self.models, self.groups, strict=True):
                last_values = model.policy.predict_values(torch.as_tensor(obs[rows], device=self.device))
                model.rollout_buffer.compute_returns_and_advantage(last_values, starts[rows])
        return obs, starts

    def _bootstrap(self, terminal_obs: np.ndarray, truncated: np.ndarray) -> np.ndarray:
        """gamma * V(last obs) for rows cut by a time limit (SB3's rule, batched per group)."""
        extra = np.zeros(len(truncated), dtype=np.float32)
        terminal = self._policy_obs(terminal_obs)
        with torch.no_grad():
            for model, rows in zip(self.models, self.groups, strict=True):
                idx = np.flatnonzero(truncated[rows])
                if len(idx):
                    group = terminal[rows][idx]
                    value = model.policy.predict_values(torch.as_tensor(group, device=self.device))
                    extra[np.arange(len(truncated))[rows][idx]] = (
                        self.config.gamma * value.cpu().numpy().ravel())
        return extra

    def _track_episodes(
        self,
        shaped: np.ndarray,
        original: np.ndarray,
        dones: np.ndarray,
        sums: np.ndarray,
        lengths: np.ndarray,
    ) -> None:
        sums[0] += shaped
        sums[1] += original
        lengths += 1
        n_agents = self.env.n_agents
        for game in np.flatnonzero(dones[::n_agents]):
            rows = slice(game * n_agents, (game + 1) * n_agents)
            self._episode_shaped.append(sums[0, rows].copy())
            self._episode_original.append(float(sums[1, rows].mean()))
            self.original_returns.append(self._episode_original[-1])
            self._episode_length.append(int(lengths[game]))
            sums[:, rows] = 0.0
            lengths[game] = 0

    def _train(self) -> dict[str, float]:
        metrics: dict[str, float] = {"time/env_steps": float(self.num_timesteps)}
        for index, model in enumerate(self.models):
            model._current_progress_remaining = 1.0  # constant schedules
            model.train()
            name = "shared" if len(self.models) == 1 else self.env.agent_names[index]
            for key, value in model.logger.name_to_value.items():
                metrics[f"{name}/{key}"] = float(value)
            model.logger.dump()  # no outputs: this only clears SB3's record
        metrics.update(self.episode_stats())
        return metrics

    def episode_stats(self) -> dict[str, float]:
        """Means over the last 100 finished episodes: original (env) return, shaped return per agent."""
        if not self._episode_original:
            return {}
        shaped = np.mean(self._episode_shaped, axis=0)
        stats = {
            "rollout/original_return": float(np.mean(self._episode_original)),
            "rollout/shaped_return": float(shaped.mean()),
            "rollout/episode_length": float(np.mean(self._episode_length)),
        }
        names = self.env.agent_names
        stats.update({f"rollout/shaped_return/{a}": float(r) for a, r in zip(names, shaped, strict=True)})
        return stats


def _draw(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Actions sampled from ``logits`` on the CPU (torch's CPU RNG, which the trainer keeps
    private, wherever the logits were computed) and their log-probabilities."""
    distribution = torch.distributions.Categorical(logits=logits.cpu())
    actions = distribution.sample()
    return actions, distribution.log_prob(actions)


def _sample(policy: ActorCriticPolicy, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """SB3's ``policy(obs)`` (actions, values, log-probabilities) for the MLP policies this module
    builds (one features extractor shared by actor and critic), the actions drawn by ``_draw``: on
    the CPU the very draw SB3 makes."""
    features = policy.extract_features(obs)
    assert isinstance(features, torch.Tensor)  # a shared extractor gives one tensor
    latent_pi, latent_vf = policy.mlp_extractor(features)
    actions, log_probs = _draw(policy.action_net(latent_pi))
    return actions, policy.value_net(latent_vf).cpu(), log_probs


def _legacy_state(rng: Any) -> tuple[Any, ...]:
    """``get_state()`` of numpy's legacy RNG (a module or ``RandomState``): the tuple form."""
    state = rng.get_state(legacy=True)
    if not isinstance(state, tuple):
        raise StateError(f"numpy's legacy RNG state is a {type(state).__name__}, expected a tuple")
    return state

"""Pools as rewards: the trainer's ``TeamRewardShaper`` and per-agent ``RewardFn``s for the wrapper.

``PoolShaper(pools, scene)`` compiles every pool entry once and returns, for each agent i,
``sum_m w_{i,m} f_{i,m}(state, a_i)`` from agent i's own pool only, vectorised over games; the env
reward is not added here (the trainer or the wrapper adds it exactly once). Two ways to train on it:

    shaper = PoolShaper(pools, Scene.from_env(venv))
    OvercookedRows(venv, shaper)                 # rlkit.marl: terms (G, n_agents) per step

    env = oc.parallel_env(...)
    wrapped = PettingZooRewardWrapper(env, pool_reward_fns(shaper, env), mode="add")

Pools are immutable: after ``TeamPools.update`` build a new ``PoolShaper`` (and, on the wrapper
path, ``wrapped.set_reward_fns(pool_reward_fns(new_shaper, env))``).

The ``RewardFn`` path reads the env's ``features()`` after each step (so the wrapped env must be
the one whose features it reads); the wrapper hands it the action each agent's step carried out
(Overcooked's ``actions_in_effect()``: with macro actions the running macro, not an action sent
while it runs), exactly what the trainer's path passes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from rlkit.errors import InvalidDataError, WrongTypeError
from rlkit.m3hf.scene import Scene
from rlkit.m3hf.templates import Term, compile_term
from rlkit.m3hf.weights import TeamPools


class PoolShaper:
    """Each agent's weighted pool terms: a ``rlkit.types.TeamRewardShaper``."""

    def __init__(self, pools: TeamPools, scene: Scene, scale: float = 1.0) -> None:
        """Compile every pool entry with a positive weight once.

        Args:
            pools: every agent's pool; each spec's names must exist in ``scene``.
            scene: the game the terms read (names, sizes), with as many agents as ``pools``.
            scale: multiplies the whole shaping sum, finite and >= 0 (1 = the paper; lower it to
                weaken shaping against the env reward in an ablation).

        Raises:
            InvalidDataError: on a bad ``scale``, another agent count than the scene's, or a spec
                naming what the scene lacks.
        """
        if not (scale >= 0 and np.isfinite(scale)):
            raise InvalidDataError(f"scale must be finite and >= 0, got {scale!r}")
        if pools.n_agents != scene.n_agents:
            raise InvalidDataError(f"pools hold {pools.n_agents} agents, the scene {scene.n_agents}")
        for pool in pools.pools:  # pools may come from a file or another env: names must exist here
            for entry in pool.entries:
                scene.check(entry.spec)
        self.pools = pools
        self.scene = scene
        self.scale = float(scale)
        # (weight, term) per agent; zero weights are dropped, they cannot change the sum
        self._terms: list[list[tuple[float, Term]]] = [
            [
                (self.scale * entry.weight, compile_term(entry.spec.params, scene))
                for entry in pool.entries
                if entry.weight > 0 and scale > 0
            ]
            for pool in pools.pools
        ]

    def agent_terms(self, state: Mapping[str, np.ndarray], actions: np.ndarray, agent: int) -> np.ndarray:
        """Agent ``agent``'s shaping term per game, from its own pool; ``actions`` (G,) are its own."""
        total = np.zeros(len(actions), dtype=np.float64)
        for weight, term in self._terms[agent]:
            total += weight * term(state, actions, agent)
        return total

    def __call__(self, state: Mapping[str, np.ndarray], actions: np.ndarray) -> np.ndarray:
        actions = np.asarray(actions)
        if actions.ndim != 2 or actions.shape[1] != self.pools.n_agents:
            raise InvalidDataError(f"actions must have shape (G, {self.pools.n_agents}), got {actions.shape}")
        return np.stack([self.agent_terms(state, actions[:, i], i) for i in range(actions.shape[1])], axis=1)


class PoolRewardFn:
    """One agent's pool as a ``RewardFn`` (batch of one) reading ``features()`` of a live env.

    Made by ``pool_reward_fns``; only ``acts`` of a call is read, the state comes from
    ``features``.

    Args:
        shaper: the agents' weighted pools.
        agent: the agent's index.
        features: the live env's ``features()``, read at each call (after the step).
    """

    def __init__(
        self, shaper: PoolShaper, agent: int, features: Callable[[], Mapping[str, np.ndarray]]
    ) -> None:
        self.shaper, self.agent, self._features = shaper, agent, features

    def __call__(
        self, obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray, dones: np.ndarray
    ) -> np.ndarray:
        actions = np.asarray(acts).reshape(len(obs), -1)[:, 0]
        if len(actions) != 1:
            raise InvalidDataError(
                f"PoolRewardFn reads the live env state: one transition at a time, got {len(actions)}"
            )
        state = {key: np.asarray(value)[None] for key, value in self._features().items()}
        return self.shaper.agent_terms(state, actions, self.agent)


def pool_reward_fns(shaper: PoolShaper, env: object) -> dict[str, PoolRewardFn]:
    """``{agent_name: RewardFn}`` for ``PettingZooRewardWrapper(env, ..., mode="add")``.

    Args:
        shaper: the agents' weighted pools.
        env: the live Overcooked parallel env; its ``features()`` is read at each reward.

    Returns:
        Agent name -> that agent's pool as a ``RewardFn`` (a batch of one step).

    Raises:
        WrongTypeError: when ``env`` has no ``features()``.
    """
    features = getattr(env, "features", None)
    if not callable(features):
        raise WrongTypeError(f"{type(env).__name__} has no features(): the pools need the env's state arrays")
    return {name: PoolRewardFn(shaper, i, features) for i, name in enumerate(shaper.scene.agent_names)}

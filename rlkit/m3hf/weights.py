"""Per-agent reward pools and the paper's weight rule; saved and loaded with the run as JSON.

Every agent owns a ``RewardPool`` of ``PoolEntry(spec, weight, generation)``; ``TeamPools`` holds
one pool per agent (never one pool shared by reference) and hands each parsed spec to the agents
it names. At each phase every agent's weights are updated by ``WeightRule`` (alpha = 0.9,
beta = 0.1 by default). Two rules:

``reference`` (default; the reference implementation's ``weight_decay_and_performance_adjustment``)
  for an agent whose pool of M functions gains new ones this phase:
  1. every weight is reset to uniform 1 / M;
  2. each older function m (0 = oldest) decays ONCE: w_m <- w_m * alpha^(M - 1 - m);
  3. the newest function gains beta if the ORIGINAL env return improved between the last two
     generations, else loses beta (floor 0); ``improved=None`` (nothing to compare yet) skips it;
  4. the weights are normalised to sum to 1 (all zero: uniform again).
  A phase that adds nothing to an agent's pool decays its stored weights by alpha^(M - 1 - m) and
  normalises them (no performance step), as the reference does.

``compounding`` (an ablation): new functions enter at
  1 / (|pool| + 1); every stored weight decays by alpha^(G - g) (g its generation) at every phase,
  so old feedback keeps shrinking phase after phase; the functions trained with since the last
  phase gain or lose beta; normalised (a pool whose weights all reached 0 stays at 0).

The pool is the only place weights live, so weights and functions cannot fall out of step. The
env reward is not in the pool: the trainer adds it once (``shaping.PoolShaper``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
from pydantic import ValidationError, field_validator

from rlkit.config import StrictModel
from rlkit.errors import ConfigError, FileFormatError, InvalidDataError
from rlkit.m3hf.specs import RewardSpec
from rlkit.persistence import atomic_write_json, read_json, tag

FORMAT = tag("rlkit.m3hf.pools")


class WeightRule(StrictModel):
    """Decay ``alpha``, performance step ``beta``, and which rule (see the module docstring).

    Args:
        alpha: the decay of older functions' weights, in (0, 1].
        beta: the performance step added to (or taken from) the newest functions' weight, in
            [0, 1).
        kind: ``"reference"`` (the reference implementation's rule) or ``"compounding"``
            (an ablation whose decay compounds phase after phase).

    Raises:
        ConfigError: when ``alpha`` or ``beta`` is out of range.
    """

    alpha: float = 0.9
    beta: float = 0.1
    kind: Literal["reference", "compounding"] = "reference"

    def __init__(self, alpha: float = 0.9, beta: float = 0.1, kind: str = "reference") -> None:
        super().__init__(alpha=alpha, beta=beta, kind=kind)

    @field_validator("alpha")
    @classmethod
    def _alpha(cls, value: float) -> float:
        if not 0.0 < value <= 1.0:
            raise ConfigError(f"alpha must be in (0, 1], got {value!r}")
        return value

    @field_validator("beta")
    @classmethod
    def _beta(cls, value: float) -> float:
        if not 0.0 <= value < 1.0:
            raise ConfigError(f"beta must be in [0, 1), got {value!r}")
        return value

    def reweight(
        self, weights: np.ndarray, generations: np.ndarray, generation: int, improved: bool | None
    ) -> np.ndarray:
        """The new weights of a pool whose new entries (generation == ``generation``) are already in
        (their stored weight is ignored by the reference rule)."""
        if self.kind == "reference":
            return self._reference(weights, int((generations == generation).sum()), improved)
        return self._compounding(weights, generations, generation, improved)

    def _reference(self, weights: np.ndarray, n_new: int, improved: bool | None) -> np.ndarray:
        size = len(weights)
        decay = self.alpha ** (size - 1 - np.arange(size))
        if n_new == 0:
            weights = weights * decay
        else:
            weights = np.full(size, 1.0 / size)
            old = size - n_new
            weights[:old] *= decay[:old]
            if improved is not None:
                weights[-1] = weights[-1] + self.beta if improved else max(weights[-1] - self.beta, 0.0)
        total = weights.sum()
        return weights / total if total > 0 else np.full(size, 1.0 / size)

    def _compounding(
        self, weights: np.ndarray, generations: np.ndarray, generation: int, improved: bool | None
    ) -> np.ndarray:
        weights = weights * self.alpha ** (generation - generations)
        earlier = generations[generations < generation]
        if improved is not None and len(earlier):
            under_test = generations == earlier.max()
            step = self.beta if improved else -self.beta
            weights = np.where(under_test, np.maximum(weights + step, 0.0), weights)
        total = weights.sum()
        return weights / total if total > 0 else weights


@dataclass(frozen=True)
class PoolEntry:
    """One reward function of an agent's pool.

    Attributes:
        spec: the reward function, as parsed from feedback.
        weight: its weight in the pool, in [0, 1] (a pool's weights sum to 1, or are all 0).
        generation: the generation (phase) whose feedback added it, from 1.
    """

    spec: RewardSpec
    weight: float
    generation: int


@dataclass(frozen=True)
class RewardPool:
    """One agent's functions and weights (immutable: updates return a new pool).

    Attributes:
        agent: the agent's index.
        entries: its reward functions, oldest first.
    """

    agent: int
    entries: tuple[PoolEntry, ...] = ()

    @property
    def weights(self) -> np.ndarray:
        return np.array([entry.weight for entry in self.entries], dtype=np.float64)

    def updated(
        self, new_specs: Sequence[RewardSpec], generation: int, improved: bool | None, rule: WeightRule
    ) -> RewardPool:
        """The pool after one phase: add ``new_specs``, decay, the performance step, normalise."""
        if self.entries and generation <= max(entry.generation for entry in self.entries):
            raise InvalidDataError(
                f"generation {generation} must be later than the pool's newest "
                f"({max(entry.generation for entry in self.entries)}) for agent {self.agent}"
            )
        entries = list(self.entries)
        for spec in new_specs:
            entries.append(PoolEntry(spec, 1.0 / (len(entries) + 1), generation))
        if not entries:
            return self
        generations = np.array([entry.generation for entry in entries])
        weights = rule.reweight(np.array([e.weight for e in entries]), generations, generation, improved)
        return replace(
            self, entries=tuple(replace(e, weight=float(w)) for e, w in zip(entries, weights, strict=True))
        )


@dataclass(frozen=True)
class TeamPools:
    """One ``RewardPool`` per agent, the generation last applied, and the rule.

    Attributes:
        pools: a pool per agent, agents 0, 1, ... in order.
        generation: the generation last applied (0: no feedback yet).
        rule: how each phase reweights the pools.

    Raises:
        InvalidDataError: when the pools are not agents 0 to n - 1 in order.
    """

    pools: tuple[RewardPool, ...]
    generation: int = 0
    rule: WeightRule = field(default_factory=WeightRule)

    def __post_init__(self) -> None:
        agents = [pool.agent for pool in self.pools]
        if agents != list(range(len(self.pools))):
            raise InvalidDataError(f"pools must be agents 0..{len(self.pools) - 1} in order, got {agents}")

    @classmethod
    def empty(cls, n_agents: int, rule: WeightRule | None = None) -> TeamPools:
        """Generation 0: every agent trains on the env reward alone."""
        return cls(tuple(RewardPool(agent) for agent in range(n_agents)), 0, rule or WeightRule())

    @property
    def n_agents(self) -> int:
        return len(self.pools)

    def update(self, specs: Sequence[RewardSpec], improved: bool | None) -> TeamPools:
        """Next generation: each spec joins the pools of the agents it names; every pool reweights."""
        generation = self.generation + 1
        for spec in specs:
            if spec.agents != "all" and max(spec.agents) >= self.n_agents:
                raise InvalidDataError(f"spec agents {spec.agents} out of range for {self.n_agents} agents")
        pools = tuple(
            pool.updated(
                [spec for spec in specs if pool.agent in spec.agent_indices(self.n_agents)],
                generation,
                improved,
                self.rule,
            )
            for pool in self.pools
        )
        return replace(self, pools=pools, generation=generation)

    # ------------------------------------------------------------------ persistence
    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "generation": self.generation,
            "rule": {"alpha": self.rule.alpha, "beta": self.rule.beta, "kind": self.rule.kind},
            "pools": [
                {
                    "agent": pool.agent,
                    "entries": [
                        {
                            "spec": e.spec.model_dump(mode="json"),
                            "weight": e.weight,
                            "generation": e.generation,
                        }
                        for e in pool.entries
                    ],
                }
                for pool in self.pools
            ],
        }

    @classmethod
    def from_json(cls, data: Any, source: str = "pools") -> TeamPools:
        """Rebuild from ``to_json``; damaged data raises ``FileFormatError`` naming the field."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            found = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise FileFormatError(f"{source}: format must be {FORMAT!r}, found {found!r}")
        try:
            pools = []
            for k, pool in enumerate(data["pools"]):
                entries = []
                for j, entry in enumerate(pool["entries"]):
                    where = f"{source}: pools.{k}.entries.{j}"
                    weight, generation = float(entry["weight"]), int(entry["generation"])
                    if not math.isfinite(weight) or weight < 0:
                        raise FileFormatError(f"{where}.weight must be finite and >= 0, got {weight!r}")
                    if not 0 < generation <= int(data["generation"]):
                        raise FileFormatError(
                            f"{where}.generation {generation} outside 1..{data['generation']}"
                        )
                    entries.append(PoolEntry(RewardSpec.model_validate(entry["spec"]), weight, generation))
                pools.append(RewardPool(int(pool["agent"]), tuple(entries)))
            rule = WeightRule(**data["rule"])
            return cls(tuple(pools), int(data["generation"]), rule)
        except (KeyError, TypeError, ValidationError, ValueError) as error:
            if isinstance(error, FileFormatError):
                raise
            raise FileFormatError(f"{source}: damaged pools file: {type(error).__name__}: {error}") from error

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write atomically: a crash leaves the previous file whole."""
        atomic_write_json(path, self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TeamPools:
        return cls.from_json(read_json(path), str(path))  # unreadable, non-UTF-8, not JSON: named

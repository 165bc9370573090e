"""The typed config of ``rlkit apec`` and ``rlkit demos`` (YAML + ``key=value`` overrides).

Defaults follow APEC's reference at a smaller budget (see ``experiments/configs/apec_*.yaml``
for the per-task budgets and how long they take on 2 cores).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from rlkit.config import StrictModel
from rlkit.factories.configs import AgentConfig
from rlkit.reward.config import TrainerConfig

Method = Literal["apec", "apec_ordinal", "gap_only", "ot_only", "drex", "raw_ail"]
METHODS: tuple[Method, ...] = ("apec", "gap_only", "ot_only", "drex", "raw_ail")
"""The default arms; ``apec_ordinal`` (APEC's pairs, labels graded by the index gap on the
five-level scale, fitted with the ordinal cross-entropy) is an option to measure, not a default."""


class ApecEnvConfig(StrictModel):
    """``horizon``: pad episodes to this length with an absorbing state (None: the plain env)."""

    id: str = "Hopper-v5"
    n_envs: int = Field(1, ge=1)
    horizon: int | None = Field(1000, ge=1)
    kwargs: dict[str, Any] = {}


class DemosSettings(StrictModel):
    """Train a demonstrator with SB3, then take demos at ``target_fraction`` of its best return.
    ``path``: use an existing demos ``.npz`` instead (nothing is trained)."""

    path: str | None = None
    n_envs: int | None = Field(None, ge=1, description="the demonstrator's envs (default: env.n_envs)")
    algo: Literal["ppo", "sac"] = "sac"
    total_timesteps: int = Field(100_000, ge=1)
    checkpoint_every: int = Field(10_000, ge=1)
    target_fraction: float = Field(0.65, gt=0, le=1)
    n_demos: int = Field(1, ge=1)
    eval_episodes: int = Field(3, ge=1)
    baseline: Literal["zero", "random"] = Field("zero", description="the return that counts as 0%")
    kwargs: dict[str, Any] = {}


class AILSettings(StrictModel):
    """APEC's AIL: a SAC generator, state-only max-ent IRL reward, output clipped to +-10."""

    rounds: int = Field(50, ge=1)
    steps_per_round: int = Field(5000, ge=1)
    generator: Literal["ppo", "sac"] = "sac"
    generator_kwargs: dict[str, Any] = {}
    loss: Literal["gail", "airl", "maxent"] = "maxent"
    state_only: bool = True
    hidden: tuple[int, ...] = (256, 256)
    lr: float = Field(1e-4, gt=0)
    weight_decay: float = Field(1e-3, ge=0)
    reward_clip: float | None = Field(10.0, gt=0)
    grad_penalty: float = Field(0.0, ge=0)
    batch_size: int = Field(1000, ge=1)
    updates_per_round: int = Field(1, ge=0)
    agent_buffer: int | None = Field(1000, ge=1)
    checkpoint_every: int = Field(1, ge=1)


class RolloutSettings(StrictModel):
    per_checkpoint: int = Field(10, ge=1)
    max_checkpoints: int | None = Field(50, ge=2, description="roll out only the first this many")


class PairSettings(StrictModel):
    """``ot_threshold`` in raw Sinkhorn units (the paper's 0.1 on a x1000 scale is 1e-4)."""

    n_pairs: int = Field(1000, ge=1)
    gap: int = Field(10, ge=0)
    ot_threshold: float = Field(1e-4, ge=0)
    ot_reg: float = Field(0.05, gt=0)
    segment_length: int | None = Field(None, ge=1)
    labels: Literal["binary", "gap"] = "binary"


class DrexSettings(StrictModel):
    noise_step: float = Field(0.05, gt=0, le=1)
    rollouts_per_level: int = Field(5, ge=1)
    min_gap: float = Field(0.5, gt=0)
    bc_epochs: int = Field(200, ge=1)


class HeldOutSettings(StrictModel):
    """Trajectories never used for training: random actions, AIL checkpoints (a separate
    rollout seed) and the demonstrator's checkpoints; pairs labelled by the true return."""

    episodes_per_policy: int = Field(2, ge=1)
    random_episodes: int = Field(5, ge=0)
    n_pairs: int = Field(2000, ge=1)
    segment_length: int = Field(100, ge=1)


class RewardSettings(StrictModel):
    """APEC's reward model: state-only MLP, Bradley-Terry on summed segment rewards."""

    inputs: tuple[str, ...] = ("obs",)
    hidden: tuple[int, ...] = (256, 256)
    trainer: TrainerConfig = TrainerConfig(loss="bt", lr=1e-4, weight_decay=0.0, batch_size=64,
                                               max_epochs=30, patience=5)


class PolicySettings(StrictModel):
    """A policy trained from scratch on each listed method's learned reward (true return reported)."""

    methods: list[Method] = ["apec", "drex"]
    agent: AgentConfig = AgentConfig(algo="sac", total_timesteps=100_000, eval_episodes=5)


class ApecConfig(StrictModel):
    env: ApecEnvConfig = ApecEnvConfig()
    demos: DemosSettings = DemosSettings()
    ail: AILSettings = AILSettings()
    rollouts: RolloutSettings = RolloutSettings()
    pairs: PairSettings = PairSettings()
    drex: DrexSettings = DrexSettings()
    reward: RewardSettings = RewardSettings()
    heldout: HeldOutSettings = HeldOutSettings()
    methods: list[Method] = list(METHODS)
    policy: PolicySettings = PolicySettings()
    seed: int = 0


class DemosConfig(StrictModel):
    """``rlkit demos``: a demonstrator and suboptimal demos, nothing else."""

    env: ApecEnvConfig = ApecEnvConfig()
    demos: DemosSettings = DemosSettings()
    seed: int = 0

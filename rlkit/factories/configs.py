"""The typed configs of rlkit's commands; each maps one-to-one onto a YAML file."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from rlkit.config import StrictModel


class EnvConfig(StrictModel):
    id: str = "HalfCheetah-v5"
    n_envs: int = Field(4, ge=1)
    seed: int = 0
    kwargs: dict[str, Any] = {}


class PolicySource(StrictModel):
    """Where rollouts come from: ``random`` or a saved SB3 model (``algo`` + ``path``). An agent
    rlkit saved loads without unpickling; any other SB3 zip goes through SB3's loader, which
    unpickles some fields (open only files you trust)."""

    kind: Literal["random", "sb3"] = "random"
    algo: Literal["ppo", "sac", "a2c", "td3"] = "ppo"
    path: str | None = None
    n_steps: int = Field(10_000, ge=1)
    deterministic: bool = False


class CollectConfig(StrictModel):
    env: EnvConfig = EnvConfig()
    policies: list[PolicySource] = [PolicySource()]
    max_length: int | None = Field(None, ge=1, description="cut episodes into pieces this long")
    seed: int = 0


class TeacherSettings(StrictModel):
    """``beta="auto"`` fits beta so that beta * (G_A - G_B) has std ``auto_beta_std``."""

    scale: str = "five"
    beta: float | Literal["auto"] = "auto"
    auto_beta_std: float = Field(2.0, gt=0)
    gamma: float = Field(1.0, gt=0, le=1)
    mistake_rate: float = Field(0.0, ge=0, le=1)
    skip_threshold: float | None = None
    equal_threshold: float = Field(0.0, ge=0)


class LabelConfig(StrictModel):
    trajectories: str | None = Field(None, description="a TrajectoryStore .npz from `rlkit collect`")
    n_pairs: int = Field(1000, ge=1)
    segment_length: int = Field(50, ge=1)
    teacher: TeacherSettings = TeacherSettings()
    seed: int = 0
    annotator: str | None = Field(None, description="with --human: your annotator id")
    database: str | None = Field(None, description="with --human: label store (dir or URL); default run dir")


class RewardModelConfig(StrictModel):
    inputs: tuple[str, ...] = ("obs", "act")
    hidden: tuple[int, ...] = (256, 256)
    activation: str = "relu"
    kind: Literal["auto", "mlp", "cnn"] = "auto"
    ensemble_size: int = Field(1, ge=1)


class TrainerSettings(StrictModel):
    loss: Literal["ordinal", "bt", "rao_kupper", "hinge"] = "ordinal"
    lr: float = Field(1e-3, gt=0)
    weight_decay: float = Field(1e-4, ge=0)
    batch_size: int = Field(64, ge=1)
    max_epochs: int = Field(100, ge=1)
    val_fraction: float = Field(0.1, ge=0, lt=1)
    patience: int = Field(10, ge=1)


class TrainRewardConfig(StrictModel):
    dataset: str | None = Field(None, description="a PreferenceDataset from `rlkit label`")
    held_out_fraction: float = Field(0.2, gt=0, lt=1)
    model: RewardModelConfig = RewardModelConfig()
    trainer: TrainerSettings = TrainerSettings()
    seed: int = 0


class EvalRewardConfig(StrictModel):
    model: str | None = Field(None, description="a directory written by `rlkit train-reward`")
    dataset: str | None = None


class AgentConfig(StrictModel):
    algo: Literal["ppo", "sac"] = "ppo"
    total_timesteps: int = Field(100_000, ge=1)
    kwargs: dict[str, Any] = {}
    normalize_reward: bool = True
    eval_episodes: int = Field(5, ge=1)


class DemoConfig(StrictModel):
    """The whole offline loop: collect -> label -> train reward -> train agent -> report."""

    env: EnvConfig = EnvConfig()
    policies: list[PolicySource] = [PolicySource(n_steps=40_000)]
    max_length: int = Field(200, ge=1, description="cut episodes into pieces this long")
    label: LabelConfig = LabelConfig(n_pairs=2000)
    train_reward: TrainRewardConfig = TrainRewardConfig(
        trainer=TrainerSettings(max_epochs=50, patience=5),
    )
    agent: AgentConfig = AgentConfig(
        total_timesteps=200_000,
        kwargs={"n_steps": 512, "batch_size": 256, "n_epochs": 5, "learning_rate": 3e-4},
    )
    seed: int = 0


class QueryConfig(StrictModel):
    every_steps: int = Field(10_000, ge=1, description="query and refit every this many steps")
    initial_pairs: int = Field(200, ge=1)
    pairs_per_round: int = Field(100, ge=1)
    candidates_per_query: int = Field(10, ge=1, description="candidate pairs per selected pair")
    selector: Literal["uniform", "disagreement", "entropy"] = "disagreement"
    segment_length: int = Field(50, ge=1)
    max_pairs: int | None = Field(None, ge=1, description="stop querying at this many labels")


class HumanTeacherSettings(StrictModel):
    """People label the queries on ``rlkit serve --run-dir <the run's dir>`` (or ``rlkit label --human``)."""

    wait: bool = Field(True, description="pause training for labels; false: go on at once, unanswered = NaN")
    min_fraction: float = Field(1.0, gt=0, le=1, description="share of a batch to wait for")
    timeout_s: float = Field(3600.0, ge=0, description="then go on; unanswered pairs are NaN (skipped)")
    poll_s: float = Field(0.5, gt=0, description="how often the label store is checked")
    redundancy: int = Field(1, ge=1, description="annotators asked per pair")
    render_media: bool = Field(True, description="videos in the run's media/ for `rlkit serve`")
    fps: float = Field(10.0, gt=0)


class PrefRLTeacherSettings(TeacherSettings):
    """``simulated`` (the settings above) or ``human`` (``human``; ``scale`` is the one people label on)."""

    kind: Literal["simulated", "human"] = "simulated"
    human: HumanTeacherSettings = HumanTeacherSettings()


class PrefRLConfig(StrictModel):
    env: EnvConfig = EnvConfig()
    agent: AgentConfig = AgentConfig()
    query: QueryConfig = QueryConfig()
    teacher: PrefRLTeacherSettings = PrefRLTeacherSettings()
    model: RewardModelConfig = RewardModelConfig(ensemble_size=3)
    trainer: TrainerSettings = TrainerSettings(max_epochs=30)
    seed: int = 0

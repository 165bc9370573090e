"""The typed configs of rlkit's commands; each maps one-to-one onto a YAML file."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from rlkit.config import StrictModel
from rlkit.devices import Device
from rlkit.errors import ConfigError, InvalidLabelError
from rlkit.factories.hyperparams import resolve_hyperparams
from rlkit.feedback.teachers import TeacherConfig
from rlkit.reward.config import TrainerConfig

log = logging.getLogger(__name__)


class EnvConfig(StrictModel):
    id: str = "HalfCheetah-v5"
    n_envs: int = Field(4, ge=1)
    seed: int = 0
    kwargs: dict[str, Any] = {}


class PolicySource(StrictModel):
    """Where rollouts come from: ``random`` or a saved SB3 model (``algo`` + ``path``). An agent
    rlkit saved (its ``.json`` beside the zip) loads without unpickling; any other SB3 zip goes
    through SB3's loader, which unpickles some fields, and so only with ``trust_pickle: true``
    (a pickle can run any code: open only files you trust)."""

    kind: Literal["random", "sb3"] = "random"
    algo: Literal["ppo", "sac", "a2c", "td3"] = "ppo"
    path: str | None = None
    n_steps: int = Field(10_000, ge=1)
    deterministic: bool = False
    trust_pickle: bool = Field(False, description="load an SB3 zip rlkit did not save (it unpickles)")
    device: Device = Field("auto", description="where the policy acts: auto = CUDA when present")


def untrusted_zip(field: str, path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` is refused as ``field`` without ``trust_pickle`` (None: rlkit saved it, so it
    loads without unpickling)."""
    spec = Path(path).with_suffix(".json")
    if spec.is_file():
        return None
    return (f"{field}.path={path}: an SB3 zip without rlkit's {spec.name} beside it, which only "
            "SB3's loader reads, by unpickling (a pickle can run any code): if you trust the file, "
            f"set {field}.trust_pickle=true")


class CollectConfig(StrictModel):
    env: EnvConfig = EnvConfig()
    policies: list[PolicySource] = [PolicySource()]
    max_length: int | None = Field(None, ge=1, description="cut episodes into pieces this long")
    seed: int = 0


class LabelConfig(StrictModel):
    trajectories: str | None = Field(None, description="a TrajectoryStore .npz from `rlkit collect`")
    n_pairs: int = Field(1000, ge=1)
    segment_length: int = Field(50, ge=1)
    teacher: TeacherConfig = TeacherConfig(beta="auto")
    seed: int = 0
    annotator: str | None = Field(None, description="with --human: your annotator id")
    database: str | None = Field(None, description="with --human: label store (dir or URL); default run dir")


class RewardModelConfig(StrictModel):
    inputs: tuple[str, ...] = ("obs", "act")
    hidden: tuple[int, ...] = (256, 256)
    activation: str = "relu"
    kind: Literal["auto", "mlp", "cnn"] = "auto"
    encoder: Literal["compact", "drq"] = Field(
        "compact", description="a CNN image encoder: compact (fast on a CPU) or drq (APEC's DrQ-v2)")
    ensemble_size: int = Field(1, ge=1)


class TrainRewardConfig(StrictModel):
    dataset: str | None = Field(None, description="a PreferenceDataset from `rlkit label`")
    held_out_fraction: float = Field(0.2, gt=0, lt=1)
    model: RewardModelConfig = RewardModelConfig()
    trainer: TrainerConfig = TrainerConfig()
    seed: int = 0


class EvalRewardConfig(StrictModel):
    model: str | None = Field(None, description="a directory written by `rlkit train-reward`")
    dataset: str | None = None


HYPERPARAMS_HELP = (
    "auto: rl-zoo3's tuned settings for this env and algo when rl_zoo3 is installed and has them, "
    "else SB3's defaults (a log line says which); zoo: the same, rl_zoo3 required; sb3: SB3's "
    "defaults; or a mapping of SB3 arguments. Resolved when the config is loaded: the run's "
    "config.yaml holds the settings used. The zoo's n_envs is logged, not applied (env.n_envs "
    "stays), its n_timesteps and VecNormalize are not used (rlkit normalises the learned reward)"
)


class AgentConfig(StrictModel):
    algo: Literal["ppo", "sac"] = "ppo"
    total_timesteps: int = Field(100_000, ge=1)
    hyperparams: Literal["auto", "zoo", "sb3"] | dict[str, Any] = Field("auto", description=HYPERPARAMS_HELP)
    kwargs: dict[str, Any] = Field({}, description="SB3 arguments over agent.hyperparams")
    device: Device = Field("auto", description=(
        "auto = CUDA when present; SB3's MLP policies often train faster on cpu (SB3 says so for PPO)"))
    normalize_reward: bool = True
    eval_episodes: int = Field(5, ge=1)

    @model_validator(mode="after")
    def _device_in_one_place(self) -> AgentConfig:
        for name in ("hyperparams", "kwargs"):
            given = getattr(self, name)
            if isinstance(given, dict) and {"device", "seed"} & set(given):
                raise ConfigError(f"agent.{name} sets {sorted({'device', 'seed'} & set(given))}: use "
                                  "agent.device and the config's seed")
        return self


def resolve_agent_settings(data: Any, defaults: type[StrictModel]) -> Any:
    """A command config's raw ``data`` with ``agent.hyperparams`` resolved for its ``env.id``:
    ``auto``/``zoo`` become the settings themselves (see ``rlkit.factories.hyperparams``), so the
    run's ``config.yaml`` records them. The class's own defaults (no data) stay unresolved, since
    ``load_config`` lays a file and overrides over them (``make_agent`` resolves a config left so).
    Data that do not validate are returned as they are, for the config's own validation to word.

    Args:
        data: the keyword arguments the config is being built from.
        defaults: the config class (its ``env`` and ``agent`` defaults fill what data leave out).

    Returns:
        The data to build the config from.
    """
    if not isinstance(data, dict) or not data:
        return data
    fields = defaults.model_fields
    try:
        env = _section(data.get("env", fields["env"].default), EnvConfig)
        agent = _section(data.get("agent", fields["agent"].default), AgentConfig)
    except ValueError:  # ConfigError and pydantic's ValidationError
        return data
    if isinstance(agent.hyperparams, dict) or agent.hyperparams == "sb3":
        return data
    resolved = resolve_hyperparams(agent.hyperparams, env.id, agent.algo)
    if resolved.n_envs not in (None, env.n_envs):
        log.info("rl-zoo3 tunes %s on %s with env.n_envs=%d; this run has %d (set env.n_envs for the zoo's)",
                 agent.algo, env.id, resolved.n_envs, env.n_envs)
    return {**data, "agent": agent.replace(hyperparams=resolved.hyperparams)}


def _section(value: Any, schema: type[StrictModel]) -> Any:
    return value if isinstance(value, schema) else schema.model_validate(value)


class QueryConfig(StrictModel):
    every_steps: int = Field(10_000, ge=1, description="query and refit every this many steps")
    initial_pairs: int = Field(200, ge=1)
    pairs_per_round: int = Field(100, ge=1)
    candidates_per_query: int = Field(10, ge=1, description="candidate pairs per selected pair")
    selector: Literal["uniform", "disagreement", "entropy"] = "disagreement"
    segment_length: int = Field(50, ge=1)
    max_pairs: int | None = Field(None, ge=1, description="stop querying at this many labels")
    unsupervised_steps: int = Field(
        0, ge=0, description="of the first every_steps steps, this many train an off-policy agent "
        "to explore (PEBBLE's state-entropy pre-training) instead of acting at random")

    @model_validator(mode="after")
    def _unsupervised_within_first_round(self) -> QueryConfig:
        if self.unsupervised_steps >= self.every_steps:
            raise ConfigError(f"query.unsupervised_steps={self.unsupervised_steps} must be below "
                              f"query.every_steps={self.every_steps} (the steps before the first labels, "
                              "the random seed steps included)")
        return self


class HumanTeacherConfig(StrictModel):
    """People label the queries on ``rlkit serve --run-dir <the run's dir>`` (or ``rlkit label --human``);
    the ``teacher.human`` section of ``rlkit pref-rl`` and the argument of ``rlkit.human.HumanTeacher``.

    Attributes:
        wait: pause training until a batch is answered; False: go on at once, unanswered pairs
            are NaN (skipped).
        min_fraction: the share of a batch's pairs to wait for (each answered by ``redundancy``
            people), in (0, 1].
        timeout_s: the most seconds to wait for a batch, >= 0; then training goes on and
            unanswered pairs are NaN.
        poll_s: seconds between checks of the label store, > 0.
        redundancy: annotators asked per pair, >= 1 (> 1: the dashboard shows agreement).
        render_media: write the segments' videos and plots to the run's ``media/`` for
            ``rlkit serve``.
        fps: frames per second of the segments' videos, > 0.
    """

    invalid_error = InvalidLabelError

    wait: bool = Field(True, description="pause training for labels; false: go on at once, unanswered = NaN")
    min_fraction: float = Field(1.0, description="share of a batch to wait for, in (0, 1]")
    timeout_s: float = Field(3600.0, description="then go on; unanswered pairs are NaN (skipped)")
    poll_s: float = Field(0.5, description="how often the label store is checked")
    redundancy: int = Field(1, description="annotators asked per pair (> 1: the dashboard shows agreement)")
    render_media: bool = Field(True, description="videos in the run's media/ for `rlkit serve`")
    fps: float = Field(10.0, gt=0)

    @field_validator("min_fraction")
    @classmethod
    def _fraction(cls, value: float) -> float:
        if not 0.0 < value <= 1.0:
            raise InvalidLabelError(f"min_fraction must lie in (0, 1], got {value}")
        return value

    @field_validator("redundancy")
    @classmethod
    def _redundancy(cls, value: int) -> int:
        if value < 1:
            raise InvalidLabelError(f"redundancy must be >= 1, got {value}")
        return value

    @model_validator(mode="after")
    def _waits(self) -> HumanTeacherConfig:
        if self.timeout_s < 0 or self.poll_s <= 0:
            raise InvalidLabelError(
                f"timeout_s must be >= 0 and poll_s > 0, got {self.timeout_s} and {self.poll_s}"
            )
        return self


class PrefRLTeacherSettings(TeacherConfig):
    """``simulated`` (a ``TeacherConfig``, ``beta`` fitted by default) or ``human`` (``human``;
    ``scale`` is the one people label on)."""

    beta: float | Literal["auto"] = "auto"
    kind: Literal["simulated", "human"] = "simulated"
    human: HumanTeacherConfig = HumanTeacherConfig()


class PrefRLConfig(StrictModel):
    """``rlkit pref-rl``: an agent trained on a reward learned from preferences asked during its
    training (``reward=learned``), or, as the baseline that tells what learning the reward costs,
    the same agent with the same budget of env steps on the env's own reward (``reward=env``:
    no queries, labels or reward model; ``rlkit sweep pref-rl --grid reward=learned,env`` runs
    both). A budget that would never update the agent, or never refit the reward after its first
    fit, is refused when the config is loaded (``rlkit.factories.budget``)."""

    env: EnvConfig = EnvConfig()
    agent: AgentConfig = AgentConfig()
    query: QueryConfig = QueryConfig()
    teacher: PrefRLTeacherSettings = PrefRLTeacherSettings()
    model: RewardModelConfig = RewardModelConfig(ensemble_size=3)
    trainer: TrainerConfig = TrainerConfig(max_epochs=30, refit="steps", refit_epochs=10)
    seed: int = 0
    reward: Literal["learned", "env"] = Field(
        "learned", description="what the agent trains on: learned (from the queries) or env (the "
        "env's own, true reward; the same agent and budget: the baseline)")

    @model_validator(mode="before")
    @classmethod
    def _agent_settings(cls, data: Any) -> Any:
        return resolve_agent_settings(data, cls)

    @model_validator(mode="after")
    def _budget_trains(self) -> PrefRLConfig:
        """A budget that gives no agent update or no refit is refused here, before any env step
        (its warnings, for budgets that give few, are ``check_prefrl``'s to say at the run)."""
        from rlkit.factories.budget import check_prefrl

        # (random steps that take the whole budget are the loop's to refuse, naming them)
        if self.reward == "env" or self.query.every_steps < self.agent.total_timesteps:
            check_prefrl(self)
        return self

    @model_validator(mode="after")
    def _selector_fits_the_model(self) -> PrefRLConfig:
        """Refused up front, not at the first query round after minutes of training."""
        if self.query.selector == "disagreement" and self.model.ensemble_size < 2:
            raise ConfigError(
                f"query.selector=disagreement needs model.ensemble_size >= 2 (got "
                f"{self.model.ensemble_size}): the members' disagreement picks the pairs; use "
                "query.selector=uniform or entropy with one member"
            )
        return self


class DemoConfig(PrefRLConfig):
    """``rlkit demo``: ``rlkit pref-rl``'s online loop with a simulated 5-level teacher, beside the
    same agent on the true reward and a random policy, each scored the same way.

    Every ``PrefRLConfig`` field works as in ``rlkit pref-rl``; the defaults are a task the loop
    learns in a few minutes on two cores: Pendulum-v1, 100,000 env steps, at most 500 labels.
    ``true_reward_arm``: also train the same agent settings for the same env steps on the env's
    own reward (the baseline that tells what learning the reward costs). ``eval_episodes``: each
    agent's true return is the mean over this many fresh episodes of its deterministic actions
    (the random policy's over as many random episodes), on env seeds no training env used.
    The reward model sees the observation only (``model.inputs=[obs]``): Pendulum's reward is a
    function of the state but for a 0.001 u^2 action cost, and a model of (obs, act) fitted to the
    first round's random-action segments read the actions' noise as reward on one seed of five
    (docs/results/demo.md)."""

    env: EnvConfig = EnvConfig(id="Pendulum-v1")
    agent: AgentConfig = AgentConfig(total_timesteps=100_000)
    query: QueryConfig = QueryConfig(max_pairs=500)
    model: RewardModelConfig = RewardModelConfig(inputs=("obs",), ensemble_size=3)
    true_reward_arm: bool = True
    eval_episodes: int = Field(10, ge=2)

    @model_validator(mode="after")
    def _first_arm_learns_its_reward(self) -> DemoConfig:
        if self.reward != "learned":
            raise ConfigError(f"reward={self.reward}: the demo's first arm learns its reward from the "
                              "queries; the env's reward is its second arm (true_reward_arm=true)")
        return self

"""The typed config of ``rlkit apec`` and ``rlkit demos`` (YAML + ``key=value`` overrides).

Each stage's library config is nested as it is (``demos``: ``DemonstratorConfig``; ``ail``: the
AIL loop's ``AILConfig`` with its ``discriminator``, plus the generator; the training pairs'
``rollouts``, ``pairs`` and ``drex``: ``rlkit.apec.pair_config``'s), and the sections' defaults
are APEC's reference preset: the ``REFERENCE_*`` settings of ``rlkit.apec.presets`` and the
defaults below, which follow APEC's reference implementation (github.com/Zzl35/APEC,
``apec_mjc/``; file:line cited at each setting) and the paper's budget. The arms (``methods``)
are ``rlkit.apec.methods``'. ``experiments/configs/apec.yaml`` holds the per-task demonstrator
budgets and the measured cost.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from rlkit.ail.config import AILConfig
from rlkit.apec.methods import METHODS, Method
from rlkit.apec.methods import split_method as split_method  # rlkit.runners.apec imports it from here
from rlkit.apec.pair_config import DrexConfig, PairConfig, RolloutConfig
from rlkit.apec.presets import REFERENCE_AIL, REFERENCE_POLICY_SAC
from rlkit.apec.tasks import is_pixel_task
from rlkit.config import StrictModel
from rlkit.devices import Device
from rlkit.errors import InvalidDataError
from rlkit.factories.configs import AgentConfig
from rlkit.reward.config import TrainerConfig


def _sb3_kwargs_leave_device_and_seed(section: str, name: str, kwargs: dict[str, Any]) -> None:
    """SB3 arguments must not set what the config sets itself (SB3 would get them twice)."""
    if taken := sorted({"device", "seed"} & set(kwargs)):
        raise InvalidDataError(f"{name} sets {taken}: use {section}.device and the config's seed")


VECTOR_HORIZON = 1000
"""The fixed horizon of the vector tasks (MuJoCo's 1000 steps, padded with an absorbing state)."""


class ApecEnvConfig(StrictModel):
    """``horizon``: pad episodes to this length with an absorbing state (None: the plain env).
    The trajectories the rewards are learned and scored on (demos, rollouts, D-REX's, the
    held-out set) are padded; the agents (demonstrator, AIL generator, policies) train on
    episodes that end where the task terminates (``agent_episodes: end``), as the reference's
    SAC does (apec_mjc/envs/mujocoFH.py returns ``done`` there, rl_alg/sac.py:441-458 resets), with
    the same observations (the absorbing flag 0); ``pad``: they play the absorbing states to the
    horizon too (a Hopper demonstrator's replay buffer then holds mostly absorbing states, and SAC
    reached a best checkpoint return of 998 in 300k steps).

    Pixel tasks (an id that is one: ``envs.pixels.PIXEL_ENV_IDS``, the DMC pixel ids of
    ``envs.dmc``; ``pixels``) observe ``frame_stack`` uint8 frames stacked channel-first
    (``envs.pixels.StackFrames``); their trajectories are stored with each frame once. The
    absorbing-state padding is for vector observations: on a pixel task ``horizon`` is None (the
    vector default, 1000, the value every command line starts from, means none there) and any
    other value is refused."""

    id: str = "Hopper-v5"
    n_envs: int = Field(1, ge=1)
    horizon: int | None = Field(VECTOR_HORIZON, ge=1)
    kwargs: dict[str, Any] = {}
    frame_stack: int = Field(3, ge=1, description="frames per pixel observation (DrQ: 3)")
    agent_episodes: Literal["end", "pad"] = Field(
        "end", description="where the agents' training episodes end: at termination (end) or the "
        "horizon (pad)")

    @property
    def pixels(self) -> bool:
        """The task observes stacked uint8 frames (its id is a pixel task's)."""
        return is_pixel_task(self.id)

    @property
    def agents_end_at_termination(self) -> bool:
        """The agents train on unpadded episodes (a padded task with ``agent_episodes: end``): their
        data, the expert states the discriminator sees and a policy's replay seed, is the padded
        trajectories' real part (``rlkit.apec.rollouts.real_part``)."""
        return self.horizon is not None and self.agent_episodes == "end"

    @model_validator(mode="before")
    @classmethod
    def _pixel_task(cls, data: Any) -> Any:
        if isinstance(data, dict) and is_pixel_task(str(data.get("id", "Hopper-v5"))) and (
                data.get("horizon", VECTOR_HORIZON) == VECTOR_HORIZON):
            return {**data, "horizon": None}
        return data

    @model_validator(mode="after")
    def _pixels_without_absorbing_states(self) -> ApecEnvConfig:
        if self.pixels and self.horizon is not None:
            raise InvalidDataError(
                f"env.horizon={self.horizon}: absorbing-state padding is for vector observations; "
                f"the pixel task {self.id} runs without it (env.horizon=null)")
        return self


class DemonstratorConfig(StrictModel):
    """The demos stage (``rlkit demos``, the first stage of ``rlkit apec``): train a demonstrator
    with SB3 on the true reward, then take ``n_demos`` demos at ``target_fraction`` of its best
    checkpoint's return (``rlkit.apec.demonstrator``); ``eval_episodes`` per checkpoint.
    ``path``: use an existing demos ``.npz`` instead (nothing is trained). ``n_envs``: the
    demonstrator's envs (None: ``env.n_envs``); SAC takes one update per vectorised step, so this
    sets its update ratio.

    ``fraction_tolerance``: each demo's own return must lie within ``target_fraction`` +/- this
    fraction of the best (up to ``demo_tries`` draws of ``n_demos`` episodes per checkpoint, the
    checkpoints nearest the target first); None: the first draw from the nearest checkpoint. A
    checkpoint's mean over a few episodes says little about one episode where the task can end
    early (a Hopper checkpoint scored 2,405 gave a demo of 3,426, 0.97 of the best).

    ``baseline``: the return that counts as 0% — ``"zero"`` (MuJoCo locomotion, returns > 0) or
    ``"random"`` (the random policy's mean return, for envs whose returns are negative).
    ``kwargs``: the SB3 algorithm's arguments. ``device``: where the demonstrator trains
    (``auto``, SB3's own default: CUDA when present, for the SAC demonstrator's 256x256 networks).
    ``seed``: the demonstrator's seed; in ``rlkit apec`` and ``rlkit demos`` the config's own."""

    invalid_error = InvalidDataError

    path: str | None = None
    n_envs: int | None = Field(None, ge=1, description="the demonstrator's envs (default: env.n_envs)")
    algo: Literal["ppo", "sac"] = "sac"
    total_timesteps: int = Field(100_000, ge=1)
    checkpoint_every: int = Field(10_000, ge=1)
    target_fraction: float = Field(0.65, gt=0, le=1)
    fraction_tolerance: float | None = Field(
        None, gt=0, description="each demo's return within target_fraction +/- this of the best "
        "(null: no check)")
    demo_tries: int = Field(10, ge=1, description="draws of n_demos episodes per checkpoint to find them")
    n_demos: int = Field(1, ge=1)
    eval_episodes: int = Field(3, ge=1)
    baseline: Literal["zero", "random"] = Field("zero", description="the return that counts as 0%")
    kwargs: dict[str, Any] = {}
    device: Device = Field("auto", description="where the demonstrator's networks run; auto: CUDA "
                           "when present")
    seed: int = 0

    @model_validator(mode="after")
    def _device_in_one_place(self) -> DemonstratorConfig:
        _sb3_kwargs_leave_device_and_seed("demos", "kwargs", self.kwargs)
        return self


class ApecAILConfig(AILConfig):
    """The AIL stage: the AIL loop (``AILConfig``: ``rounds``, ``steps_per_round``,
    ``agent_buffer``, ``device``, the ``discriminator``) and what its trainer and checkpoints take
    besides: the SB3 ``generator`` (built with ``generator_kwargs``) and a checkpoint every
    ``checkpoint_every`` rounds. Its ``seed`` is set by the pipeline (the config's ``seed``, the
    held-out run's ``heldout.ail_seed``)."""

    generator: Literal["ppo", "sac"] = "ppo"
    generator_kwargs: dict[str, Any] = {}
    checkpoint_every: int = Field(1, ge=1)

    @model_validator(mode="after")
    def _device_in_one_place(self) -> ApecAILConfig:
        _sb3_kwargs_leave_device_and_seed("ail", "generator_kwargs", self.generator_kwargs)
        return self


class HeldOutSettings(StrictModel):
    """Trajectories never trained on, labelled by their true return: random-action episodes,
    rollouts of a SEPARATE AIL run (seed ``ail_seed``, default the run's seed + 1000; never the
    run whose checkpoints made the training pairs) at ``ail_checkpoints`` evenly spaced
    checkpoints, and the demonstrator's checkpoints; ``episodes_per_policy`` each.

    Pairs: with ``segment_length`` None (the default), every pair of whole trajectories whose
    true returns differ (at most ``n_pairs`` of them, None: all); with a ``segment_length``,
    ``n_pairs`` random aligned windows, dropping pairs whose returns tie and windows that are all
    absorbing. The defaults give 150 trajectories (~11,000 pairs), 50 outside the AIL process
    (~1,200 pairs) with a demonstrator of 10 checkpoints."""

    ail_seed: int | None = None
    ail_checkpoints: int = Field(25, ge=1)
    episodes_per_policy: int = Field(4, ge=1)
    random_episodes: int = Field(10, ge=0)
    n_pairs: int | None = Field(None, ge=1)
    segment_length: int | None = Field(None, ge=1)


class RewardSettings(StrictModel):
    """APEC's reward model (apec_mjc/train_pbrl.py:173-190, Parameter.py:123-137,228): state-only
    MLP 2x512, Bradley-Terry on summed trajectory rewards, 100 Adam steps (lr 1e-4, weight decay
    1e-3 as an L2 term: ``torch.optim.Adam``, not AdamW) of 1000-pair batches: with 1000 pairs,
    batch 1000 and no validation split that is 100 full-batch epochs. Its MLP has no activation
    after its first layer (``linear_first``: model/reward.py:125-152, ``PrefRewardModel``; the
    pixel reference's too, apec_dmc/src/reward/pref_reward.py:71-83).

    Pixel tasks get a convolutional net (``encoder``) whose training batches are randomly shifted
    (``trainer.augment``, DrQ's pad 4). The reference's pixel reward model
    (apec_dmc/src/reward/pref_reward.py, train_scripts/train_reward.py, cfgs/config_pbrl.yaml):
    DrQ-v2's encoder, a trunk to 50 features (LayerNorm, tanh), MLP 2x512 with tanh, state only;
    Bradley-Terry on 10-step windows, AdamW lr 1e-4 weight decay 1e-4, batches of 64, 50 epochs
    over its 5,000 pairs, random shift pad 4. ``experiments/configs/apec_pixels*.yaml`` set those."""

    inputs: tuple[str, ...] = ("obs",)
    hidden: tuple[int, ...] = (512, 512)
    linear_first: bool = True
    encoder: Literal["compact", "drq"] = Field(
        "compact", description="a pixel reward model's convolutions (drq: the reference's DrQ-v2 "
        "encoder)")
    mask_absorbing: bool = Field(
        True, description="with env.horizon: every learned reward (the raw AIL one too) is 0 on absorbing "
        "states, so a trajectory's return sums its real steps, as the reference masks them "
        "(apec_mjc/train_pbrl.py:32-42, f_div.py:238); false: the nets learn a value for them")
    trainer: TrainerConfig = TrainerConfig(loss="bt", lr=1e-4, weight_decay=1e-3, batch_size=1000,
                                           max_epochs=100, val_fraction=0.0, patience=None,
                                           optimizer="adam")


class PolicySettings(StrictModel):
    """A policy trained from scratch on each listed method's learned reward (true return
    reported). As the reference (apec_mjc/eval_reward.py:138-173): SAC paid ``r(s')``, its replay
    buffer seeded with ``seed_rollouts`` rollouts of the AIL checkpoints (drawn with replacement,
    replay_buffer.py:281-293), no reward normalisation. The paper trains 1M steps (the reference
    script 3M, eval_reward.py:162). SB3's defaults under the reference's settings
    (``hyperparams: sb3``), never rl-zoo3's, so the comparison stays the reference's.
    ``eval_every``: also evaluate the policy as the final evaluation does (``agent.eval_episodes``
    deterministic episodes, the same env seeds) every this many env steps (rounded to the resume
    points' chunks), for a learning curve of true returns; None: at the end only."""

    methods: list[Method] = ["apec", "drex"]
    reward_on: Literal["obs", "next_obs"] = "next_obs"
    seed_rollouts: int = Field(10, ge=0)
    eval_every: int | None = Field(None, ge=1, description="env steps between deterministic "
                                   "evaluations (null: at the end only)")
    agent: AgentConfig = AgentConfig(algo="sac", total_timesteps=1_000_000, eval_episodes=10,
                                     normalize_reward=False, hyperparams="sb3",
                                     kwargs=REFERENCE_POLICY_SAC)


def _set_by_the_pipeline(config: StrictModel, section: str, sources: dict[str, str]) -> None:
    """Refuse a value in a nested library config for a field the pipeline sets itself: each of
    ``sources`` (field name -> where its value comes from) must hold its field default."""
    fields = type(config).model_fields
    for name, source in sources.items():
        if getattr(config, name) != fields[name].default:
            raise InvalidDataError(f"{section}.{name}={getattr(config, name)!r}: the pipeline sets it "
                                   f"from {source}; leave it out")


class ApecConfig(StrictModel):
    """``rlkit apec``'s stages, each section a stage's config; the defaults are APEC's reference
    preset (``rlkit.apec.presets``' ``REFERENCE_AIL`` and ``REFERENCE_POLICY_SAC``, the other
    sections' own). The
    stages' seeds derive from ``seed``, the D-REX arm's pair budget from ``pairs``: the nested
    library configs' ``seed``, ``drex.n_pairs``, ``drex.segment_length`` and ``drex.frame_stack``
    are set by the pipeline and refused here."""

    env: ApecEnvConfig = ApecEnvConfig()
    demos: DemonstratorConfig = DemonstratorConfig()
    ail: ApecAILConfig = ApecAILConfig(**REFERENCE_AIL)
    rollouts: RolloutConfig = RolloutConfig()
    pairs: PairConfig = PairConfig()
    drex: DrexConfig = DrexConfig()
    reward: RewardSettings = RewardSettings()
    heldout: HeldOutSettings = HeldOutSettings()
    methods: list[Method] = list(METHODS)
    policy: PolicySettings = PolicySettings()
    seed: int = 0

    @property
    def policy_methods(self) -> list[Method]:
        """The arms a policy trains on: ``policy.methods`` that are also ``methods``, in order."""
        return [method for method in self.policy.methods if method in self.methods]

    @property
    def heldout_ail_seed(self) -> int:
        return self.seed + 1000 if self.heldout.ail_seed is None else self.heldout.ail_seed

    @model_validator(mode="after")
    def _separate_heldout_run(self) -> ApecConfig:
        if self.heldout_ail_seed == self.seed:
            raise InvalidDataError(f"heldout.ail_seed must differ from seed ({self.seed}): the "
                                   "held-out AIL run must not be the one that makes the training pairs")
        return self

    @model_validator(mode="after")
    def _pipeline_fields_left_out(self) -> ApecConfig:
        _set_by_the_pipeline(self.demos, "demos", {"seed": "seed"})
        _set_by_the_pipeline(self.ail, "ail", {"seed": "seed (the held-out run: heldout.ail_seed)"})
        _set_by_the_pipeline(self.drex, "drex", {
            "seed": "seed", "n_pairs": "pairs.n_pairs", "segment_length": "pairs.segment_length",
            "frame_stack": "env.frame_stack"})
        return self


class DemosCommandConfig(StrictModel):
    """``rlkit demos``: a demonstrator and suboptimal demos, nothing else."""

    env: ApecEnvConfig = ApecEnvConfig()
    demos: DemonstratorConfig = DemonstratorConfig()
    seed: int = 0

    @model_validator(mode="after")
    def _pipeline_fields_left_out(self) -> DemosCommandConfig:
        _set_by_the_pipeline(self.demos, "demos", {"seed": "seed"})
        return self

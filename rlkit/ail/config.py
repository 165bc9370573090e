"""The AIL loop's configs (``AILConfig``, with its ``DiscriminatorConfig``): pydantic only, so a
command's config (``rlkit apec``'s ``ail`` section) loads, and its ``--help`` shows, without torch.
The trainer (``rlkit.ail.trainer``) and the discriminator (``rlkit.ail.discriminator``) take them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from rlkit.config import StrictModel
from rlkit.devices import Device
from rlkit.errors import InvalidDataError
from rlkit.reward.activations import Activation

LossKind = Literal["gail", "airl", "maxent"]
GailReward = Literal["positive", "logit"]
"""The generator's reward from a GAIL logit (``rlkit.ail.losses.gail_reward``)."""


class DiscriminatorConfig(StrictModel):
    """How the discriminator is built and trained.

    ``reward_clip`` bounds the raw output (APEC's max-ent reward uses 10); ``gamma`` is AIRL's
    shaping discount; ``grad_penalty`` weighs ``losses.gradient_penalty`` (0 = off).
    ``linear_first``: no activation after the nets' first hidden layer (``RewardNetSpec``; APEC's
    reference reward MLPs).
    ``loss_scale`` multiplies the loss: APEC's reference multiplies its max-ent loss by the
    horizon, 1000 (apec_mjc/f_div.py:101-102); under Adam that only changes how strong the
    weight decay is relative to the data (1000 with decay 1e-3 = 1 with decay ~1e-6).
    ``reward_on``: the generator is paid ``r(s)`` (``"obs"``) or ``r(s')`` (``"next_obs"``, as
    APEC's reference SAC, rl_alg/sac.py:479-480; state-only nets only). The discriminator's own
    loss always scores the states ``s`` of expert and agent transitions.

    Image observations (``rlkit.reward.nets.is_image_space``: channel-first frame stacks or
    channel-last frames) get convolutional nets, ``encoder`` picking their convolutions
    (``RewardNetSpec``: ``"compact"``, cheap on a CPU, or ``"drq"``, the DrQ-v2 encoder of APEC's
    pixel reference). ``augment``: DrQ's random shift of the expert and agent images of every
    discriminator step (each transition by its own offset of up to ``shift_pad`` pixels, drawn
    from the trainer's torch RNG; the generator's reward is never augmented). ``"auto"`` shifts
    image discriminators only, ``"shift"`` insists (an error on vector observations), ``"none"``
    turns it off; shifting by default follows the reference's DAC (``augment: True``,
    ``RandomShiftsAug(pad=4)`` on 84 x 84 frames), and ``shift_pad`` None scales its pad to the
    images (``rlkit.reward.augment.default_pad``: 3 on 64 x 64).

    Attributes:
        loss: ``"gail"``, ``"airl"`` or ``"maxent"`` (max-ent IRL).
        state_only: the reward net reads observations only (no actions).
        hidden: the widths of the nets' hidden layers, each >= 1.
        activation: the nets' activation.
        linear_first: no activation after the nets' first hidden layer.
        gamma: AIRL's shaping discount, in [0, 1].
        gail_reward: the generator's reward from a GAIL logit: ``"positive"``
            (``-log(1 - D)``, always > 0) or ``"logit"`` (``log D - log(1 - D)``, for envs with
            early termination).
        reward_clip: bounds the raw output to ``[-reward_clip, reward_clip]``, > 0 (None: no
            bound).
        grad_penalty: the weight of ``losses.gradient_penalty``, >= 0 (0 = off).
        lr: Adam's learning rate, > 0.
        weight_decay: Adam's weight decay, >= 0.
        loss_scale: multiplies the loss, > 0.
        reward_on: the generator is paid ``r(s)`` (``"obs"``) or ``r(s')`` (``"next_obs"``: a
            state-only gail or maxent discriminator only).
        batch_size: expert and agent transitions (each) per discriminator step, >= 1.
        updates_per_round: discriminator steps per round, >= 0.
        encoder: the convolutions of image nets, ``"compact"`` or ``"drq"``.
        augment: the random shift of image batches, ``"auto"``, ``"shift"`` or ``"none"``.
        shift_pad: the largest shift, in pixels, >= 0 (None: scaled to the images).

    Raises:
        InvalidDataError: on a value out of range, or ``reward_on="next_obs"`` without a
            state-only gail or maxent discriminator.
    """

    invalid_error = InvalidDataError

    loss: LossKind = "gail"
    state_only: bool = False
    hidden: tuple[Annotated[int, Field(ge=1)], ...] = (64, 64)
    activation: Activation = "relu"
    linear_first: bool = False
    gamma: float = Field(0.99, ge=0.0, le=1.0)
    gail_reward: GailReward = "positive"
    reward_clip: float | None = Field(None, gt=0)
    grad_penalty: float = Field(0.0, ge=0)
    lr: float = Field(3e-4, gt=0)
    weight_decay: float = Field(0.0, ge=0)
    loss_scale: float = Field(1.0, gt=0)
    reward_on: Literal["obs", "next_obs"] = "obs"
    batch_size: int = Field(256, ge=1)
    updates_per_round: int = Field(1, ge=0)
    encoder: Literal["compact", "drq"] = "compact"
    augment: Literal["auto", "none", "shift"] = "auto"
    shift_pad: int | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _next_state_reward(self) -> DiscriminatorConfig:
        if self.reward_on == "next_obs" and not (self.state_only and self.loss != "airl"):
            raise InvalidDataError("reward_on='next_obs' needs a state-only gail or maxent "
                                   f"discriminator (got loss={self.loss!r}, state_only={self.state_only})")
        return self

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DiscriminatorConfig:
        try:
            return cls(**data)
        except InvalidDataError as error:
            raise InvalidDataError(f"not a discriminator config: {error}") from None


class AILConfig(StrictModel):
    """How adversarial imitation trains (``AILTrainer``): rounds of generator steps, each followed
    by discriminator updates.

    Attributes:
        rounds: the rounds to train, >= 1.
        steps_per_round: the generator's env steps per round, >= 1.
        discriminator: the discriminator's architecture, loss and updates.
        agent_buffer: how many recent agent transitions the discriminator sees, >= 1 (None: one
            round of steps); APEC uses the last 1000 of 5000.
        seed: seeds the discriminator, the generator and the trainer's sampling.
        device: where the discriminator and the generator run (``auto``: CUDA when present).
            ``cpu`` by default: the default discriminator (MLP 64x64) and an MLP PPO generator
            are too small to gain from a GPU; APEC's preset
            (``rlkit.apec.presets.REFERENCE_AIL``) asks for ``auto``.
    """

    invalid_error = InvalidDataError

    rounds: int = Field(ge=1)
    steps_per_round: int = Field(ge=1)
    discriminator: DiscriminatorConfig = DiscriminatorConfig()
    agent_buffer: int | None = Field(None, ge=1)
    seed: int = 0
    device: Device = "cpu"

"""The settings of the training pairs ``rlkit apec``'s arms learn their rewards from.

APEC's: the rollouts of the AIL checkpoints (``RolloutConfig``) and the pairs drawn among them, a
later checkpoint preferred when far enough ahead and closer to the demos in OT distance
(``PairConfig``, ``OT_SCALE``); D-REX's: noise-injected rollouts of a behaviour-cloned policy, the
less noisy preferred (``DrexConfig``, ``NOISE_GRID``). The defaults follow APEC's reference
implementation (github.com/Zzl35/APEC, ``apec_mjc/``; file:line cited at each setting).
``rlkit.apec.config.ApecConfig`` nests them as its ``rollouts``, ``pairs`` and ``drex`` sections.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from rlkit.config import StrictModel
from rlkit.devices import Device
from rlkit.errors import InvalidDataError


class RolloutConfig(StrictModel):
    """The rollouts of the AIL checkpoints that APEC pairs; the defaults are the reference's 10
    rollouts of each of the first 50 checkpoints (apec_mjc/utils/replay_buffer.py:676,683).

    Attributes:
        per_checkpoint: finished episodes from each checkpoint, >= 1.
        max_checkpoints: roll out only the first this many saved checkpoints, >= 2 (None: all).
        deterministic: the policies' deterministic actions; False: sampled ones.
        seed: the base seed, in [0, 2**32) (``policy_rollouts`` reseeds the env with ``seed + k``
            for the k-th policy; a ``checkpoint_tasks`` task seeds from ``(seed, round)``);
            ``rlkit apec`` sets it to the config's seed + 2.
    """

    invalid_error = InvalidDataError

    per_checkpoint: int = Field(10, ge=1)
    max_checkpoints: int | None = Field(50, ge=2, description="roll out only the first this many")
    deterministic: bool = False
    seed: int = 0


OT_SCALE = 1000.0
"""The reference's constant factor on the OT distance (apec_mjc/utils/replay_buffer.py:470)."""


class PairConfig(StrictModel):
    """APEC's pair selection, defaults as the reference runs it (apec_mjc/utils/replay_buffer.py
    915-1049): 1000 pairs, gap 10, whole trajectories, binary labels, OT margin 0.1.

    ``ot_threshold`` is the OT margin in the reference's units: the distance of a rollout to a
    demo is ``mean_i (P C^T)_ii * 1000`` (replay_buffer.py:464,470) over the rollout's real
    (non-absorbing) states, i.e. ``<P, C> * 1000 / n`` for ``n`` states: exactly the transport
    cost ``<P, C>`` for a full 1000-step trajectory, larger for one that terminated early. The
    later rollout is kept when ``d_later <= d_earlier - ot_threshold`` (replay_buffer.py:999);
    None turns the filter off (gap only). Sinkhorn: cosine cost on states + 1e-4, entropic
    regularisation ``ot_reg`` = 0.01, ``ot_iterations`` = 100 (replay_buffer.py:19,441,462-463).

    Pixel tasks: the reference's pixel pipeline (apec_dmc/src/data_scripts/make_pref_dataset.py,
    cfgs/config_data.yaml) computes the same distance on the raw frame stacks, flattened (no
    encoder), and draws 5,000 pairs of checkpoints more than 15 apart (epoch_threshold) among 5
    evenly spaced ones of 50, margin 0.0, windows of 10 steps redrawn every epoch
    (cfgs/config_pbrl.yaml segment_len); here the windows are drawn once, with the pairs.

    Attributes:
        n_pairs: the pairs to select, >= 1.
        gap: a pair's later checkpoint index exceeds the earlier one by more than this, >= 0.
        ot_threshold: the OT margin the later rollout must be closer to the demos by, >= 0
            (None: no OT filter, gap only).
        ot_reg: Sinkhorn's entropic regularisation, > 0.
        ot_iterations: Sinkhorn's iterations, >= 1.
        ot_downsample: pixel frames are averaged over blocks this wide before the OT cost, >= 1
            (1: the raw frames, as the reference; more is cheaper).
        segment_length: steps per window, the same steps of both trajectories, >= 1 (None: the
            whole trajectories, over their common length).
        labels: ``"binary"`` (the later checkpoint preferred outright) or ``"gap"`` (the index
            gap mapped onto ``scale``'s levels above 0.5: the larger the gap, the stronger).
        scale: the ``OrdinalScale`` name ``labels="gap"`` uses (``"ternary"``, ``"five"``, ...).
        max_draws: rejection sampling stops after ``max_draws * n_pairs`` candidate pairs, >= 1.
    """

    invalid_error = InvalidDataError

    n_pairs: int = Field(1000, ge=1)
    gap: int = Field(10, ge=0)
    ot_threshold: float | None = Field(0.1, ge=0)
    ot_reg: float = Field(0.01, gt=0)
    ot_iterations: int = Field(100, ge=1)
    ot_downsample: int = Field(1, ge=1, description="average pixel observations over blocks this "
                               "wide before the OT cost (1: the raw frames, the reference's choice)")
    segment_length: int | None = Field(None, ge=1)
    labels: Literal["binary", "gap"] = "binary"
    scale: str = "five"
    max_draws: int = Field(100, ge=1)


NOISE_GRID: tuple[float, ...] = tuple(round(0.05 * k, 2) for k in range(20))  # 0.0 .. 0.95


class DrexConfig(StrictModel):
    """The paper's D-REX: eps in 0..0.95 step 0.05, 5 rollouts per level, noise gap >= 0.5, as
    APEC's reference (``apec_mjc/epsilon_noise_sample.py:139-141``, ``utils/replay_buffer.py:576``);
    the less noisy trajectory preferred, as the D-REX paper and ``replay_buffer.py:641`` (the
    released code then stores the noise levels as the label, lines 651-653, which its loss reads
    as the noisier one preferred: not copied). The behaviour cloning is rlkit's (MSE; the
    reference's differs, with no measurable gain: ``experiments/apec_drex_bc_check.py``).

    Pixel observations (uint8 channel-first frame stacks) go through a convolutional encoder
    first, as the reference's BC agent (apec_dmc/src/agent/bc.py: DrQ-v2's encoder, a trunk to
    ``feature_dim`` with LayerNorm and tanh, random-shift augmentation): 3x3 convolutions of
    ``conv_channels`` (the first with stride 2), then the trunk, then the ``hidden`` MLP;
    minibatches shifted by up to ``augment_pad`` pixels (``rlkit.reward.augment.random_shift``).

    In ``rlkit apec`` the pipeline sets ``n_pairs`` and ``segment_length`` (``pairs``'), ``seed``
    (the config's) and ``frame_stack`` (``env``'s): the D-REX arm gets the other arms' budget.

    Attributes:
        noise_levels: the eps of each level, each in [0, 1]: every step of a rollout is a random
            action with probability eps.
        rollouts_per_level: finished episodes at each noise level, >= 1.
        min_gap: a pair's noise levels differ by at least this, > 0.
        n_pairs: the pairs to select, >= 1.
        segment_length: steps per window, the same steps of both trajectories, >= 1 (None: the
            whole trajectories, over their common length).
        hidden: the widths of the behaviour-cloning MLP's hidden layers.
        bc_epochs: passes of behaviour cloning over the demos' (state, action) samples, >= 1.
        bc_lr: behaviour cloning's Adam learning rate.
        bc_batch_size: samples per behaviour-cloning minibatch, >= 1.
        seed: seeds the policy's initial weights, its minibatch order and shifts, and the noisy
            rollouts (the env reseeded with ``seed + k`` for the k-th level); in [0, 2**32).
        max_draws: rejection sampling stops after ``max_draws * n_pairs`` candidate pairs, >= 1.
        device: where the behaviour-cloning policy trains and acts (``cpu``: a 64x64 MLP is too
            small for a GPU to pay).
        conv_channels: the widths of the pixel encoder's convolutions.
        feature_dim: the pixel encoder's output features, >= 1.
        augment_pad: the largest shift of pixel minibatches, in pixels, >= 0 (0: none).
        frame_stack: frames per observation, for the noisy rollouts' store, >= 1 (1: vector
            tasks).

    Raises:
        InvalidDataError: on a value out of range, or ``noise_levels`` empty or outside [0, 1].
    """

    invalid_error = InvalidDataError

    noise_levels: tuple[float, ...] = NOISE_GRID
    rollouts_per_level: int = Field(5, ge=1)
    min_gap: float = Field(0.5, gt=0)
    n_pairs: int = Field(1000, ge=1)
    segment_length: int | None = Field(None, ge=1)
    hidden: tuple[int, ...] = (64, 64)
    bc_epochs: int = Field(200, ge=1)
    bc_lr: float = 1e-3
    bc_batch_size: int = Field(256, ge=1)
    seed: int = 0
    max_draws: int = Field(100, ge=1)
    device: Device = "cpu"
    conv_channels: tuple[int, ...] = (32, 32)
    feature_dim: int = Field(50, ge=1)
    augment_pad: int = Field(4, ge=0)
    frame_stack: int = Field(1, ge=1)

    @field_validator("noise_levels")
    @classmethod
    def _levels(cls, value: tuple[float, ...]) -> tuple[float, ...]:
        if not value or not all(0.0 <= e <= 1.0 for e in value):
            raise InvalidDataError(f"noise_levels must be non-empty, in [0, 1]: {value}")
        return value

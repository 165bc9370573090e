"""How a reward model is fitted (``TrainerConfig``): the ``trainer`` section of the commands'
configs and the argument of ``RewardTrainer``. Pydantic only, so configs load without torch."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, model_validator

from rlkit.config import StrictModel
from rlkit.devices import Device
from rlkit.errors import ConfigError

Loss = Literal["ordinal", "bt", "rao_kupper", "hinge"]


class TrainerConfig(StrictModel):
    """How a reward model is fitted: loss, optimiser, epochs, validation and refits.

    A first ``fit``, or one on data that does not extend the last, trains up to ``max_epochs``
    passes over the training pairs; validation after every pass keeps the best weights and
    ``patience`` stops early. A ``fit`` that follows another on the same, grown data (the dataset
    extends the one fitted last: same store, the old pairs first, new ones after; online
    preference RL) trains as ``refit`` says. A trainer rebuilt around restored weights and
    optimizer state (a resumed run) learns which labels its weights were fitted on from
    ``RewardTrainer.mark_fitted``.

    The fields after ``patience`` are written to a resolved config file only when they differ from
    their defaults; ``seed`` is the command's own.

    Attributes:
        loss: the preference loss (``rlkit.reward.losses.make_loss``): ``"ordinal"`` (soft-label
            cross entropy, any labels in [0, 1]), ``"bt"`` (binary Bradley-Terry, labels 0 or 1),
            ``"rao_kupper"`` (Bradley-Terry with ties, labels 0, 0.5 or 1) or ``"hinge"``.
        lr: the optimiser's learning rate, > 0.
        weight_decay: the optimiser's weight decay, >= 0 (see ``optimizer``).
        batch_size: labelled pairs per gradient step, >= 1.
        max_epochs: the most passes over the training pairs in one ``fit``, >= 1.
        val_fraction: the share of labelled pairs held out for validation, in [0, 1); 0 keeps
            the last epoch's weights.
        patience: epochs without a better validation loss before stopping (None: never stop
            early).
        hinge_margin: the margin m of ``"hinge"`` (a wanted return gap of m/2 per side), finite
            and >= 0.
        rao_kupper_theta: θ of ``"rao_kupper"``, finite and > 1 (larger: more probability on
            ties around a return gap of 0).
        discount: step t of a segment weighs ``discount**t`` in its return, in (0, 1].
        bootstrap: resample each ensemble member's training pairs with replacement.
        seed: seeds the fit's RNG (split, bootstrap, shuffles) when ``fit`` is given none.
        device: where the model trains and its gathered pairs live (``rlkit.devices``).
        memory_budget_bytes: cap on pre-gathered tensors, in bytes; past it, pairs are gathered
            per batch (0: always per batch, the least memory; the same fit, measured identical on
            held-out metrics).
        eval_batch_size: held-out pairs per validation chunk, >= 1 (bounds the memory gathered
            at once).
        refit: how much a ``fit`` on grown data trains. ``"epochs"``: up to ``max_epochs``
            passes over every label again. ``"steps"``: a budget tied to the labels added since
            the last fit, ``ceil(new_labels * refit_epochs / batch_size)`` gradient steps per
            member (at least one), drawn from all labels (shuffled passes, the last one cut
            short), starting from the weights and optimizer state the last fit left (warm
            start), as PEBBLE and imitation refit.
        refit_epochs: passes' worth of the new labels a ``"steps"`` refit spends (None:
            ``max_epochs``, so each label gets the training it would have had in a first fit).
        batch_members: train the members of an ensemble of one architecture as one batched
            model (one forward/backward for all); False runs them one after another (same
            result, slower).
        augment: DrQ's random shift (``rlkit.reward.augment``) of the image observations of
            every training batch, each step by its own offset of up to ``shift_pad`` pixels,
            drawn from the fit's RNG; validation, evaluation and rewards are never augmented.
            ``"auto"`` shifts for nets with an image encoder (kind ``cnn`` reading ``obs`` or
            ``next_obs``) and leaves the rest alone, following APEC's pixel reference
            (``RandomShiftsAug(pad=4)`` on 84 x 84 frames); ``"shift"`` insists (an error for a
            net without images); ``"none"`` turns it off.
        shift_pad: the largest shift, in pixels (None: the reference's pad scaled to the images,
            ``augment.default_pad``: 3 on 64 x 64, 1 on 16 x 16, 0 on tiny test frames).
        precision: ``"bfloat16"`` runs the nets' forward passes in training and validation
            under ``torch.autocast`` to bfloat16 (matrix products in bfloat16, accumulated in
            float32; weights, optimizer state, returns and the loss stay float32, and so do the
            rewards of the trained net): ~2.7x per full-batch step of APEC's 2x512 reward on
            1000-step rollouts on a CPU with AMX (``benchmarks/reward_precision.py``), but ~15x
            slower on a CPU without native bfloat16 products (AVX2 only: autocast emulates
            them). ``"auto"``: bfloat16 where the device has them
            (``rlkit.devices.native_bfloat16``: AMX or AVX512-BF16, or a CUDA GPU that supports
            it), else float32. ``"float32"``: no autocast.
        optimizer: ``"adamw"`` (decoupled weight decay) or ``"adam"`` (weight decay as an L2
            term in the gradient, as ``torch.optim.Adam`` applies it; APEC's vector reference,
            apec_mjc/train_pbrl.py:179).
    """

    loss: Loss = "ordinal"
    lr: float = Field(1e-3, gt=0)
    weight_decay: float = Field(1e-4, ge=0)
    batch_size: int = Field(64, ge=1)
    max_epochs: int = Field(100, ge=1)
    val_fraction: float = Field(0.1, ge=0, lt=1)
    patience: int | None = Field(10, ge=1)
    hinge_margin: float = 2.0
    rao_kupper_theta: float = 2.0
    discount: float = Field(1.0, gt=0, le=1)
    bootstrap: bool = False
    seed: int = 0
    device: Device = "cpu"
    memory_budget_bytes: int = Field(2**30, ge=0)
    eval_batch_size: int = Field(256, ge=1)
    refit: Literal["epochs", "steps"] = "epochs"
    refit_epochs: float | None = Field(None, gt=0)
    batch_members: bool = True
    augment: Literal["auto", "none", "shift"] = "auto"
    shift_pad: int | None = Field(None, ge=0)
    precision: Literal["float32", "bfloat16", "auto"] = "float32"
    optimizer: Literal["adamw", "adam"] = "adamw"

    @model_validator(mode="after")
    def _loss_parameters(self) -> TrainerConfig:
        """The same checks as ``rlkit.reward.losses.make_loss``, without importing torch."""
        if self.loss == "rao_kupper" and not (math.isfinite(self.rao_kupper_theta)
                                              and self.rao_kupper_theta > 1.0):
            raise ConfigError(f"rao_kupper_ties needs a finite theta > 1, got theta={self.rao_kupper_theta}")
        if self.loss == "hinge" and not (math.isfinite(self.hinge_margin) and self.hinge_margin >= 0.0):
            raise ConfigError(f"hinge needs a finite margin >= 0, got margin={self.hinge_margin}")
        return self

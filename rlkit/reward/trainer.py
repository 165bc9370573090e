"""Fit a reward net or ensemble to preference labels, fast: pairs are gathered into tensors once and
every step is one forward over the left and right segments of a batch together."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import torch

from rlkit.data import SegmentPairs
from rlkit.devices import native_bfloat16, resolve_device
from rlkit.errors import InvalidDataError, InvalidLabelError
from rlkit.reward.augment import default_pad, shift_observations
from rlkit.reward.config import TrainerConfig
from rlkit.reward.ensemble import RewardEnsemble
from rlkit.reward.losses import make_loss
from rlkit.reward.metrics import evaluate_reward, preference_accuracy
from rlkit.reward.nets import RewardNet, RewardNetSpec
from rlkit.reward.pair_tensors import ARRAY_OF_INPUT, Distinct, PairTensors


@dataclass(frozen=True)
class TrainReport:
    """What one ``RewardTrainer.fit`` did: per-epoch curves and the weights it kept.

    An epoch is a pass over the training pairs; a ``steps`` refit's last one may stop short.

    Attributes:
        train_loss: the mean training loss of each epoch.
        val_loss: the mean member loss on the held-out pairs after each epoch (empty when none
            are held out).
        val_accuracy: the accuracy of the model's (ensemble mean's) reward on the held-out
            pairs after each epoch, in [0, 1].
        best_epoch: the epoch (0-based) whose weights the model holds after ``fit``: the lowest
            validation loss, the last epoch when none are held out.
        stopped_early: ``patience`` epochs passed without a better validation loss.
        n_train: the labelled pairs trained on.
        n_val: the labelled pairs held out.
        seconds: the wall time of the whole ``fit``.
        pairs_per_s: training pairs passed (counted once for all members) per second of
            ``seconds``.
        steps: gradient steps (each serves every member).
        new_labels: the labelled pairs the trainer had not fitted on before.
        val_rows: the held-out pairs' indices in what ``fit`` was given, to evaluate on them
            later.
    """

    train_loss: tuple[float, ...]
    val_loss: tuple[float, ...]
    val_accuracy: tuple[float, ...]
    best_epoch: int
    stopped_early: bool
    n_train: int
    n_val: int
    seconds: float
    pairs_per_s: float
    steps: int
    new_labels: int
    val_rows: np.ndarray = field(compare=False, repr=False)

    @property
    def epochs(self) -> int:
        return len(self.train_loss)


class RewardTrainer:
    """Trains one ``RewardNet`` or a ``RewardEnsemble`` (each member on its own shuffle of the data,
    all members in one optimizer step; members of one MLP architecture as one batched model). The
    optimizer and the gathered pairs persist, so ``fit`` on a grown dataset continues training
    (``config.refit`` says for how long) and gathers only the pairs it has not seen.

    Pairs may share segments (APEC compares ~500 rollouts in 1000 pairs): a training or
    validation batch whose distinct segments (same trajectory, start and length) number at most
    ``dedup_below`` times its 2b segments runs the nets once per distinct segment and gathers
    the returns back to the pairs (same loss and gradients up to float rounding); other batches
    (random segments: a minibatch of random pairs) run over both segments of every pair as
    before. With an ensemble trained as one batched model each member's block is deduplicated on
    its own. Augmented training batches (``augment``) are never deduplicated: every pair's
    segment is shifted by its own random offsets, as without deduplication.

    Args:
        model: the net or ensemble to train; moved to ``config.device``.
        config: how to train (None: ``TrainerConfig()``'s defaults).
    """

    dedup_below = 0.75  # the largest share of distinct segments in a batch that is deduplicated

    def __init__(self, model: RewardNet | RewardEnsemble, config: TrainerConfig | None = None):
        self.config = config or TrainerConfig()
        self.model = model.to(resolve_device(self.config.device))
        self.members = list(model.members) if isinstance(model, RewardEnsemble) else [model]
        self.batched = (isinstance(model, RewardEnsemble) and model.batched
                        and self.config.batch_members and len(self.members) > 1)
        self.loss_fn = make_loss(self.config.loss, self.config.hinge_margin,
                                 self.config.rao_kupper_theta)
        optimizer = torch.optim.AdamW if self.config.optimizer == "adamw" else torch.optim.Adam
        self.optimizer = optimizer(self.model.parameters(), lr=self.config.lr,
                                   weight_decay=self.config.weight_decay)
        device = next(self.model.parameters()).device
        self._bfloat16 = self.config.precision == "bfloat16" or (
            self.config.precision == "auto" and native_bfloat16(device))
        self._data: PairTensors | None = None  # the last fit's pairs, for the next one
        self.shift_pad = _shift_pad(self.config, self.model.spec)  # None: no augmentation
        self._shifts: torch.Generator | None = None  # the fit's augmentation RNG

    def fit(self, dataset_or_pairs: Any, labels: np.ndarray | None = None,
            rng: np.random.Generator | None = None) -> TrainReport:
        """Train on a ``PreferenceDataset`` or on ``(pairs, labels)``; NaN labels are skipped.
        ``rng`` (default: from ``config.seed``) drives the split, bootstrap and shuffles."""
        started = time.perf_counter()
        config = self.config
        rng = rng if rng is not None else np.random.default_rng(config.seed)
        if self.shift_pad is not None:  # drawn only when augmenting: other fits see the RNG as before
            self._shifts = torch.Generator().manual_seed(int(rng.integers(2**63)))
        pairs, labels = _pairs_and_labels(dataset_or_pairs, labels)
        kept = _labelled_rows(labels, len(pairs))
        device = next(self.model.parameters()).device
        z = torch.as_tensor(labels[kept], dtype=torch.float32, device=device)
        self.loss_fn(torch.zeros_like(z), z)  # rejects labels off this loss's scale before training
        data = PairTensors(pairs, kept, z, self.model.spec.inputs, self.model, config.discount,
                            config.memory_budget_bytes, self._data)
        refit = self._data is not None and data.new_labels < len(kept)  # on data it fitted before
        self._data = data
        order = rng.permutation(len(kept))
        n_val = int(config.val_fraction * len(kept))
        val_rows, train_rows = np.sort(order[:n_val]), order[n_val:]
        if len(train_rows) == 0:
            raise InvalidDataError(f"no pairs left to train on: {len(kept)} labelled, all {n_val} "
                                   f"held out by val_fraction={config.val_fraction}")
        member_rows = [rng.choice(train_rows, len(train_rows)) if config.bootstrap else train_rows
                       for _ in self.members]
        steps_per_pass = math.ceil(len(train_rows) / config.batch_size)
        budget = config.max_epochs * steps_per_pass
        if refit and config.refit == "steps":
            passes = config.refit_epochs or config.max_epochs
            budget = max(1, math.ceil(data.new_labels * passes / config.batch_size))
        train_loss: list[float] = []
        val_loss: list[float] = []
        val_accuracy: list[float] = []
        best_epoch, best_state, stopped_early, steps, pairs_seen = 0, None, False, 0, 0
        for epoch in range(math.ceil(budget / steps_per_pass)):
            cut = min(steps_per_pass, budget - steps) * config.batch_size  # the last pass may stop short
            orders = [rng.permutation(rows)[:cut] for rows in member_rows]
            train_loss.append(self._train_epoch(data, orders))
            steps += math.ceil(len(orders[0]) / config.batch_size)
            pairs_seen += len(orders[0])
            if n_val == 0:
                best_epoch = epoch
                continue
            loss, accuracy = self._validate(data, val_rows)
            val_loss.append(loss)
            val_accuracy.append(accuracy)
            if best_state is None or loss < val_loss[best_epoch]:
                best_epoch = epoch
                best_state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
            elif config.patience is not None and epoch - best_epoch >= config.patience:
                stopped_early = True
                break
        if best_state is not None:
            self.model.load_state_dict(best_state)
        seconds = time.perf_counter() - started
        return TrainReport(
            tuple(train_loss), tuple(val_loss), tuple(val_accuracy), best_epoch, stopped_early,
            len(train_rows), n_val, seconds, pairs_seen / seconds, steps, data.new_labels,
            kept[val_rows],
        )

    def mark_fitted(self, dataset_or_pairs: Any, labels: np.ndarray | None = None) -> None:
        """Record the labelled pairs as fitted on, without training. A trainer rebuilt around
        restored weights and optimizer state (a resumed run) then refits as the one that fitted
        them would: a ``steps`` refit counts only the labels added after these. With no label
        (e.g. a run resumed before its first fit) the trainer has fitted on nothing.

        Args:
            dataset_or_pairs: a ``PreferenceDataset``, or ``SegmentPairs`` with ``labels``.
            labels: the pairs' labels (NaN: skipped, not fitted on).
        """
        pairs, labels = _pairs_and_labels(dataset_or_pairs, labels)
        if not np.isfinite(labels).any():
            self._data = None
            return
        kept = _labelled_rows(labels, len(pairs))
        z = torch.as_tensor(labels[kept], dtype=torch.float32)
        # a budget of 0 bytes: the rows are remembered, their steps gathered by the next fit
        self._data = PairTensors(pairs, kept, z, self.model.spec.inputs, self.model,
                                  self.config.discount, 0)

    def evaluate(self, dataset_or_pairs: Any, labels: np.ndarray | None = None,
                 oracle_p: np.ndarray | None = None) -> dict[str, float]:
        """``metrics.evaluate_reward`` of the model on a dataset or on ``(pairs, labels)``."""
        if labels is None:
            oracle_p = dataset_or_pairs.meta.get("oracle_p")
        pairs, labels = _pairs_and_labels(dataset_or_pairs, labels)
        return evaluate_reward(self.model, pairs, labels, oracle_p)

    def _segment_delta(self, member: torch.nn.Module, batch: dict[str, torch.Tensor]
                       ) -> torch.Tensor:
        """R(left) - R(right) from one forward over both sides: ``(b, 2, L)`` rewards."""
        return _returns_delta(member(*(batch.get(name) for name in ARRAY_OF_INPUT)), batch)

    def _member_deltas(self, batch: dict[str, torch.Tensor], per_member: bool) -> torch.Tensor:
        """Every member's R(left) - R(right) in one batched forward: ``(K, b)``. ``per_member``:
        the batch holds K consecutive blocks, member k's own pairs in block k."""
        k = len(self.members)
        inputs = [batch.get(name) for name in ARRAY_OF_INPUT]
        if per_member:
            inputs = [None if x is None else x.reshape(k, -1, *x.shape[1:]) for x in inputs]
            weights = batch.get("weights")
            batch = {} if weights is None else {"weights": weights.reshape(k, -1, *weights.shape[1:])}
        model = cast(RewardEnsemble, self.model)  # self.batched holds only for ensembles
        return _returns_delta(model.member_rewards(*inputs, per_member=per_member), batch)

    def _train_epoch(self, data: PairTensors, orders: list[np.ndarray]) -> float:
        """One pass; each member steps through its own order. Returns the mean member loss."""
        self.model.train()
        batch_size, k = self.config.batch_size, len(self.members)
        step_losses = []
        for start in range(0, len(orders[0]), batch_size):
            with self._precision():
                loss = self._batch_loss(data, orders, start)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            step_losses.append(loss.detach())
        return float(torch.stack(step_losses).mean()) / k

    def _batch_loss(self, data: PairTensors, orders: list[np.ndarray], start: int) -> torch.Tensor:
        """The loss of the training batch at ``start`` of each member's order: the sum of the
        members' mean losses, as each is trained on its own."""
        batch_size, k = self.config.batch_size, len(self.members)
        if not self.batched:
            losses = [self._member_loss(member, data, order[start:start + batch_size])
                      for member, order in zip(self.members, orders, strict=True)]
            return losses[0] if len(losses) == 1 else torch.stack(losses).sum()
        # all members' batches in one gather and one forward
        positions = np.concatenate([o[start:start + batch_size] for o in orders])
        distinct = self._distinct(data, positions.reshape(k, -1), training=True)
        if distinct is not None:  # member k's distinct segments in block k
            deltas = self._distinct_deltas(data, distinct, self._own_blocks)
            z = data.labels(positions)
        else:
            batch = self._augment(data.batch(positions))
            deltas, z = self._member_deltas(batch, per_member=True), batch["z"]
        return self.loss_fn(deltas, z.reshape(k, -1)) * k

    def _precision(self) -> contextlib.AbstractContextManager[Any]:
        """The nets' forward passes in training and validation: under ``torch.autocast`` to
        bfloat16 when ``config.precision`` asks (entered per step, so each step casts the current
        weights), else as they are."""
        if not self._bfloat16:
            return contextlib.nullcontext()
        return torch.autocast(next(self.model.parameters()).device.type, dtype=torch.bfloat16)

    def _member_loss(self, member: torch.nn.Module, data: PairTensors, positions: np.ndarray
                     ) -> torch.Tensor:
        """One member's loss on the pairs ``positions`` (a training batch)."""
        distinct = self._distinct(data, positions[None], training=True)
        if distinct is None:
            batch = self._augment(data.batch(positions))
            return self.loss_fn(self._segment_delta(member, batch), batch["z"])
        deltas = self._distinct_deltas(data, distinct, lambda x: member(*x))
        return self.loss_fn(deltas[0], data.labels(positions))

    def _distinct(self, data: PairTensors, blocks: np.ndarray, training: bool
                  ) -> Distinct | None:
        """The distinct segments of each block of pairs (``(K, b)`` positions), when running the
        nets once per distinct segment saves enough (``dedup_below``), else None. Never for an
        augmented training batch: each pair's segment gets its own random shift there."""
        if training and self.shift_pad is not None:
            return None
        distinct = Distinct.of(data.pair_segments[blocks])
        return distinct if distinct.segments.size <= self.dedup_below * 2 * blocks.size else None

    def _distinct_deltas(self, data: PairTensors, distinct: Distinct,
                         rewards_of: Callable[[list[torch.Tensor | None]], torch.Tensor]
                         ) -> torch.Tensor:
        """R(left) - R(right) of the pairs of ``distinct``'s K blocks, ``(K', b)``, from one
        forward over each block's U distinct segments: ``rewards_of`` maps the inputs
        ``(K, U, L, ...)`` to step rewards ``(K', U, L)``, K' = K (member k reads block k) or,
        for one block (K = 1), the members that all read it."""
        blocks = distinct.segments.shape
        batch = data.segment_batch(distinct.segments.reshape(-1))
        inputs = [None if (x := batch.get(name)) is None else x.reshape(*blocks, *x.shape[1:])
                  for name in ARRAY_OF_INPUT]
        rewards = rewards_of(inputs).float()  # (K', U, L); summed in float32 under autocast too
        if "weights" in batch:
            rewards = rewards * batch["weights"].reshape(*blocks, -1)
        returns = rewards.sum(dim=-1)  # (K', U)
        index = torch.from_numpy(distinct.index.reshape(blocks[0], -1)).to(returns.device)
        pair_returns = returns.gather(1, index.expand(len(returns), -1))
        pair_returns = pair_returns.reshape(len(returns), -1, 2)
        return pair_returns[..., 0] - pair_returns[..., 1]

    def _augment(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """A training batch with its images shifted when augmenting (else as it is)."""
        if self.shift_pad is None:
            return batch
        return shift_observations(batch, self.shift_pad, self._shifts,
                                  self.model.spec.channels_first)

    def _validate(self, data: PairTensors, positions: np.ndarray) -> tuple[float, float]:
        """Mean member loss and the accuracy of the ensemble mean on held-out pairs."""
        self.model.train(False)  # evaluation mode (no dropout/batch-norm updates)
        size = self.config.eval_batch_size
        member_deltas, labels = [], []
        with torch.no_grad(), self._precision():
            for start in range(0, len(positions), size):  # chunks bound the gathered memory
                chunk_positions = positions[start:start + size]
                distinct = self._distinct(data, chunk_positions[None], training=False)
                if distinct is not None:  # every member on the chunk's distinct segments
                    member_deltas.append(self._distinct_deltas(data, distinct, self._all_members))
                    labels.append(data.labels(chunk_positions))
                    continue
                chunk = data.batch(chunk_positions)
                member_deltas.append(
                    self._member_deltas(chunk, per_member=False) if self.batched else
                    torch.stack([self._segment_delta(member, chunk) for member in self.members])
                )
                labels.append(chunk["z"])
            deltas, z_val = torch.cat(member_deltas, dim=1), torch.cat(labels)
            loss = float(np.mean([float(self.loss_fn(delta, z_val)) for delta in deltas]))
        accuracy = preference_accuracy(deltas.mean(0).cpu().numpy(), z_val.cpu().numpy())
        return loss, accuracy

    def _own_blocks(self, inputs: list[torch.Tensor | None]) -> torch.Tensor:
        """Every member's step rewards ``(K, U, L)`` on its own block of inputs ``(K, U, L, ...)``
        (a batched ensemble)."""
        return cast(RewardEnsemble, self.model).member_rewards(*inputs, per_member=True)

    def _all_members(self, inputs: list[torch.Tensor | None]) -> torch.Tensor:
        """Every member's step rewards ``(K, U, L)`` on one block of inputs ``(1, U, L, ...)``."""
        if self.batched:
            return cast(RewardEnsemble, self.model).member_rewards(*inputs)[:, 0]
        return torch.stack([member(*inputs)[0] for member in self.members])


def _shift_pad(config: TrainerConfig, spec: RewardNetSpec) -> int | None:
    """The pad training batches are shifted by, None when they are not (see TrainerConfig)."""
    images = spec.kind == "cnn" and bool({"obs", "next_obs"} & set(spec.inputs))
    if config.augment == "shift" and not images:
        raise InvalidDataError(
            f"augment='shift' needs a CNN reward net reading obs or next_obs; this one is kind "
            f"{spec.kind!r} reading {spec.inputs}"
        )
    if not images or config.augment == "none":
        return None
    pad = config.shift_pad if config.shift_pad is not None else default_pad(*spec.image_size)
    return pad or None  # a zero shift changes nothing


def _returns_delta(rewards: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """R(left) - R(right) of ``(..., 2, L)`` step rewards, weighted by ``batch["weights"]`` when
    the segments are padded or discounted; summed in float32 (the rewards may be bfloat16)."""
    rewards = rewards.float()
    if "weights" in batch:
        rewards = rewards * batch["weights"]
    returns = rewards.sum(dim=-1)
    return returns[..., 0] - returns[..., 1]


def _pairs_and_labels(dataset_or_pairs: Any, labels: np.ndarray | None
                      ) -> tuple[SegmentPairs, np.ndarray]:
    if labels is not None:
        return dataset_or_pairs, np.asarray(labels, dtype=np.float64)
    if isinstance(dataset_or_pairs, SegmentPairs):
        raise InvalidLabelError("labels is missing: fit(pairs, labels) or fit(dataset)")
    return dataset_or_pairs.pairs, np.asarray(dataset_or_pairs.labels, dtype=np.float64)


def _labelled_rows(labels: np.ndarray, n_pairs: int) -> np.ndarray:
    """Rows with a label; fails on an empty dataset, misshapen or out-of-range labels."""
    if n_pairs == 0:
        raise InvalidDataError("the dataset is empty (0 pairs)")
    if labels.shape != (n_pairs,):
        raise InvalidLabelError(f"labels must have shape ({n_pairs},), one per pair, "
                                f"got {labels.shape}")
    outside = ~np.isnan(labels) & ~((labels >= 0) & (labels <= 1))
    if outside.any():
        i = int(np.flatnonzero(outside)[0])
        raise InvalidLabelError(f"labels[{i}] = {labels[i]} is outside [0, 1]")
    kept = np.flatnonzero(~np.isnan(labels))
    if len(kept) == 0:
        raise InvalidLabelError(f"all {n_pairs} labels are NaN (skipped): nothing to train on")
    return kept

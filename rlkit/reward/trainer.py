"""Fit a reward net or ensemble to preference labels, fast: pairs are gathered into tensors once and
every step is one forward over the left and right segments of a batch together."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from rlkit.data import SegmentPairs, gather
from rlkit.errors import InvalidDataError, InvalidLabelError
from rlkit.reward.config import TrainerConfig
from rlkit.reward.ensemble import RewardEnsemble
from rlkit.reward.losses import make_loss
from rlkit.reward.metrics import evaluate_reward, preference_accuracy
from rlkit.reward.nets import RewardNet, numpy_to_tensors

_ARRAY_OF_INPUT = {"obs": "obs", "act": "acts", "next_obs": "next_obs", "done": "dones"}


@dataclass(frozen=True)
class TrainReport:
    """Per-epoch curves and what was kept: ``best_epoch`` (0-based) is the epoch whose weights the
    model holds after ``fit``; ``pairs_per_s`` counts training pairs over the whole ``fit`` time;
    ``val_rows`` index the held-out pairs in what ``fit`` was given, to evaluate on them later."""

    train_loss: tuple[float, ...]
    val_loss: tuple[float, ...]
    val_accuracy: tuple[float, ...]
    best_epoch: int
    stopped_early: bool
    n_train: int
    n_val: int
    seconds: float
    pairs_per_s: float
    val_rows: np.ndarray = field(compare=False, repr=False)

    @property
    def epochs(self) -> int:
        return len(self.train_loss)


class _PairTensors:
    """The labelled pairs ``rows`` of ``pairs`` as tensors shaped ``(n, 2, L, ...)`` (left, right),
    their labels ``z`` and, unless every segment is full-length and undiscounted, per-step return
    ``weights`` (mask times discount**t). Resident when they fit the memory budget, else gathered
    batch by batch. ``batch`` takes positions in ``rows``."""

    def __init__(self, pairs: SegmentPairs, rows: np.ndarray, z: torch.Tensor,
                 inputs: tuple[str, ...], model: torch.nn.Module, discount: float,
                 budget_bytes: int) -> None:
        self.pairs, self.rows, self.z, self.inputs = pairs, rows, z, inputs
        self.model, self.discount = model, discount
        lengths = pairs.left[rows, 2]
        self.length = int(lengths.max())
        self.weighted = discount != 1.0 or bool((lengths != self.length).any())
        bytes_per_pair = sum(array.nbytes for array in self._gather_numpy(np.arange(1)).values())
        self.resident = bytes_per_pair * len(rows) <= budget_bytes
        if self.resident:
            self.tensors = self._to_tensors(self._gather_numpy(np.arange(len(rows))))

    def batch(self, positions: np.ndarray) -> dict[str, torch.Tensor]:
        index = torch.from_numpy(positions).to(self.z.device)
        if self.resident:
            tensors = {name: tensor[index] for name, tensor in self.tensors.items()}
        else:
            tensors = self._to_tensors(self._gather_numpy(positions))
        tensors["z"] = self.z[index]
        return tensors

    def _gather_numpy(self, positions: np.ndarray) -> dict[str, np.ndarray]:
        rows = self.rows[positions]
        # one gather over (left 0, right 0, left 1, ...): (2n, L, ...) reshapes to (n, 2, L, ...)
        interleaved = np.stack([self.pairs.left[rows], self.pairs.right[rows]], axis=1)
        steps = gather(self.pairs.store, interleaved.reshape(-1, 3))
        arrays = {}
        for name in self.inputs:
            array_name = _ARRAY_OF_INPUT[name]
            array = _pad(getattr(steps, array_name), self.length)
            array = array.reshape(len(rows), 2, *array.shape[1:])
            if np.issubdtype(array.dtype, np.floating) and not np.isfinite(array).all():
                bad = int(np.flatnonzero(~np.isfinite(array.reshape(len(array), -1)).all(1))[0])
                raise InvalidDataError(f"{array_name} holds NaN or inf (pair {int(rows[bad])})")
            arrays[name] = array
        if self.weighted:
            mask = _pad(steps.mask, self.length).reshape(len(rows), 2, self.length)
            arrays["weights"] = (mask * self.discount ** np.arange(self.length)).astype(np.float32)
        return arrays

    def _to_tensors(self, arrays: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
        return dict(zip(arrays, numpy_to_tensors(self.model, *arrays.values()), strict=True))


def _pad(array: np.ndarray, length: int) -> np.ndarray:
    """Zero-pad the step axis (1) to ``length``, so per-batch gathers match the whole dataset."""
    missing = length - array.shape[1]
    if missing == 0:
        return array
    widths = [(0, 0)] * array.ndim
    widths[1] = (0, missing)
    return np.pad(array, widths)


class RewardTrainer:
    """Trains one ``RewardNet`` or a ``RewardEnsemble`` (each member on its own shuffle of the data,
    all members in one optimizer step). The optimizer persists, so ``fit`` on a grown dataset
    continues training."""

    def __init__(self, model: RewardNet | RewardEnsemble, config: TrainerConfig | None = None):
        self.config = config or TrainerConfig()
        self.model = model.to(self.config.device)
        self.members = list(model.members) if isinstance(model, RewardEnsemble) else [model]
        self.loss_fn = make_loss(self.config.loss, self.config.hinge_margin,
                                 self.config.rao_kupper_theta)
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(), lr=self.config.lr, weight_decay=self.config.weight_decay
        )

    def fit(self, dataset_or_pairs: Any, labels: np.ndarray | None = None,
            rng: np.random.Generator | None = None) -> TrainReport:
        """Train on a ``PreferenceDataset`` or on ``(pairs, labels)``; NaN labels are skipped.
        ``rng`` (default: from ``config.seed``) drives the split, bootstrap and shuffles."""
        started = time.perf_counter()
        config = self.config
        rng = rng if rng is not None else np.random.default_rng(config.seed)
        pairs, labels = _pairs_and_labels(dataset_or_pairs, labels)
        kept = _labelled_rows(labels, len(pairs))
        z = torch.as_tensor(labels[kept], dtype=torch.float32, device=config.device)
        self.loss_fn(torch.zeros_like(z), z)  # rejects labels off this loss's scale before training
        data = _PairTensors(pairs, kept, z, self.model.spec.inputs, self.model, config.discount,
                            config.memory_budget_bytes)
        order = rng.permutation(len(kept))
        n_val = int(config.val_fraction * len(kept))
        val_rows, train_rows = np.sort(order[:n_val]), order[n_val:]
        if len(train_rows) == 0:
            raise InvalidDataError(f"no pairs left to train on: {len(kept)} labelled, all {n_val} "
                                   f"held out by val_fraction={config.val_fraction}")
        member_rows = [rng.choice(train_rows, len(train_rows)) if config.bootstrap else train_rows
                       for _ in self.members]
        train_loss: list[float] = []
        val_loss: list[float] = []
        val_accuracy: list[float] = []
        best_epoch, best_state, stopped_early = 0, None, False
        for epoch in range(config.max_epochs):
            train_loss.append(self._train_epoch(data, [rng.permutation(r) for r in member_rows]))
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
            len(train_rows), n_val, seconds, len(train_rows) * len(train_loss) / seconds,
            kept[val_rows],
        )

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
        rewards = member(*(batch.get(name) for name in _ARRAY_OF_INPUT))
        if "weights" in batch:
            rewards = rewards * batch["weights"]
        returns = rewards.sum(dim=-1)
        return returns[:, 0] - returns[:, 1]

    def _train_epoch(self, data: _PairTensors, orders: list[np.ndarray]) -> float:
        """One pass; each member steps through its own order. Returns the mean member loss."""
        self.model.train()
        batch_size = self.config.batch_size
        step_losses = []
        for start in range(0, len(orders[0]), batch_size):
            losses = []
            for member, order in zip(self.members, orders, strict=True):
                batch = data.batch(order[start:start + batch_size])
                losses.append(self.loss_fn(self._segment_delta(member, batch), batch["z"]))
            loss = losses[0] if len(losses) == 1 else torch.stack(losses).sum()
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            step_losses.append(loss.detach())
        return float(torch.stack(step_losses).mean()) / len(self.members)

    def _validate(self, data: _PairTensors, positions: np.ndarray) -> tuple[float, float]:
        """Mean member loss and the accuracy of the ensemble mean on held-out pairs."""
        self.model.train(False)  # evaluation mode (no dropout/batch-norm updates)
        size = self.config.eval_batch_size
        member_deltas, labels = [], []
        with torch.no_grad():
            for start in range(0, len(positions), size):  # chunks bound the gathered memory
                chunk = data.batch(positions[start:start + size])
                member_deltas.append(
                    torch.stack([self._segment_delta(member, chunk) for member in self.members])
                )
                labels.append(chunk["z"])
            deltas, z_val = torch.cat(member_deltas, dim=1), torch.cat(labels)
            loss = float(np.mean([float(self.loss_fn(delta, z_val)) for delta in deltas]))
        accuracy = preference_accuracy(deltas.mean(0).cpu().numpy(), z_val.cpu().numpy())
        return loss, accuracy


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

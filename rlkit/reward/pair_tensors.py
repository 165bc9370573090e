"""The labelled pairs a ``RewardTrainer`` fits on, as tensors: a table of their distinct segments
(gathered once, appended to across refits) and each pair's two slots in it (``PairTensors``), and
the distinct segments of a batch (``Distinct``), so the nets run once per distinct segment."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from rlkit.data import SegmentPairs, gather
from rlkit.errors import InvalidDataError
from rlkit.reward.numpy_rewards import numpy_to_tensors

__all__ = ["ARRAY_OF_INPUT", "Distinct", "PairTensors"]

ARRAY_OF_INPUT = {"obs": "obs", "act": "acts", "next_obs": "next_obs", "done": "dones"}  # -> Steps field


class PairTensors:
    """The labelled pairs ``rows`` of ``pairs`` as a table of their distinct segments (same
    trajectory, start and length) and each pair's two slots in it: ``segments`` ``(S, 3)``,
    ``pair_segments`` ``(n, 2)`` (left, right), tensors ``(S, L, ...)``, the labels ``z`` and,
    unless every segment is full-length and undiscounted, per-step return ``weights`` (mask times
    discount**t). Pairs that share segments (APEC's whole rollouts) hold each one once. Resident
    when the table fits the memory budget, else gathered batch by batch. ``batch`` takes
    positions in ``rows`` and gives ``(b, 2, L, ...)`` tensors; ``segment_batch`` takes slots.

    Given the tensors of the trainer's last fit (``previous``), rows whose pairs it fitted on are
    not gathered again: only the rest are, and the segments the table lacks appended to it. A
    previous row counts only while it holds the same store and segments (a dataset that grew by
    appending keeps them all; one that does not extend the last is gathered anew). ``new_labels``
    counts the rows it had not fitted on."""

    fitted: np.ndarray  # every row fitted on so far (this fit's and earlier ones')
    segments: np.ndarray  # (S, 3): the (trajectory, start, length) each slot of the table holds
    pair_segments: np.ndarray  # (len(rows), 2): the slots of each row's left and right segment
    held: np.ndarray  # the rows whose segments the table holds, when resident
    tensors: dict[str, torch.Tensor]  # (S, L, ...), when resident

    def __init__(self, pairs: SegmentPairs, rows: np.ndarray, z: torch.Tensor,
                 inputs: tuple[str, ...], model: torch.nn.Module, discount: float,
                 budget_bytes: int, previous: PairTensors | None = None) -> None:
        self.pairs, self.rows, self.z, self.inputs = pairs, rows, z, inputs
        self.model, self.discount = model, discount
        lengths = pairs.left[rows, 2]
        self.length = int(lengths.max())
        self.weighted = discount != 1.0 or bool((lengths != self.length).any())
        bytes_per_pair = sum(array.nbytes for array in self._gather_numpy(rows[:1]).values())
        known = previous is not None and previous.holds_same_pairs(pairs)
        seen = previous.fitted if known and previous is not None else np.zeros(0, np.int64)
        new = np.setdiff1d(rows, seen)
        self.new_labels = len(new)
        self.fitted = np.union1d(seen, rows)
        self.left, self.right = pairs.left[self.fitted], pairs.right[self.fitted]
        self.device = next(model.parameters()).device
        kept = previous if known and previous is not None and previous.tensors_fit(self) else None
        table = kept.segments if kept is not None else np.zeros((0, 3), np.int64)
        keys = np.stack([pairs.left[rows], pairs.right[rows]], axis=1).reshape(-1, 3)
        slots, first = _slots_in(table, keys)
        self.segments = np.concatenate([table, keys[first]])
        self.pair_segments = slots.reshape(-1, 2)
        self.resident = bytes_per_pair // 2 * len(self.segments) <= budget_bytes
        if not self.resident:
            return
        # rows the table holds both segments of: gathered before, never again
        self.held = np.union1d(kept.held, rows) if kept is not None else np.unique(rows)
        self.tensors = kept.tensors if kept is not None else {}
        if len(first) == 0:
            return
        # gather the rows not held, and keep the segments the table lacks, once each (a segment
        # new to the table first shows up in a row it does not hold)
        missing = np.setdiff1d(rows, kept.held) if kept is not None else self.held
        picked = 2 * np.searchsorted(missing, rows[first // 2]) + first % 2
        arrays = self._gather_numpy(missing)
        fresh = self._to_tensors({name: array.reshape(-1, *array.shape[2:])[picked]
                                  for name, array in arrays.items()})
        self.tensors = {name: torch.cat([self.tensors[name], tensor]) if self.tensors else tensor
                        for name, tensor in fresh.items()}

    def holds_same_pairs(self, pairs: SegmentPairs) -> bool:
        """Whether every row fitted on still compares the same segments of the same store."""
        return (pairs.store is self.pairs.store and len(pairs) > int(self.fitted.max())
                and np.array_equal(pairs.left[self.fitted], self.left)
                and np.array_equal(pairs.right[self.fitted], self.right))

    def tensors_fit(self, other: PairTensors) -> bool:
        """Whether these resident tensors can serve ``other`` (same pairs checked apart)."""
        return self.resident and (self.length, self.weighted, self.inputs, self.discount,
                                  self.device) == (other.length, other.weighted, other.inputs,
                                                   other.discount, other.device)

    def labels(self, positions: np.ndarray) -> torch.Tensor:
        return self.z[torch.from_numpy(positions).to(self.device)]

    def batch(self, positions: np.ndarray) -> dict[str, torch.Tensor]:
        if self.resident:
            slots = torch.from_numpy(self.pair_segments[positions]).to(self.device)
            tensors = {name: tensor[slots] for name, tensor in self.tensors.items()}
        else:
            tensors = self._to_tensors(self._gather_numpy(self.rows[positions]))
        tensors["z"] = self.labels(positions)
        return tensors

    def segment_batch(self, slots: np.ndarray) -> dict[str, torch.Tensor]:
        """The tensors ``(m, L, ...)`` of the table's segments ``slots`` (no labels)."""
        if self.resident:
            index = torch.from_numpy(slots).to(self.device)
            return {name: tensor[index] for name, tensor in self.tensors.items()}
        keys = self.segments[slots]
        return self._to_tensors(self._gather_segments(
            keys, lambda i: "trajectory {}, start {}, length {}".format(*keys[i])))

    def _gather_numpy(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        # one gather over (left 0, right 0, left 1, ...): (2n, L, ...) reshapes to (n, 2, L, ...)
        interleaved = np.stack([self.pairs.left[rows], self.pairs.right[rows]], axis=1)
        arrays = self._gather_segments(interleaved.reshape(-1, 3),
                                       lambda i: f"pair {int(rows[i // 2])}")
        return {name: array.reshape(len(rows), 2, *array.shape[1:])
                for name, array in arrays.items()}

    def _gather_segments(self, keys: np.ndarray, where: Callable[[int], str]
                         ) -> dict[str, np.ndarray]:
        """The segments ``keys`` as ``(m, L, ...)`` arrays; ``where(i)`` names segment i in an
        error."""
        steps = gather(self.pairs.store, keys)
        arrays = {}
        for name in self.inputs:
            array_name = ARRAY_OF_INPUT[name]
            array = _pad(getattr(steps, array_name), self.length)
            if np.issubdtype(array.dtype, np.floating) and not np.isfinite(array).all():
                bad = int(np.flatnonzero(~np.isfinite(array.reshape(len(array), -1)).all(1))[0])
                raise InvalidDataError(f"{array_name} holds NaN or inf ({where(bad)})")
            arrays[name] = array
        if self.weighted:
            mask = _pad(steps.mask, self.length)
            arrays["weights"] = (mask * self.discount ** np.arange(self.length)).astype(np.float32)
        return arrays

    def _to_tensors(self, arrays: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
        return dict(zip(arrays, numpy_to_tensors(self.model, *arrays.values()), strict=True))


def _slots_in(table: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``keys`` (``(m, 3)`` segments) sits in ``table`` (distinct segments) once
    the keys it lacks are appended to it, and those keys: the positions in ``keys`` of their first
    occurrences, in order (so slot ``len(table) + j`` holds ``keys[first[j]]``)."""
    both = np.concatenate([table, keys])
    _, first_at, inverse = np.unique(both, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    unseen = np.sort(first_at[first_at >= len(table)])
    slot_of = first_at.copy()  # a key of the table: its own row (the table's rows are distinct)
    slot_of[inverse[unseen]] = len(table) + np.arange(len(unseen))
    return slot_of[inverse[len(table):]], unseen - len(table)


def _pad(array: np.ndarray, length: int) -> np.ndarray:
    """Zero-pad the step axis (1) to ``length``, so per-batch gathers match the whole dataset."""
    missing = length - array.shape[1]
    if missing == 0:
        return array
    widths = [(0, 0)] * array.ndim
    widths[1] = (0, missing)
    return np.pad(array, widths)


@dataclass(frozen=True)
class Distinct:
    """The distinct segments of K blocks of pairs: ``segments`` ``(K, U)`` table slots (a block
    with fewer than U repeats its last one) and ``index`` ``(K, b, 2)``: where each pair's left and
    right segment sits in its block's U."""

    segments: np.ndarray
    index: np.ndarray

    @classmethod
    def of(cls, pair_segments: np.ndarray) -> Distinct:
        """From the table slots ``(K, b, 2)`` of each block's pairs."""
        found = [np.unique(block, return_inverse=True) for block in pair_segments]
        width = max(len(segments) for segments, _ in found)
        return cls(np.stack([np.pad(segments, (0, width - len(segments)), mode="edge")
                             for segments, _ in found]),
                   np.stack([inverse.reshape(block.shape) for (_, inverse), block
                             in zip(found, pair_segments, strict=True)]))

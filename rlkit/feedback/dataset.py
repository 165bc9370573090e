"""Labelled pairs of segments with provenance, saved as ``.npz`` + JSON (never pickle)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from rlkit.data.segments import SegmentPairs
from rlkit.data.store import TrajectoryStore
from rlkit.data.store_dtypes import writable
from rlkit.errors import FileFormatError, InvalidDataError, InvalidLabelError
from rlkit.feedback.scale import OrdinalScale
from rlkit.persistence import read_header, tag, write_header
from rlkit.persistence.arrays import load_npz, save_npz
from rlkit.persistence.formats import sha256_file, verify_checksums

_KIND = "rlkit.preferences"
_FORMAT = tag(_KIND)
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "n_pairs": int, "sources": list, "annotators": list, "meta_columns": list, "npz_sha256": str,
    "scale": (dict, type(None)),
}
MetaValue = np.ndarray | float | int | str


class PreferenceDataset:
    """Pairs of segments of one ``TrajectoryStore`` and their labels z in [0, 1] (NaN = skipped).

    Per pair it keeps provenance: a source name (teacher, ``apec``, ``web``...), an annotator id,
    and free metadata columns (``oracle_p``, checkpoint indices...), numeric or text. Pairs are
    index triples into the store, so 100k pairs cost a few MB beside the trajectories.

    Args:
        store: the trajectories every pair's segments index.
        scale: the labels' ordinal scale, checked on every append (None: any label in [0, 1]).
    """

    def __init__(self, store: TrajectoryStore, scale: OrdinalScale | None = None) -> None:
        self.store = store
        self.scale = scale
        self._left = np.zeros((0, 3), dtype=np.int64)
        self._right = np.zeros((0, 3), dtype=np.int64)
        self.labels = np.zeros(0, dtype=np.float32)
        self._source = np.zeros(0, dtype=np.int32)
        self._annotator = np.zeros(0, dtype=np.int32)
        self.source_names: list[str] = []
        self.annotator_names: list[str] = []
        self.meta: dict[str, np.ndarray] = {}

    # -- building -------------------------------------------------------------------------
    def append(
        self,
        pairs: SegmentPairs,
        labels: np.ndarray,
        *,
        source: str,
        annotator: str = "",
        meta: Mapping[str, MetaValue] | None = None,
    ) -> None:
        """Add labelled pairs; everything is checked before anything is stored."""
        if pairs.store is not self.store:
            raise InvalidDataError("these pairs index another TrajectoryStore than the dataset's")
        n = len(pairs)
        labels = np.asarray(labels, dtype=np.float32).reshape(-1)
        if len(labels) != n:
            raise InvalidLabelError(f"{n} pairs but {len(labels)} labels")
        (self.scale or OrdinalScale.get("oracle")).validate(labels)
        columns = {key: _column(key, value, n) for key, value in (meta or {}).items()}
        self._extend(
            pairs.left, pairs.right, labels,
            np.full(n, _code(self.source_names, source), dtype=np.int32),
            np.full(n, _code(self.annotator_names, annotator), dtype=np.int32),
            columns,
        )

    def _extend(
        self,
        left: np.ndarray,
        right: np.ndarray,
        labels: np.ndarray,
        source: np.ndarray,
        annotator: np.ndarray,
        columns: Mapping[str, np.ndarray],
    ) -> None:
        n, old_n = len(labels), len(self.labels)
        self._left = np.concatenate([self._left, left])
        self._right = np.concatenate([self._right, right])
        self.labels = np.concatenate([self.labels, labels.astype(np.float32)])
        self._source = np.concatenate([self._source, source.astype(np.int32)])
        self._annotator = np.concatenate([self._annotator, annotator.astype(np.int32)])
        for key in set(self.meta) | set(columns):
            old, new = self.meta.get(key), columns.get(key)
            template = new if new is not None else old
            old = old if old is not None else _missing(template, old_n)  # type: ignore[arg-type]
            new = new if new is not None else _missing(template, n)  # type: ignore[arg-type]
            self.meta[key] = np.concatenate([old, new])

    # -- reading --------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.labels)

    @property
    def pairs(self) -> SegmentPairs:
        return SegmentPairs.trusted(self.store, self._left, self._right)

    @property
    def sources(self) -> np.ndarray:
        return np.asarray(self.source_names, dtype=str)[self._source] if len(self) else np.zeros(0, str)

    @property
    def annotators(self) -> np.ndarray:
        names = np.asarray(self.annotator_names, dtype=str)
        return names[self._annotator] if len(self) else np.zeros(0, str)

    @property
    def nbytes(self) -> int:
        """Bytes held by the pair columns (not the store's trajectories)."""
        arrays: list[np.ndarray] = [self._left, self._right, self.labels, self._source, self._annotator]
        return int(sum(a.nbytes for a in arrays) + sum(a.nbytes for a in self.meta.values()))

    def filter(self, rows: np.ndarray) -> PreferenceDataset:
        """A new dataset of the selected rows (a boolean mask or indices), sharing the store."""
        rows = np.asarray(rows)
        if rows.dtype == bool and rows.shape != (len(self),):
            raise InvalidDataError(f"a row mask needs {len(self)} entries, got {rows.shape}")
        out = PreferenceDataset(self.store, self.scale)
        out._left, out._right, out.labels = self._left[rows], self._right[rows], self.labels[rows]
        out._source, out._annotator = self._source[rows], self._annotator[rows]
        out.source_names, out.annotator_names = list(self.source_names), list(self.annotator_names)
        out.meta = {key: column[rows] for key, column in self.meta.items()}
        return out

    def labelled(self) -> PreferenceDataset:
        """Only the pairs that were not skipped."""
        return self.filter(np.isfinite(self.labels))

    def split(
        self, held_out_fraction: float, rng: np.random.Generator
    ) -> tuple[PreferenceDataset, PreferenceDataset]:
        """A random (train, held-out) split."""
        if not 0.0 < held_out_fraction < 1.0:
            raise InvalidDataError(f"held_out_fraction must lie in (0, 1), got {held_out_fraction}")
        order = rng.permutation(len(self))
        n_held = int(round(held_out_fraction * len(self)))
        return self.filter(np.sort(order[n_held:])), self.filter(np.sort(order[:n_held]))

    def merge(self, other: PreferenceDataset) -> PreferenceDataset:
        """All pairs of both; trajectories are combined into one store when the stores differ."""
        if other.store is self.store:
            store, shift = self.store, 0
        else:
            if other.store.obs_shape != self.store.obs_shape or (
                other.store.act_shape != self.store.act_shape
            ) or other.store.frame_stack != self.store.frame_stack:
                raise InvalidDataError(
                    f"cannot merge datasets of different spaces: obs {self.store.obs_shape} vs "
                    f"{other.store.obs_shape}, acts {self.store.act_shape} vs {other.store.act_shape}, "
                    f"frame stacks {self.store.frame_stack} vs {other.store.frame_stack}"
                )
            store = TrajectoryStore(frame_stack=self.store.frame_stack)
            store.extend(list(self.store) + list(other.store))
            shift = len(self.store)
        scale = self.scale if self.scale == other.scale else None
        merged = PreferenceDataset(store, scale)
        for part, offset in ((self, 0), (other, shift)):
            shift_ids = np.array([offset, 0, 0], dtype=np.int64)
            sources = np.array([_code(merged.source_names, s) for s in part.source_names], np.int32)
            annotators = np.array(
                [_code(merged.annotator_names, a) for a in part.annotator_names], np.int32
            )
            merged._extend(
                part._left + shift_ids, part._right + shift_ids, part.labels,
                sources[part._source] if len(part) else part._source,
                annotators[part._annotator] if len(part) else part._annotator,
                part.meta,
            )
        return merged

    # -- files ----------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> tuple[Path, Path]:
        """Write ``<path>.npz`` (arrays, with the trajectories) and ``<path>.json`` (description)."""
        npz_path, json_path = _paths(path)
        arrays = {f"traj__{key}": value for key, value in writable(self.store.arrays(), npz_path).items()}
        arrays |= {
            "left": self._left, "right": self._right, "labels": self.labels,
            "source": self._source, "annotator": self._annotator,
        }
        arrays |= {f"meta__{key}": column for key, column in self.meta.items()}
        save_npz(npz_path, arrays, compressed=True)
        write_header(json_path, _KIND, {
            "n_pairs": len(self),
            "sources": self.source_names,
            "annotators": self.annotator_names,
            "meta_columns": sorted(self.meta),
            "scale": None if self.scale is None else {
                "name": self.scale.name, "levels": self.scale.levels, "names": self.scale.names,
            },
            "obs_shape": self.store.obs_shape,
            "act_shape": self.store.act_shape,
            "npz_sha256": sha256_file(npz_path),
        })
        return npz_path, json_path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> PreferenceDataset:
        npz_path, json_path = _paths(path)
        header = read_header(json_path, _KIND, _FIELDS, verify=False)  # its digest last, below
        if not all(isinstance(name, str) for name in
                   [*header["sources"], *header["annotators"], *header["meta_columns"]]):
            raise FileFormatError(f"{json_path}: sources, annotators and meta_columns must be text")
        arrays = load_npz(npz_path, header["npz_sha256"], json_path.name)
        traj = {k.removeprefix("traj__"): v for k, v in arrays.items() if k.startswith("traj__")}
        store = TrajectoryStore.from_arrays(traj, origin=str(npz_path))
        scale_info = header["scale"]
        try:
            scale = None if scale_info is None else OrdinalScale(
                scale_info["name"], tuple(scale_info["levels"]), tuple(scale_info["names"])
            )
        except (KeyError, TypeError, ValueError) as error:
            raise FileFormatError(f"{json_path}: bad scale ({type(error).__name__}: {error})") from None
        dataset = cls(store, scale)
        try:
            left, right = arrays["left"], arrays["right"]
            labels, source, annotator = arrays["labels"], arrays["source"], arrays["annotator"]
            meta = {key: arrays[f"meta__{key}"] for key in header["meta_columns"]}
        except KeyError as error:
            raise FileFormatError(f"{npz_path}: missing array {error}") from None
        n = header["n_pairs"]
        for name, column in {"left": left, "right": right, "labels": labels, "source": source,
                             "annotator": annotator, **meta}.items():
            rows = len(column) if column.ndim else 0
            if column.ndim == 0 or rows != n:
                raise FileFormatError(f"{npz_path}: column {name!r} has {rows} rows, not {n}")
        for name, codes, names in (("source", source, header["sources"]),
                                   ("annotator", annotator, header["annotators"])):
            if n and (codes.min() < 0 or codes.max() >= len(names)):
                raise FileFormatError(f"{npz_path}: {name} codes outside the {len(names)} names")
        try:
            pairs = SegmentPairs(store, left, right)  # re-validates every index against the store
        except (InvalidDataError, TypeError) as error:
            raise FileFormatError(f"{npz_path}: pairs do not index its trajectories ({error})") from None
        (scale or OrdinalScale.get("oracle")).validate(labels, what=f"{npz_path}: labels")
        dataset._left, dataset._right = pairs.left, pairs.right
        dataset.labels = labels.astype(np.float32)
        dataset._source, dataset._annotator = source.astype(np.int32), annotator.astype(np.int32)
        dataset.source_names, dataset.annotator_names = header["sources"], header["annotators"]
        dataset.meta = meta
        verify_checksums(json_path, header)
        return dataset


def _paths(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    base = Path(path)
    if base.suffix in (".npz", ".json"):
        base = base.with_suffix("")
    return base.with_name(base.name + ".npz"), base.with_name(base.name + ".json")


def _code(names: list[str], name: str) -> int:
    if name not in names:
        names.append(name)
    return names.index(name)


def _column(key: str, value: Any, n: int) -> np.ndarray:
    column = np.asarray(value)
    if column.ndim == 0:
        column = np.full(n, column)
    if column.shape != (n,):
        raise InvalidDataError(f"meta column {key!r} has shape {column.shape}, expected ({n},)")
    if column.dtype.kind in "biuf":
        return column.astype(np.float64)
    if column.dtype.kind == "U":
        return column
    raise InvalidDataError(f"meta column {key!r} must be numbers or text, not {column.dtype}")


def _missing(template: np.ndarray, n: int) -> np.ndarray:
    return np.full(n, np.nan) if template.dtype.kind == "f" else np.full(n, "", dtype=template.dtype)

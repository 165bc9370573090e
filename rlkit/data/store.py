"""All trajectories of a run in flat arrays, so segments are cheap views and gathers are vectorised."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from rlkit.data.trajectory import Trajectory
from rlkit.errors import FileFormatError, InvalidDataError
from rlkit.persistence import tag
from rlkit.persistence.arrays import load_npz, save_npz
from rlkit.persistence.formats import check_npz_header, npz_header

__all__ = ["TrajectoryStore", "load_npz"]

_KIND = "rlkit.trajectories"
_FORMAT = tag(_KIND)


class TrajectoryStore:
    """Append-only trajectory storage.

    Trajectories are kept concatenated: ``obs`` (each trajectory contributes ``T + 1`` rows),
    ``acts`` and ``rews`` (``T`` rows each), plus per-trajectory offsets. Appends are buffered and
    consolidated on the next read, so building a store costs one copy, not one per append.
    ``states`` (optional, ``T`` rows each, like ``acts``): the simulator state after each step,
    kept while every trajectory has them at one width (``Trajectory.states``); what rendering a
    queried segment as video needs.
    """

    def __init__(self) -> None:
        self._obs: np.ndarray | None = None
        self._acts: np.ndarray | None = None
        self._rews = np.zeros(0, dtype=np.float32)
        self._lengths = np.zeros(0, dtype=np.int64)
        self._terminal = np.zeros(0, dtype=bool)
        self._states: np.ndarray | None = None
        self._pending: list[Trajectory] = []

    # -- building -------------------------------------------------------------------------
    def append(self, trajectory: Trajectory) -> int:
        """Add one trajectory; returns its id."""
        reference = self._pending[0] if self._pending else None
        if self._obs is not None:
            self._check_spaces(trajectory, self._obs.shape[1:], self._acts.shape[1:])  # type: ignore[union-attr]
        elif reference is not None:
            self._check_spaces(trajectory, reference.obs.shape[1:], reference.acts.shape[1:])
        self._pending.append(trajectory)
        return len(self) - 1

    def extend(self, trajectories: Iterable[Trajectory]) -> list[int]:
        return [self.append(t) for t in trajectories]

    @staticmethod
    def _check_spaces(t: Trajectory, obs_shape: tuple[int, ...], act_shape: tuple[int, ...]) -> None:
        if t.obs.shape[1:] != obs_shape or t.acts.shape[1:] != act_shape:
            raise InvalidDataError(
                f"trajectory spaces differ from the store's: obs {t.obs.shape[1:]} vs {obs_shape}, "
                f"acts {t.acts.shape[1:]} vs {act_shape}"
            )

    def _consolidate(self) -> None:
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        had_states = len(self._lengths) == 0 or self._states is not None  # a store without keeps none
        self._states = _joined_states(self._states, [t.states for t in pending]) if had_states else None
        obs = [t.obs for t in pending]
        acts = [t.acts for t in pending]
        if self._obs is not None:
            obs.insert(0, self._obs)
            acts.insert(0, self._acts)  # type: ignore[arg-type]
        self._obs = np.concatenate(obs)
        self._acts = np.concatenate(acts)
        self._rews = np.concatenate([self._rews, *(t.rews.astype(np.float32) for t in pending)])
        self._lengths = np.concatenate([self._lengths, [len(t) for t in pending]]).astype(np.int64)
        self._terminal = np.concatenate([self._terminal, [t.terminal for t in pending]]).astype(bool)
        self._obs_offsets = np.concatenate([[0], np.cumsum(self._lengths + 1)[:-1]]).astype(np.int64)
        self._step_offsets = np.concatenate([[0], np.cumsum(self._lengths)[:-1]]).astype(np.int64)

    # -- reading --------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._lengths) + len(self._pending)

    def __getitem__(self, traj_id: int) -> Trajectory:
        """The trajectory as views into the store (no copy)."""
        self._consolidate()
        if not 0 <= traj_id < len(self._lengths):
            raise IndexError(f"trajectory id {traj_id} out of range (store holds {len(self)})")
        o, s, n = self._obs_offsets[traj_id], self._step_offsets[traj_id], self._lengths[traj_id]
        return Trajectory(
            obs=self._obs[o : o + n + 1],  # type: ignore[index]
            acts=self._acts[s : s + n],  # type: ignore[index]
            rews=self._rews[s : s + n],
            terminal=bool(self._terminal[traj_id]),
            states=None if self._states is None else self._states[s : s + n],
        )

    def __iter__(self) -> Iterator[Trajectory]:
        return (self[i] for i in range(len(self)))

    @property
    def lengths(self) -> np.ndarray:
        self._consolidate()
        return self._lengths

    @property
    def terminal(self) -> np.ndarray:
        self._consolidate()
        return self._terminal

    @property
    def obs_shape(self) -> tuple[int, ...]:
        return self._arrays()[0].shape[1:]

    @property
    def act_shape(self) -> tuple[int, ...]:
        return self._arrays()[1].shape[1:]

    @property
    def n_steps(self) -> int:
        return int(self.lengths.sum())

    @property
    def nbytes(self) -> int:
        """Bytes held by the stored arrays."""
        obs, acts = self._arrays()
        return int(
            obs.nbytes + acts.nbytes + self._rews.nbytes + self._lengths.nbytes
            + self._terminal.nbytes + self._obs_offsets.nbytes + self._step_offsets.nbytes
            + (0 if self._states is None else self._states.nbytes)
        )

    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        self._consolidate()
        if self._obs is None or self._acts is None:
            raise InvalidDataError("the trajectory store is empty")
        return self._obs, self._acts

    def gather_steps(
        self, traj_ids: np.ndarray, starts: np.ndarray, lengths: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Arrays ``(B, L_max, ...)`` for B windows, padded past each window's length.

        Returns obs, acts, next_obs, rews, dones and mask (True on real steps). Padding repeats the
        window's last step and has reward 0 and mask False.
        """
        obs, acts = self._arrays()
        traj_ids = np.asarray(traj_ids, dtype=np.int64)
        starts = np.asarray(starts, dtype=np.int64)
        lengths = np.asarray(lengths, dtype=np.int64)
        width = int(lengths.max()) if len(lengths) else 0
        offsets = np.arange(width, dtype=np.int64)
        mask = offsets[None, :] < lengths[:, None]
        within = starts[:, None] + np.minimum(offsets[None, :], lengths[:, None] - 1)
        steps = self._step_offsets[traj_ids][:, None] + within
        obs_rows = self._obs_offsets[traj_ids][:, None] + within
        last = within == (self._lengths[traj_ids][:, None] - 1)
        return {
            "obs": obs[obs_rows],
            "acts": acts[steps],
            "next_obs": obs[obs_rows + 1],
            "rews": np.where(mask, self._rews[steps], np.float32(0)),
            "dones": last & self._terminal[traj_ids][:, None] & mask,
            "mask": mask,
        }

    # -- files ----------------------------------------------------------------------------
    def arrays(self, start: int = 0, stop: int | None = None) -> dict[str, np.ndarray]:
        """The content of trajectories ``start`` to ``stop`` (default: all) as plain arrays, views
        into the store (what ``save`` writes).

        Args:
            start: the first trajectory id.
            stop: one past the last (None: the store's length).

        Returns:
            ``obs``, ``acts``, ``rews``, ``lengths`` and ``terminal`` of those trajectories, and
            ``states`` when the store keeps them.
        """
        obs, acts = self._arrays()
        stop = len(self._lengths) if stop is None else stop
        if not 0 <= start < stop <= len(self._lengths):
            raise IndexError(f"trajectories {start} to {stop}: the store holds {len(self._lengths)}")
        last = stop - 1
        obs_end = int(self._obs_offsets[last] + self._lengths[last] + 1)
        step_end = int(self._step_offsets[last] + self._lengths[last])
        o, s = int(self._obs_offsets[start]), int(self._step_offsets[start])
        states = {} if self._states is None else {"states": self._states[s:step_end]}
        return {
            "obs": obs[o:obs_end], "acts": acts[s:step_end], "rews": self._rews[s:step_end],
            "lengths": self._lengths[start:stop], "terminal": self._terminal[start:stop], **states,
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], origin: str = "arrays") -> TrajectoryStore:
        missing = {"obs", "acts", "rews", "lengths", "terminal"} - set(arrays)
        if missing:
            raise FileFormatError(f"{origin}: missing arrays {sorted(missing)}")
        try:
            lengths = np.asarray(arrays["lengths"], dtype=np.int64)
            rews = np.asarray(arrays["rews"], dtype=np.float32)
            terminal = np.asarray(arrays["terminal"], dtype=bool)
        except (TypeError, ValueError) as error:
            raise FileFormatError(f"{origin}: lengths, rews or terminal are not numbers ({error})") from None
        if lengths.ndim != 1 or rews.ndim != 1 or terminal.ndim != 1 or np.ndim(arrays["obs"]) < 1 or (
                np.ndim(arrays["acts"]) < 1):
            raise FileFormatError(f"{origin}: lengths, rews and terminal must be 1-D, obs and acts arrays")
        n_steps, n_traj = int(lengths.sum()), len(lengths)
        if (lengths < 1).any():
            raise FileFormatError(f"{origin}: trajectory lengths must be >= 1")
        if len(arrays["acts"]) != n_steps or len(arrays["rews"]) != n_steps:
            raise FileFormatError(
                f"{origin}: acts/rews have {len(arrays['acts'])}/{len(arrays['rews'])} rows "
                f"but the lengths add up to {n_steps}"
            )
        if len(arrays["obs"]) != n_steps + n_traj or len(arrays["terminal"]) != n_traj:
            raise FileFormatError(f"{origin}: obs or terminal rows do not match the lengths")
        store = cls()
        store._obs = np.asarray(arrays["obs"])
        store._acts = np.asarray(arrays["acts"])
        store._rews = rews
        for name in ("obs", "acts", "rews"):
            values = getattr(store, f"_{name}")
            if values.dtype.kind not in "biuf":
                raise FileFormatError(f"{origin}: {name} holds {values.dtype}, not numbers")
            if np.issubdtype(values.dtype, np.floating) and not np.isfinite(values).all():
                raise InvalidDataError(f"{origin}: {name} holds NaN or inf")
        if "states" in arrays:
            states = np.asarray(arrays["states"])
            if states.ndim != 2 or len(states) != n_steps or states.dtype.kind != "f":
                raise FileFormatError(f"{origin}: states must be floats with {n_steps} rows, got "
                                      f"{states.dtype} {states.shape}")
            if not np.isfinite(states).all():
                raise InvalidDataError(f"{origin}: states holds NaN or inf")
            store._states = states
        store._lengths = lengths
        store._terminal = terminal
        store._obs_offsets = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]]).astype(np.int64)
        store._step_offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        return store

    def save(self, path: str | os.PathLike[str], start: int = 0, stop: int | None = None) -> Path:
        """Write the store as one ``.npz`` (atomic, no pickle); with ``start``/``stop``, only those
        trajectories (a chunk: ``load_chunks`` reads a run of them back as one store).

        Args:
            path: the file (``.npz`` is added).
            start: the first trajectory id written.
            stop: one past the last (None: the store's length).

        Returns:
            The path written.
        """
        path = Path(path).with_suffix(".npz")
        save_npz(path, {"_header": npz_header(_KIND), **self.arrays(start, stop)})
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TrajectoryStore:
        return cls.from_arrays(_read(path), origin=str(path))

    @classmethod
    def load_chunks(cls, paths: Iterable[str | os.PathLike[str]]) -> TrajectoryStore:
        """One store of the trajectories of several files ``save`` wrote, in order (ids follow on).

        Args:
            paths: the files, each a whole store or a chunk of one.

        Returns:
            The store.
        """
        paths = list(paths)
        parts = [_read(path) for path in paths]
        if not parts:
            raise InvalidDataError("no trajectory files to load")
        names = ("obs", "acts", "rews", "lengths", "terminal")
        try:
            joined = {name: np.concatenate([part[name] for part in parts]) for name in names}
        except KeyError as error:
            raise FileFormatError(f"{' + '.join(map(str, paths))}: missing array {error}") from None
        except ValueError as error:
            raise FileFormatError(f"{' + '.join(map(str, paths))}: chunks do not fit together "
                                  f"({error})") from None
        states = _joined_states(None, [part.get("states") for part in parts])
        if states is not None:
            joined["states"] = states
        return cls.from_arrays(joined, origin=" + ".join(str(path) for path in paths))


def _read(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    arrays = load_npz(path)
    check_npz_header(arrays, _KIND, path)
    arrays.pop("_header")
    return arrays


def _joined_states(kept: np.ndarray | None, new: list[np.ndarray | None]) -> np.ndarray | None:
    """``kept`` and the new trajectories' states in one array; None unless every new trajectory
    has states, all at one width (a store mixing them keeps none)."""
    if any(states is None for states in new):
        return None
    parts = [states for states in (kept, *new) if states is not None]
    return np.concatenate(parts) if len({states.shape[1] for states in parts}) == 1 else None

"""All trajectories of a run in flat arrays, so segments are cheap views and gathers are vectorised."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path

import numpy as np

from rlkit.data.frames import frames_of_stacks, stacked_view
from rlkit.data.store_dtypes import check_dtypes, writable
from rlkit.data.trajectory import Trajectory
from rlkit.errors import ConfigError, FileFormatError, InvalidDataError
from rlkit.persistence import tag
from rlkit.persistence.arrays import load_npz, save_npz
from rlkit.persistence.formats import check_npz_header, npz_header

__all__ = ["STEP_FIELDS", "TrajectoryStore", "load_npz"]

STEP_FIELDS = ("obs", "acts", "next_obs", "rews", "dones", "mask")  # what gather_steps returns

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

    ``frame_stack = k > 1`` is for pixel observations stacked ``k`` frames deep (``(k * C, H, W)``,
    oldest first, as ``envs.pixels.StackFrames`` makes them): each trajectory keeps its first
    observation's ``k`` frames and then only each following observation's newest ``C`` channels
    (``T + k`` frames for ``T + 1`` observations), so memory is about ``1 / k`` of the stacks'; its
    ``obs`` are read back as exact read-only strided views over those frames (``frames``).

    Args:
        frame_stack: frames per observation (1: observations are stored as they come).
    """

    def __init__(self, frame_stack: int = 1) -> None:
        if isinstance(frame_stack, bool) or not isinstance(frame_stack, (int, np.integer)) or (
                frame_stack < 1):
            raise ConfigError(f"TrajectoryStore: frame_stack must be an integer >= 1, got {frame_stack!r}")
        self.frame_stack = int(frame_stack)
        self._frames: np.ndarray | None = None  # each frame once; the observations when k = 1
        self._obs: np.ndarray | None = None  # the observations: _frames, or stacks viewing them
        self._acts: np.ndarray | None = None
        self._rews = np.zeros(0, dtype=np.float32)
        self._lengths = np.zeros(0, dtype=np.int64)
        self._terminal = np.zeros(0, dtype=bool)
        self._states: np.ndarray | None = None
        self._pending: list[tuple[np.ndarray, Trajectory]] = []  # (its frames, the trajectory)

    # -- building -------------------------------------------------------------------------
    def append(self, trajectory: Trajectory) -> int:
        """Add one trajectory (kept until the next read, then joined to the rest in one copy).

        Args:
            trajectory: the trajectory; with ``frame_stack = k > 1`` its obs are ``(T + 1, k * C,
                ...)`` stacks, each the previous one shifted by one frame.

        Returns:
            Its id.

        Raises:
            InvalidDataError: when its spaces differ from the store's, or (``k > 1``) its obs are
                not overlapping stacks of ``k`` frames (naming the first step where they are not).
        """
        reference = self._pending[0][1] if self._pending else None
        if self._obs is not None:
            self._check_spaces(trajectory, self._obs.shape[1:], self._acts.shape[1:])  # type: ignore[union-attr]
        elif reference is not None:
            self._check_spaces(trajectory, reference.obs.shape[1:], reference.acts.shape[1:])
        if self.frame_stack == 1:
            self._pending.append((trajectory.obs, trajectory))
            return len(self) - 1
        frames = frames_of_stacks(trajectory.obs, self.frame_stack)  # the stacks are not kept
        kept = Trajectory(obs=stacked_view(frames, self.frame_stack), acts=trajectory.acts,
                          rews=trajectory.rews, terminal=trajectory.terminal, states=trajectory.states)
        self._pending.append((frames, kept))
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
        frames = [piece for piece, _ in self._pending]
        pending, self._pending = [t for _, t in self._pending], []
        had_states = len(self._lengths) == 0 or self._states is not None  # a store without keeps none
        self._states = _joined_states(self._states, [t.states for t in pending]) if had_states else None
        acts = [t.acts for t in pending]
        if self._frames is not None:
            frames.insert(0, self._frames)
            acts.insert(0, self._acts)  # type: ignore[arg-type]
        self._set_frames(np.concatenate(frames))
        self._acts = np.concatenate(acts)
        self._rews = np.concatenate([self._rews, *(t.rews.astype(np.float32) for t in pending)])
        self._lengths = np.concatenate([self._lengths, [len(t) for t in pending]]).astype(np.int64)
        self._terminal = np.concatenate([self._terminal, [t.terminal for t in pending]]).astype(bool)
        self._set_offsets()

    def _set_frames(self, frames: np.ndarray) -> None:
        self._frames = frames
        self._obs = frames if self.frame_stack == 1 else stacked_view(frames, self.frame_stack)

    def _set_offsets(self) -> None:
        # trajectory i's observations are rows _obs_offsets[i] .. + T_i of _obs: it holds T_i + k
        # frames, and with k > 1 the windows that straddle two trajectories are never read
        per_trajectory = self._lengths + self.frame_stack
        self._obs_offsets = np.concatenate([[0], np.cumsum(per_trajectory)[:-1]]).astype(np.int64)
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
    def frames(self) -> np.ndarray:
        """Every stored frame once, ``(N, C, ...)``: the array the stacked ``obs`` are views of
        (with ``frame_stack = 1``, the observations themselves)."""
        self._arrays()
        return self._frames  # type: ignore[return-value]

    @property
    def nbytes(self) -> int:
        """Bytes held by the stored arrays (frames counted once, not per stack)."""
        _, acts = self._arrays()
        return int(
            self.frames.nbytes + acts.nbytes + self._rews.nbytes + self._lengths.nbytes
            + self._terminal.nbytes + self._obs_offsets.nbytes + self._step_offsets.nbytes
            + (0 if self._states is None else self._states.nbytes)
        )

    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        self._consolidate()
        if self._obs is None or self._acts is None:
            raise InvalidDataError("the trajectory store is empty")
        return self._obs, self._acts

    def gather_steps(
        self, traj_ids: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
        fields: Collection[str] = STEP_FIELDS,
    ) -> dict[str, np.ndarray]:
        """Arrays ``(B, L_max, ...)`` for B windows, padded past each window's length.

        Args:
            traj_ids: each window's trajectory.
            starts: each window's first step.
            lengths: each window's steps (>= 1).
            fields: which arrays to gather (of ``STEP_FIELDS``); those left out cost nothing, so
                returns of pixel windows need not copy their frames.

        Returns:
            obs, acts, next_obs, rews, dones and mask (True on real steps), those of ``fields``.
            Padding repeats the window's last step and has reward 0 and mask False.
        """
        unknown = set(fields) - set(STEP_FIELDS)
        if unknown:
            raise InvalidDataError(f"gather_steps: unknown fields {sorted(unknown)}; known: {STEP_FIELDS}")
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
        gathered: dict[str, Callable[[], np.ndarray]] = {
            "obs": lambda: obs[obs_rows],
            "acts": lambda: acts[steps],
            "next_obs": lambda: obs[obs_rows + 1],
            "rews": lambda: np.where(mask, self._rews[steps], np.float32(0)),
            "dones": lambda: last & self._terminal[traj_ids][:, None] & mask,
            "mask": lambda: mask,
        }
        return {name: gathered[name]() for name in STEP_FIELDS if name in fields}

    # -- files ----------------------------------------------------------------------------
    def arrays(self, start: int = 0, stop: int | None = None) -> dict[str, np.ndarray]:
        """The content of trajectories ``start`` to ``stop`` (default: all) as plain arrays, views
        into the store (what ``save`` writes).

        Args:
            start: the first trajectory id.
            stop: one past the last (None: the store's length).

        Returns:
            ``obs``, ``acts``, ``rews``, ``lengths`` and ``terminal`` of those trajectories, and
            ``states`` when the store keeps them; with ``frame_stack = k > 1``, ``frames`` (each
            trajectory's ``T + k`` frames) and ``frame_stack`` (``k``, 0-d) in place of ``obs``.
        """
        _, acts = self._arrays()
        frames = self.frames
        stop = len(self._lengths) if stop is None else stop
        if not 0 <= start < stop <= len(self._lengths):
            raise IndexError(f"trajectories {start} to {stop}: the store holds {len(self._lengths)}")
        last = stop - 1
        obs_end = int(self._obs_offsets[last] + self._lengths[last] + self.frame_stack)
        step_end = int(self._step_offsets[last] + self._lengths[last])
        o, s = int(self._obs_offsets[start]), int(self._step_offsets[start])
        states = {} if self._states is None else {"states": self._states[s:step_end]}
        observations = {"obs": frames[o:obs_end]} if self.frame_stack == 1 else {
            "frames": frames[o:obs_end], "frame_stack": np.array(self.frame_stack, dtype=np.int64)}
        return {
            **observations, "acts": acts[s:step_end], "rews": self._rews[s:step_end],
            "lengths": self._lengths[start:stop], "terminal": self._terminal[start:stop], **states,
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], origin: str = "arrays") -> TrajectoryStore:
        """A store of the arrays ``arrays`` returned (or a file ``save`` wrote held), checked.

        Args:
            arrays: ``obs`` (or ``frames`` and ``frame_stack``), ``acts``, ``rews``, ``lengths``,
                ``terminal`` and optionally ``states``; kept as they are, not copied (frames that
                are not C-contiguous are copied once).
            origin: what they came from, for error messages.

        Returns:
            The store.

        Raises:
            FileFormatError: when an array is missing, of a dtype ``rlkit.data.store_dtypes`` does not
                list, or does not match the lengths.
            InvalidDataError: when float arrays hold NaN or inf.
        """
        name, k = _observation_layout(arrays, origin)
        missing = {name, "acts", "rews", "lengths", "terminal"} - set(arrays)
        if missing:
            raise FileFormatError(f"{origin}: missing arrays {sorted(missing)}")
        check_dtypes(arrays, origin)
        lengths = np.asarray(arrays["lengths"], dtype=np.int64)  # dtypes checked: nothing is lost
        rews = np.asarray(arrays["rews"], dtype=np.float32)
        terminal = np.asarray(arrays["terminal"], dtype=bool)
        if lengths.ndim != 1 or rews.ndim != 1 or terminal.ndim != 1 or np.ndim(arrays[name]) < (
                1 if k == 1 else 2) or np.ndim(arrays["acts"]) < 1:
            raise FileFormatError(f"{origin}: lengths, rews and terminal must be 1-D, acts an array, "
                                  + ("obs an array" if k == 1 else "frames (N, C, ...)"))
        n_steps, n_traj = int(lengths.sum()), len(lengths)
        if (lengths < 1).any():
            raise FileFormatError(f"{origin}: trajectory lengths must be >= 1")
        if len(arrays["acts"]) != n_steps or len(arrays["rews"]) != n_steps:
            raise FileFormatError(
                f"{origin}: acts/rews have {len(arrays['acts'])}/{len(arrays['rews'])} rows "
                f"but the lengths add up to {n_steps}"
            )
        if len(arrays[name]) != n_steps + n_traj * k or len(arrays["terminal"]) != n_traj:
            raise FileFormatError(f"{origin}: {name} or terminal rows do not match the lengths")
        store = cls(frame_stack=k)
        frames = np.asarray(arrays[name])
        store._acts = np.asarray(arrays["acts"])
        store._rews = rews
        for label, values in ((name, frames), ("acts", store._acts), ("rews", rews)):
            if np.issubdtype(values.dtype, np.floating) and not np.isfinite(values).all():
                raise InvalidDataError(f"{origin}: {label} holds NaN or inf")
        store._set_frames(frames if k == 1 else np.ascontiguousarray(frames))
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
        store._set_offsets()
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
        save_npz(path, {"_header": npz_header(_KIND), **writable(self.arrays(start, stop), path)})
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
        for part, path in zip(parts, paths, strict=True):  # each, before joining could cast them
            check_dtypes(part, path)
        if not parts:
            raise InvalidDataError("no trajectory files to load")
        origin = " + ".join(str(path) for path in paths)
        layouts = {_observation_layout(part, str(path)) for part, path in zip(parts, paths, strict=True)}
        if len(layouts) > 1:
            raise FileFormatError(f"{origin}: chunks of different frame stacks "
                                  f"({sorted(k for _, k in layouts)}) do not fit together")
        (name, k), = layouts
        names = (name, "acts", "rews", "lengths", "terminal")
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
        if k > 1:
            joined["frame_stack"] = np.array(k, dtype=np.int64)
        return cls.from_arrays(joined, origin=origin)


def _read(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    arrays = load_npz(path)
    check_npz_header(arrays, _KIND, path)
    arrays.pop("_header")
    return arrays


def _observation_layout(arrays: dict[str, np.ndarray], origin: str) -> tuple[str, int]:
    """Where ``arrays`` keep their observations: ``("obs", 1)``, or ``("frames", k)`` for frames
    stacked ``k`` deep."""
    if "frames" not in arrays:
        if "frame_stack" in arrays:
            raise FileFormatError(f"{origin}: frame_stack without frames")
        return "obs", 1
    if "obs" in arrays:
        raise FileFormatError(f"{origin}: both obs and frames: which are the observations?")
    k = arrays.get("frame_stack")
    if k is None or np.ndim(k) != 0 or np.asarray(k).dtype.kind not in "iu" or int(k) < 1:
        raise FileFormatError(f"{origin}: frames need frame_stack, one integer >= 1, got {k!r}")
    return "frames", int(k)


def _joined_states(kept: np.ndarray | None, new: list[np.ndarray | None]) -> np.ndarray | None:
    """``kept`` and the new trajectories' states in one array; None unless every new trajectory
    has states, all at one width (a store mixing them keeps none)."""
    if any(states is None for states in new):
        return None
    parts = [states for states in (kept, *new) if states is not None]
    return np.concatenate(parts) if len({states.shape[1] for states in parts}) == 1 else None

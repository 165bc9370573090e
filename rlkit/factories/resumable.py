"""SB3 training that survives being killed: ``ResumableTraining`` runs ``learn`` in chunks of env
steps, writes a resume point after each, and started again on the same folder loads the latest
whole point and goes on (``learn(..., reset_num_timesteps=False)``), so the run ends at the
``num_timesteps`` one ``learn(total_timesteps)`` call reaches, with as many ``_n_updates``.

A point (format ``rlkit.sb3-resume``) holds:

- the networks and their optimisers, SAC's entropy coefficient and its optimiser: SB3's zip through
  ``rlkit.persistence.agents`` (nothing unpickled), loaded into the caller's freshly built agent;
- the counters ``num_timesteps``, ``_n_updates``, ``_episode_num`` (and ``_n_calls`` where the
  algorithm has one);
- an off-policy agent's replay buffer, as chunk files of which a point writes only those holding
  rows added since the last (``rlkit.persistence.replay.save_replay_chunks``);
- the RNGs a run draws from: torch's (CPU; CUDA when the agent runs there), the torch generators
  an algorithm keeps of its own (``DrQSAC``'s augmentation), numpy's global one
  (SB3 samples replay batches from it), Python's ``random``, the action space's (SB3's random
  warm-up actions) and each env's ``np_random`` (as it is, where the episode in progress is kept;
  else as it was before the chunk's last env step);
- the episode in progress, where every layer of the env can hand its state over
  (``rlkit.persistence.env_state``: MuJoCo's Hopper, HalfCheetah and Walker2d, Pendulum, rlkit's
  pixel tasks, fixed-horizon and reward wrappers, gymnasium's and SB3's usual wrappers), with the
  agent's last observation (``episode.npz``);
- the caller's settings and its own progress (JSON, e.g. an episode-return curve).

Layout: ``<dir>/point-<steps>.json``, the header, committed last through
``rlkit.persistence.run_state`` (command ``resumable``, the caller's settings as its config), names
``<dir>/point-<steps>/`` (``agent.zip``, ``agent.json``, ``tensors.pt``, ``episode.npz``) and the
replay chunks ``<dir>/replay/*.npz`` with their SHA-256. The last ``keep`` points are kept. A
killed write leaves no header (its files are removed by the next save); a damaged point is passed
over for the one before and named in ``Resumed.skipped``; when none is whole the error names
each. A point written with other settings is refused, naming them (never passed over).

What a resumed run reproduces. Where the point holds the episode in progress, the resumed run
steps on from where the killed one was, and is bit-identical to a run never stopped (measured in
tests/test_resumable_training.py: SAC and PPO on CPU, Pendulum and Hopper cut mid-episode). Where
some layer of the env cannot hand its state over, the point keeps each env's RNG as it was before
the chunk's last step and a resumed run starts with an env reset: where that step ended an episode
in every env, the reset draws the start the killed run's own reset drew and the run is again
bit-identical; mid-episode it starts a new episode, and from there it is equal in steps and
updates but not in numbers. ``Resumed.exact`` says which. Provisos: the agent runs on the CPU or
deterministic CUDA kernels; SB3's progress for non-constant schedules is counted per ``learn`` call, so per
chunk (rlkit builds constant ones). SB3's ``ep_info_buffer`` (the ``rollout/ep_rew_mean`` log)
starts empty.

Callbacks: the one given to ``train`` runs in every chunk (one object, so its state carries over
between chunks); after a restart it is a new object, so a schedule should count the agent's
``num_timesteps`` (as ``rlkit.apec.demonstrator``'s checkpoint saver does), not its own calls
(SB3's ``n_calls``, which ``CheckpointCallback`` and ``EvalCallback`` count, start again from 0).
State of its own (an episode-return curve) goes into the point through ``progress``.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.save_util import load_from_zip_file
from stable_baselines3.common.type_aliases import TrainFreq, TrainFrequencyUnit

from rlkit.errors import FileFormatError, InvalidDataError
from rlkit.persistence import atomic_write_bytes, tag
from rlkit.persistence.agents import save_agent
from rlkit.persistence.arrays import load_npz, save_npz
from rlkit.persistence.formats import payload_files
from rlkit.persistence.replay import chunk_files, load_replay_chunks, save_replay_chunks
from rlkit.persistence.run_state import Point, commit, peek, read_point
from rlkit.persistence.sb3_state import (
    check_learn_rngs,
    check_rng_tensors,
    env_rng_states,
    episode_state,
    learn_rngs,
    restore_episode,
    restore_learn_rngs,
    restore_networks,
    restore_rng_tensors,
    rng_tensors,
)

__all__ = ["ResumableTraining", "Resumed"]

KIND = "rlkit.sb3-resume"
FORMAT = tag(KIND)
AGENT_NAME = "agent"  # agent.zip + agent.json (rlkit.persistence.agents)
TENSORS_FILE = "tensors.pt"  # torch's RNG states, read back with weights_only
EPISODE_FILE = "episode.npz"  # the episode in progress: the env's layers and the agent's last obs
REPLAY_DIR = "replay"
COUNTERS = ("num_timesteps", "_n_updates", "_episode_num", "_n_calls")
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "algo": str, "n_envs": int, "counters": dict, "rngs": dict, "exact": bool,
    "episode": bool, "replay": (dict, type(None)), "progress": dict,
}
_HEADER = re.compile(r"^point-(\d{12})\.json$")


@dataclass(frozen=True)
class Resumed:
    """What ``ResumableTraining.resume`` loaded.

    Attributes:
        timesteps: the point's env steps (the agent's ``num_timesteps``).
        progress: the caller's progress, as ``train``'s ``progress`` returned it for the point.
        exact: the resumed run continues bit-identically: the point holds the episode in
            progress, or its chunk ended on an episode end in every env.
        skipped: the damaged newer points passed over, newest first, each named with why.
    """

    timesteps: int
    progress: dict[str, Any]
    exact: bool
    skipped: tuple[str, ...] = ()


class ResumableTraining:
    """Train an SB3 agent for ``total_timesteps`` in chunks of ``chunk_steps`` env steps, with a
    resume point in ``directory`` after each chunk.

    Chunks end at multiples of ``chunk_steps`` (rounded down to whole rollouts: ``n_steps x
    n_envs`` on-policy, ``train_freq x n_envs`` off-policy), the same ones after a restart; the run
    ends where one ``learn(total_timesteps)`` call would (``total_timesteps`` rounded up to whole
    rollouts).

    Use: build the agent as for a fresh run, ``resume(agent)`` (None: nothing saved, start fresh),
    then ``train(agent, callback, progress)``.

    Args:
        directory: the folder of the resume points; created by the first save.
        total_timesteps: the run's env steps, >= 1.
        chunk_steps: env steps between resume points, >= 1.
        settings: the caller's JSON settings, saved with each point; a point saved with others is
            refused naming them (None: no settings).
        keep: how many points stay, the newest, >= 1 (>= 2 lets a damaged one fall back to the one
            before).

    Raises:
        InvalidDataError: when ``total_timesteps``, ``chunk_steps`` or ``keep`` is below 1, or
            ``settings`` is not JSON data.
    """

    def __init__(self, directory: str | Path, total_timesteps: int, chunk_steps: int,
                 settings: Mapping[str, Any] | None = None, keep: int = 2) -> None:
        limits = {"total_timesteps": total_timesteps, "chunk_steps": chunk_steps, "keep": keep}
        for name, value in limits.items():
            if value < 1:
                raise InvalidDataError(f"{name} must be >= 1, got {value}")
        self.directory = Path(directory)
        self.total_timesteps, self.chunk_steps, self.keep = total_timesteps, chunk_steps, keep
        try:
            self.settings: dict[str, Any] = json.loads(json.dumps(dict(settings or {})))
        except (TypeError, ValueError) as error:
            raise InvalidDataError(f"settings must be JSON data ({error})") from None
        self._replay: dict[str, Any] | None = None  # the manifest of the last point saved or loaded

    def points(self) -> list[int]:
        """The env steps of the committed points (those with a header), ascending.

        Returns:
            Steps, ascending.
        """
        if not self.directory.is_dir():
            return []
        found = (_HEADER.match(path.name) for path in self.directory.iterdir())
        return sorted(int(match.group(1)) for match in found if match)

    def resume(self, agent: BaseAlgorithm) -> Resumed | None:
        """Load the newest whole point into ``agent`` (built as for a fresh run, on its env).

        Args:
            agent: a fresh agent of the same algorithm, settings and env as the saved run.

        Returns:
            What was loaded, or None when the folder holds no point.

        Raises:
            InvalidDataError: a point of another algorithm, env count or network shapes.
            ConfigError: a point saved with other settings (each named with both values).
            FileFormatError: points were found but none is whole (each named with its defect).
        """
        skipped: list[str] = []
        for steps in reversed(self.points()):
            path = self._header(steps)
            try:
                point = read_point(path, KIND, "resumable", self.settings, _FIELDS, verify=False)
                self._check_agent(point, agent)
                tensors = self._verified(point)
            except FileFormatError as error:
                skipped.append(str(error))
                continue
            _restore(agent, self.directory, path, point.state, tensors)
            self._replay = point.state["replay"]
            return Resumed(steps, point.state["progress"], point.state["exact"], tuple(skipped))
        if skipped:
            raise FileFormatError(f"{self.directory}: no whole resume point: " + "; ".join(skipped))
        return None

    def train(self, agent: BaseAlgorithm, callback: BaseCallback | None = None,
              progress: Callable[[], Mapping[str, Any]] | None = None,
              after_chunk: Callable[[], None] | None = None) -> None:
        """Learn chunk by chunk from ``agent.num_timesteps`` to the end, saving a point after each.

        Args:
            agent: the agent (fresh, or as ``resume`` left it).
            callback: SB3 callback(s) for every chunk (one object: its state carries over).
            progress: returns the caller's JSON progress to save with each point.
            after_chunk: called after each chunk is learnt, before its point is saved (e.g. an
                evaluation whose result ``progress`` then saves).
        """
        stride = _stride(agent)
        target = -(-self.total_timesteps // stride) * stride
        chunk = max(stride, self.chunk_steps // stride * stride)
        if agent.num_timesteps > target:
            raise InvalidDataError(f"the agent is at {agent.num_timesteps} env steps, past total_timesteps "
                                   f"{self.total_timesteps}")
        while agent.num_timesteps < target:
            end = min(target, (agent.num_timesteps // chunk + 1) * chunk)
            boundary = _ChunkEnd(end)
            agent.learn(end - agent.num_timesteps, reset_num_timesteps=False, progress_bar=False,
                        callback=CallbackList([*([callback] if callback is not None else []), boundary]))
            if agent.num_timesteps < end:  # a callback stopped the training
                return
            if after_chunk is not None:
                after_chunk()
            self._save(agent, boundary, dict(progress()) if progress is not None else {})

    def clear(self) -> None:
        """Remove every point (once the run's own outputs are written)."""
        shutil.rmtree(self.directory, ignore_errors=True)

    def _header(self, steps: int) -> Path:
        return self.directory / f"point-{steps:012d}.json"

    def _check_agent(self, point: Point, agent: BaseAlgorithm) -> None:
        for key, value in (("algo", type(agent).__name__), ("n_envs", agent.n_envs)):
            if point.state[key] != value:
                raise InvalidDataError(f"{point.path}: a point of a run with {key}={point.state[key]!r}, "
                                       f"this one has {value!r}; resume with the same settings or use a "
                                       "new folder")

    def _verified(self, point: Point) -> dict[str, Any]:
        """Every file the point names checked against its SHA-256, and its RNG states readable."""
        path, state = point.path, point.state
        try:
            named = chunk_files(state["replay"]) if state["replay"] is not None else {}
        except (KeyError, TypeError, AttributeError):
            raise FileFormatError(f"{path}: field 'replay' is not a replay buffer manifest") from None
        if any(point.files.get(name) != sha for name, sha in named.items()):
            raise FileFormatError(f"{path}: its replay chunks are not among its checksummed files")
        point.verify()
        tensors_path = path.with_suffix("") / TENSORS_FILE
        try:
            tensors = torch.load(tensors_path, map_location="cpu", weights_only=True)
        except Exception as error:  # torch's restricted unpickler raises its own kinds
            raise FileFormatError(f"{tensors_path}: missing or damaged ({error})") from None
        check_rng_tensors(tensors, tensors_path)
        check_learn_rngs(state["rngs"], path)
        counters = state["counters"]
        if not all(isinstance(counters.get(name), int) for name in COUNTERS[:3]):
            raise FileFormatError(f"{path}: field 'counters' lacks one of {list(COUNTERS[:3])}")
        arrays = load_npz(path.with_suffix("") / EPISODE_FILE) if state["episode"] else None
        return {"rngs": tensors, "episode": arrays}

    def _save(self, agent: BaseAlgorithm, boundary: _ChunkEnd, progress: dict[str, Any]) -> None:
        steps = agent.num_timesteps
        header, folder = self._header(steps), self.directory / f"point-{steps:012d}"
        header.unlink(missing_ok=True)  # a point of these steps from a run that was lost past here
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        save_agent(agent, folder / AGENT_NAME)
        tensors = rng_tensors(agent)
        atomic_write_bytes(folder / TENSORS_FILE, lambda handle: torch.save(tensors, handle))
        episode = episode_state(agent)
        if episode is not None:
            save_npz(folder / EPISODE_FILE, episode)
        replay = None
        if isinstance(agent, OffPolicyAlgorithm) and agent.replay_buffer is not None:
            replay, _ = save_replay_chunks(agent.replay_buffer, self.directory, REPLAY_DIR, self._replay,
                                           steps, generation=steps)
        commit(header, KIND, "resumable", self.settings, {
            "algo": type(agent).__name__, "n_envs": agent.n_envs,
            "counters": {name: int(getattr(agent, name)) for name in COUNTERS if hasattr(agent, name)},
            # the env RNGs as they are now with the episode in progress, else from before the last step
            "rngs": learn_rngs(agent) | ({} if episode is not None else {"envs": boundary.env_rngs}),
            "exact": episode is not None or (boundary.env_rngs is not None and boundary.episode_end),
            "episode": episode is not None, "replay": replay, "progress": progress,
        }, covers=payload_files(folder), named=chunk_files(replay) if replay is not None else None)
        self._replay = replay
        self._prune(steps)

    def _prune(self, steps: int) -> None:
        """Keep the newest ``keep`` points up to ``steps`` (newer ones are a lost run's); remove
        everything no kept point names (older points, killed writes, superseded chunks)."""
        points = self.points()
        kept = [p for p in points if p <= steps][-self.keep:]
        for p in set(points) - set(kept):
            self._header(p).unlink(missing_ok=True)
        names = {f"point-{p:012d}" for p in kept}
        named: set[str] = set()
        for p in kept:
            header = peek(self._header(p), KIND)  # None: a damaged point, nothing of it worth keeping
            sums = header.get("sha256") if header is not None else None
            named |= set(sums) if isinstance(sums, dict) else set()
        for path in self.directory.iterdir():
            if path.is_dir() and path.name.startswith("point-") and path.name not in names:
                shutil.rmtree(path)
            elif path.is_file() and path.name.startswith(".") and path.name.endswith(".tmp"):
                path.unlink()  # an atomic write killed part way
        replay_dir = self.directory / REPLAY_DIR
        for path in replay_dir.iterdir() if replay_dir.is_dir() else []:
            if f"{REPLAY_DIR}/{path.name}" not in named:
                path.unlink()


class _ChunkEnd(BaseCallback):
    """Keeps each env's RNG state from before the chunk's last env step (the step that ends an
    episode also resets the env, drawing from it: a resumed run's reset draws the same) and
    whether that step ended an episode in every env."""

    def __init__(self, end: int) -> None:
        super().__init__()
        self.end = end
        self.env_rngs: list[dict[str, Any]] | None = None
        self.episode_end = False

    def _on_training_start(self) -> None:
        self._watch()

    def _on_step(self) -> bool:
        self._watch()
        if self.model.num_timesteps >= self.end:
            self.episode_end = bool(np.all(self.locals["dones"]))
        return True

    def _watch(self) -> None:
        if self.end - self.model.n_envs <= self.model.num_timesteps < self.end:
            self.env_rngs = env_rng_states(self.model.get_env())


def _stride(agent: BaseAlgorithm) -> int:
    """The env steps of one rollout (``learn`` counts in these)."""
    if isinstance(agent, OnPolicyAlgorithm):
        return agent.n_steps * agent.n_envs
    if isinstance(agent, OffPolicyAlgorithm):
        freq = agent.train_freq  # SB3 turns it into a TrainFreq when it builds the model
        if not isinstance(freq, TrainFreq) or freq.unit != TrainFrequencyUnit.STEP:
            raise InvalidDataError(f"train_freq={freq} counts episodes; resumable training needs it in "
                                   "steps (chunks end at a step count)")
        return freq.frequency * agent.n_envs
    raise InvalidDataError(f"{type(agent).__name__} is neither an on- nor an off-policy SB3 algorithm")


def _restore(agent: BaseAlgorithm, directory: Path, path: Path, header: dict[str, Any],
             tensors: dict[str, Any]) -> None:
    """Put a verified point into ``agent``; networks that do not fit it are refused."""
    zip_path = path.with_suffix("") / f"{AGENT_NAME}.zip"
    _, params, variables = load_from_zip_file(zip_path, device=agent.device, load_data=False)
    restore_networks(agent, params or {}, variables, zip_path)
    for name, value in header["counters"].items():
        if name in COUNTERS and hasattr(agent, name):
            setattr(agent, name, int(value))
    if isinstance(agent, OffPolicyAlgorithm) and agent.replay_buffer is not None:
        if header["replay"] is None:
            raise FileFormatError(f"{path}: no replay buffer, this agent keeps one")
        load_replay_chunks(agent.replay_buffer, directory, header["replay"])
    restore_rng_tensors(agent, tensors["rngs"], path.with_suffix("") / TENSORS_FILE)
    restore_learn_rngs(agent, header["rngs"], path)
    agent._last_obs = None  # learn() starts with an env reset, unless the episode goes on
    if tensors["episode"] is not None:
        restore_episode(agent, tensors["episode"], path.with_suffix("") / EPISODE_FILE)

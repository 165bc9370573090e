"""Where a killed ``rlkit pref-rl`` run picks up again: the start of its last query round.

The resume point is written just before each round draws its candidate pairs: the trajectories, the
labelled pairs, the reward model (and its optimiser and reward statistics), the agent's networks
and optimisers, an off-policy agent's replay buffer, the RNGs and the round records. A resumed run
restores all of it and asks that round again: the same RNG and the same data draw the same pairs,
so a simulated teacher gives the same labels and people's labels, stored under those pairs, are
found at once. Where the env can hand its episode in progress over, the point also holds the start
of the rollout the round falls in (``rlkit.prefrl.rollout_start``), and the resumed run steps that
rollout again up to the round: bit-identical to a run never stopped. Every query in the label store
therefore names trajectories the resume point holds or that stepping again records as they were (on
the CPU, where that is exact). Nothing is pickled: tensors are read back with
``weights_only``, arrays from ``.npz`` without pickle, the rest is JSON.

A round writes what is new since the last, so its cost stays flat as the run grows: the
trajectories recorded since (one chunk file under ``store/``), the replay buffer's chunks holding
the positions added since and the reward chunks a relabelling changed (``replay/``, see
``rlkit.persistence.replay.save_replay_chunks``), and the small files of the round (agent and
reward model tensors, the labelled pairs) in a folder of their own, ``round-NNNNNNN/``. Files an
existing point names are never rewritten; ``state.json`` (format ``rlkit.prefrl.resume``), replaced
atomically last through ``rlkit.persistence.run_state`` (command ``pref-rl``, the run's config), is
the commit: it names the round folder's files and every chunk with its SHA-256, so a run killed
mid-write keeps the previous point whole, a damaged file is refused by name, never loaded, and a
run resumed with other settings is refused naming them. Files no point names any more (a
superseded chunk, the last round's folder, a killed write's leftovers) are removed after the commit.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from rlkit.data import TrajectoryStore
from rlkit.data.segments import SegmentPairs
from rlkit.errors import FileFormatError
from rlkit.feedback import OrdinalScale, PreferenceDataset
from rlkit.logging.local import metrics_size, rewind_metrics
from rlkit.persistence import atomic_write_bytes, tag
from rlkit.persistence.arrays import load_npz, save_npz
from rlkit.persistence.formats import payload_files, sha256_file
from rlkit.persistence.replay import (
    chunk_files,
    load_replay_chunks,
    save_replay_chunks,
)
from rlkit.persistence.rng import (
    check_torch_rng_state,
    numpy_rng_state,
    restore_numpy_rng,
    restore_torch_rng,
    torch_rng_state,
)
from rlkit.persistence.run_state import commit, peek, read_point
from rlkit.persistence.sb3_state import network_tensors, restore_networks
from rlkit.prefrl import rollout_start
from rlkit.reward import LoadedRewardModel, load_reward_model, save_reward_model

if TYPE_CHECKING:
    from rlkit.prefrl.loop import PreferenceRL

RESUME_DIR = "resume"
PAIRS_FILE = "pairs.npz"
KIND = "rlkit.prefrl.resume"
FORMAT = tag(KIND)
STATE_FILE = "state.json"
_FIELDS: dict[str, type | tuple[type, ...]] = {"timestep": int, "agent_updates": int, "agent_episodes": int,
           "pending_pairs": int, "numpy_rng": dict, "rounds": list, "episodes": dict,
           "generation": int, "round": str, "store_chunks": list, "replay": (dict, type(None)),
           "dataset": dict}


@dataclasses.dataclass
class ResumePoint:
    """A saved round start, read back (see ``load``)."""

    directory: Path
    state: dict[str, Any]  # state.json's fields but its command and config
    files: dict[str, str]  # every file the point names (under ``directory``) -> its SHA-256
    dataset: PreferenceDataset
    reward: LoadedRewardModel
    tensors: dict[str, Any]
    payload: Path  # the round's folder: tensors.pt, pairs.npz, reward/

    @property
    def timestep(self) -> int:
        return int(self.state["timestep"])

    @property
    def rollout_start(self) -> dict[str, Any] | None:
        """The start of the round's rollout, which a resumed run steps again (None: the round is
        asked again at once, the env reset)."""
        return self.state.get("rollout_start")

    def restore_rollout_rngs(self, agent: BaseAlgorithm) -> None:
        """The RNGs, gSDE's noise and SB3's logger as at the start of the round's rollout (call
        at its start, after SB3 drew that rollout's noise)."""
        assert self.rollout_start is not None
        rollout_start.restore_rngs(agent, self.rollout_start, self.tensors["rollout_start"],
                                   self.payload / "tensors.pt", self.directory / STATE_FILE)

    def rewind_metrics(self, run_dir: Path) -> int:
        """Drop the rows ``run_dir``'s ``metrics.jsonl`` got after this point was saved (the killed
        run's rows of the round asked again and of the steps trained again); returns how many."""
        start = self.rollout_start  # where there is one, the rows from its start are logged again
        size = self.state.get("metrics_bytes") if start is None else start["metrics_bytes"]
        if size is None:  # a point saved without a run directory: rows past its step go
            return rewind_metrics(run_dir, after_step=self.timestep)
        return rewind_metrics(run_dir, size=size)

    def restore_rngs(self, rng: np.random.Generator) -> None:
        """The loop's numpy Generator and torch's global CPU RNG as they were at the save."""
        restore_numpy_rng(rng, self.state["numpy_rng"], self.directory / STATE_FILE)
        restore_torch_rng(self.tensors["torch_rng"], where=self.payload / "tensors.pt")

    def restore_agent(self, agent: BaseAlgorithm) -> None:
        """Networks, optimisers, counters and replay buffer into a fresh agent of the same config;
        where the point has the start of its round's rollout, the counters and the episode in
        progress as they were there (``restore_rollout_rngs`` follows at that rollout's start)."""
        restore_networks(agent, self.tensors["agent"], self.tensors["agent_variables"],
                         self.payload / "tensors.pt")
        agent.num_timesteps = self.timestep
        agent._n_updates = int(self.state["agent_updates"])
        agent._episode_num = int(self.state["agent_episodes"])
        replay = self.state["replay"]
        if isinstance(agent, OffPolicyAlgorithm) and agent.replay_buffer is not None and replay is not None:
            load_replay_chunks(agent.replay_buffer, self.directory, replay)
        if self.rollout_start is not None:
            rollout_start.restore_episode(agent, self.rollout_start, self.payload)


def save(loop: PreferenceRL, directory: Path, pending_pairs: int) -> int:
    """Write the resume point of a round about to ask ``pending_pairs`` pairs: what is new since
    the last point, then ``state.json`` (a run killed while writing keeps the previous point).

    Args:
        loop: the running loop.
        directory: the resume point's folder.
        pending_pairs: how many pairs the round asks.

    Returns:
        The bytes written (the new chunks, the round's files and ``state.json``).
    """
    directory.mkdir(parents=True, exist_ok=True)
    previous = peek(directory / STATE_FILE, KIND)
    generation = int(previous.get("generation", -1)) + 1 if previous else 0
    round_dir = f"round-{generation:07d}"
    shutil.rmtree(directory / round_dir, ignore_errors=True)  # a killed write's, named by no point
    start = loop.rollout_start
    _write_round(loop, directory / round_dir, start)
    stop = len(loop.store) if start is None else start.state["store_trajectories"]
    store_chunks, written = _save_store(loop.store, directory, previous, generation, stop)
    agent, replay = loop.agent, None
    if isinstance(agent, OffPolicyAlgorithm) and agent.replay_buffer is not None:
        replay, new = save_replay_chunks(agent.replay_buffer, directory, "replay",
                                         previous.get("replay") if previous else None,
                                         agent.num_timesteps, generation)
        written += new
    files = {chunk["file"]: chunk["sha256"] for chunk in store_chunks}
    files |= chunk_files(replay) if replay is not None else {}
    covers = payload_files(directory / round_dir)
    commit(directory / STATE_FILE, KIND, "pref-rl", loop.config.model_dump(mode="json"), {  # last
        **_state(loop, pending_pairs), "generation": generation, "round": round_dir,
        "store_chunks": store_chunks, "replay": replay, "dataset": _dataset_header(loop.dataset),
        "rollout_start": None if start is None else start.state,
    }, covers=covers, named=files)
    _remove_unnamed(directory, {STATE_FILE, round_dir, *files})
    return sum((directory / name).stat().st_size for name in [*written, STATE_FILE]) + sum(
        path.stat().st_size for path in covers)


def _save_store(store: TrajectoryStore, directory: Path, previous: dict[str, Any] | None,
                generation: int, stop: int) -> tuple[list[dict[str, Any]], list[str]]:
    """The chunk files of the store's first ``stop`` trajectories: the previous point's, and one
    of those added since."""
    chunks: list[dict[str, Any]] = list(previous.get("store_chunks", [])) if previous else []
    saved = chunks[-1]["stop"] if chunks else 0
    steps = sum(chunk["steps"] for chunk in chunks)
    if saved > stop or int(store.lengths[:saved].sum()) != steps:  # not this store's prefix
        chunks, saved = [], 0
    if saved == stop:
        return chunks, []
    name = f"store/traj-{saved:09d}-{stop:09d}-g{generation:07d}.npz"
    store.save(directory / name, saved, stop)
    chunks.append({"file": name, "start": saved, "stop": stop,
                   "steps": int(store.lengths[saved:stop].sum()), "sha256": sha256_file(directory / name)})
    return chunks, [name]


def _remove_unnamed(directory: Path, keep: set[str]) -> None:
    """Remove what no point names: superseded chunks, old round folders, a killed write's files."""
    for path in sorted(directory.iterdir()):
        if path.name in ("store", "replay") and path.is_dir():
            for chunk in path.iterdir():
                if f"{path.name}/{chunk.name}" not in keep:
                    chunk.unlink()
        elif path.name not in keep:
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def _dataset_header(dataset: PreferenceDataset) -> dict[str, Any]:
    scale = dataset.scale
    return {
        "n_pairs": len(dataset), "sources": dataset.source_names, "annotators": dataset.annotator_names,
        "meta_columns": sorted(dataset.meta),
        "scale": None if scale is None else {"name": scale.name, "levels": list(scale.levels),
                                              "names": list(scale.names)},
    }


def _write_round(loop: PreferenceRL, folder: Path, start: rollout_start.RolloutStart | None) -> None:
    """The round's own files: tensors, reward model, the labelled pairs (indices into the store),
    and the episode in progress at the start of its rollout."""
    dataset = loop.dataset
    pairs = dataset.pairs
    save_npz(folder / PAIRS_FILE, {
        "left": pairs.left, "right": pairs.right, "labels": dataset.labels,
        "sources": dataset.sources, "annotators": dataset.annotators,
        **{f"meta__{key}": column for key, column in dataset.meta.items()},
    })
    _write_tensors(loop, folder, start)
    save_reward_model(loop.model, folder / "reward", norm=loop.reward_norm if start is None else start.norm)
    if start is not None:
        save_npz(folder / rollout_start.EPISODE_FILE, start.episode)


def _write_tensors(loop: PreferenceRL, folder: Path, start: rollout_start.RolloutStart | None = None) -> None:
    params, variables = network_tensors(loop.agent)
    tensors = {
        "agent": params,
        "agent_variables": variables,
        "reward_optimizer": loop.trainer.optimizer.state_dict(),
        "torch_rng": torch_rng_state(),
        **({} if start is None else {"rollout_start": start.tensors}),
    }
    atomic_write_bytes(folder / "tensors.pt", lambda handle: torch.save(tensors, handle))


def _state(loop: PreferenceRL, pending_pairs: int) -> dict[str, Any]:
    agent = loop.agent
    return {
        "timestep": agent.num_timesteps,
        "agent_updates": agent._n_updates,
        "agent_episodes": agent._episode_num,
        "pending_pairs": pending_pairs,
        "numpy_rng": numpy_rng_state(loop.rng),
        "metrics_bytes": None if loop.run_dir is None else metrics_size(loop.run_dir),
        "teacher": loop.teacher_state(),
        "rounds": [dataclasses.asdict(r) for r in loop.result.rounds],
        "episodes": dataclasses.asdict(loop.result.episodes),
    }


def exists(directory: Path) -> bool:
    """Whether ``directory`` holds a resume point."""
    return (directory / STATE_FILE).is_file()


def load(directory: Path, config_json: dict[str, Any]) -> ResumePoint | None:
    """The resume point in ``directory``, or None when there is none; refused (naming the
    settings) when the run was started with another config."""
    if not exists(directory):
        return None
    point = read_point(directory / STATE_FILE, KIND, "pref-rl", config_json, _FIELDS, where=directory.parent)
    state = point.state
    payload = _check_chunked(directory, state, point.files)
    tensors_path = payload / "tensors.pt"
    try:
        tensors = torch.load(tensors_path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch's restricted unpickler raises its own kinds
        raise FileFormatError(f"{tensors_path}: missing or damaged ({error})") from None
    missing = {"agent", "agent_variables", "reward_optimizer", "torch_rng"} - set(
        tensors if isinstance(tensors, dict) else ())
    if missing:
        raise FileFormatError(f"{tensors_path}: missing {sorted(missing)}")
    check_torch_rng_state(tensors["torch_rng"], tensors_path)
    rollout_start.check(directory / STATE_FILE, state.get("rollout_start"), tensors, tensors_path)
    size = state.get("metrics_bytes")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise FileFormatError(f"{directory / STATE_FILE}: metrics_bytes={size!r} is not a byte count")
    restore_numpy_rng(np.random.default_rng(), state["numpy_rng"], directory / STATE_FILE)  # a check
    store = TrajectoryStore.load_chunks(directory / chunk["file"] for chunk in state["store_chunks"])
    dataset = _load_dataset(store, payload / PAIRS_FILE, state["dataset"])
    return ResumePoint(directory, state, point.files, dataset, load_reward_model(payload / "reward"), tensors,
                       payload)


def _check_chunked(directory: Path, state: dict[str, Any], files: dict[str, str]) -> Path:
    """The round folder of a point, after checking the fields that name its files."""
    where = directory / STATE_FILE
    round_dir = state["round"]
    if not round_dir.startswith("round-") or "/" in round_dir or not state["store_chunks"]:
        raise FileFormatError(f"{where}: round {round_dir!r} or its trajectory chunks are not a point's")
    for chunk in state["store_chunks"]:
        if not isinstance(chunk, dict) or chunk.get("file") not in files:
            raise FileFormatError(f"{where}: trajectory chunk {chunk!r} is not among its checksummed files")
    return directory / round_dir


def _load_dataset(store: TrajectoryStore, path: Path, header: dict[str, Any]) -> PreferenceDataset:
    """The labelled pairs ``_write_round`` saved, over ``store``, rebuilt through ``append`` (which
    checks every index and label) one run of rows of the same source and annotator at a time."""
    arrays = load_npz(path)
    try:
        scale_info = header["scale"]
        scale = None if scale_info is None else OrdinalScale(
            scale_info["name"], tuple(scale_info["levels"]), tuple(scale_info["names"]))
        left, right, labels = arrays["left"], arrays["right"], arrays["labels"]
        sources, annotators = arrays["sources"], arrays["annotators"]
        meta = {key: arrays[f"meta__{key}"] for key in header["meta_columns"]}
        pairs = SegmentPairs(store, left, right)
        dataset = PreferenceDataset(store, scale)
        dataset.source_names, dataset.annotator_names = list(header["sources"]), list(header["annotators"])
        origin = np.stack([sources, annotators], axis=1) if len(labels) else np.zeros((0, 2), str)
        edges = np.flatnonzero((origin[1:] != origin[:-1]).any(axis=1)) + 1
        for rows in np.split(np.arange(len(labels)), edges) if len(labels) else []:
            dataset.append(pairs.subset(rows), labels[rows], source=str(sources[rows[0]]),
                           annotator=str(annotators[rows[0]]),
                           meta={key: column[rows] for key, column in meta.items()})
    except (KeyError, TypeError, ValueError, IndexError) as error:  # InvalidDataError is a ValueError
        raise FileFormatError(f"{path}: not the labelled pairs of this point ({type(error).__name__}: "
                              f"{error})") from None
    if len(dataset) != header["n_pairs"]:
        raise FileFormatError(f"{path}: {len(dataset)} pairs, the point lists {header['n_pairs']}")
    return dataset


def check(directory: Path, config_json: dict[str, Any]) -> bool:
    """Whether ``directory`` holds a resume point of a run with these settings (before a run
    directory is used again); one started with other settings is refused, naming them."""
    if not exists(directory):
        return False
    read_point(directory / STATE_FILE, KIND, "pref-rl", config_json, _FIELDS, verify=False,
               where=directory.parent)
    return True

"""Where a killed ``rlkit pref-rl`` run picks up again: the start of its last query round.

The resume point is written just before each round draws its candidate pairs: the trajectories,
the labelled pairs, the reward model (and its optimiser and reward statistics), the agent's
networks and optimisers, an off-policy agent's replay buffer, the RNGs and the round records.
A resumed run restores all of it and asks that round again: the same RNG and the same data draw
the same pairs, so a simulated teacher gives the same labels and people's labels, stored under
those pairs, are found at once. Every query in the label store therefore names trajectories the
resume point holds. Nothing is pickled: tensors are read back with ``weights_only``, arrays from
``.npz`` without pickle, the rest is JSON. The point is written as a staged folder that replaces the
last one whole (``rlkit.persistence.atomic_dir``); ``state.json`` (format ``rlkit.prefrl.resume``)
lists the SHA-256 of every other file, so a damaged one is refused by name, never loaded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.save_util import recursive_getattr, recursive_setattr

from rlkit.errors import FileFormatError, InvalidDataError
from rlkit.feedback import PreferenceDataset
from rlkit.logging.local import metrics_size, rewind_metrics
from rlkit.persistence import atomic_dir, atomic_write_bytes, read_header, tag, write_header
from rlkit.persistence.formats import payload_files
from rlkit.persistence.replay import REPLAY_FILE, load_replay, save_replay
from rlkit.persistence.rng import (
    check_torch_rng_state,
    numpy_rng_state,
    restore_numpy_rng,
    restore_torch_rng,
    torch_rng_state,
)
from rlkit.reward import LoadedRewardModel, load_reward_model, save_reward_model

if TYPE_CHECKING:
    from rlkit.prefrl.loop import PreferenceRL

RESUME_DIR = "resume"
KIND = "rlkit.prefrl.resume"
FORMAT = tag(KIND)
STATE_FILE = "state.json"
_FIELDS = {"config": dict, "timestep": int, "agent_updates": int, "agent_episodes": int,
           "pending_pairs": int, "numpy_rng": dict, "rounds": list, "episodes": dict}
# May differ between the killed run and its resumption: more steps, and how long to wait for people.
FREE_TO_CHANGE = {("agent", "total_timesteps"), *(("teacher", "human", key) for key in
                                                  ("wait", "min_fraction", "timeout_s", "poll_s"))}


@dataclasses.dataclass
class ResumePoint:
    """A saved round start, read back (see ``load``)."""

    directory: Path
    state: dict[str, Any]
    dataset: PreferenceDataset
    reward: LoadedRewardModel
    tensors: dict[str, Any]

    @property
    def timestep(self) -> int:
        return int(self.state["timestep"])

    def rewind_metrics(self, run_dir: Path) -> int:
        """Drop the rows ``run_dir``'s ``metrics.jsonl`` got after this point was saved (the killed
        run's rows of the round asked again and of the steps trained again); returns how many."""
        size = self.state.get("metrics_bytes")
        if size is None:  # a point written before sizes were kept: rows past its step go
            return rewind_metrics(run_dir, after_step=self.timestep)
        return rewind_metrics(run_dir, size=size)

    def restore_rngs(self, rng: np.random.Generator) -> None:
        """The loop's numpy Generator and torch's global CPU RNG as they were at the save."""
        restore_numpy_rng(rng, self.state["numpy_rng"], self.directory / STATE_FILE)
        restore_torch_rng(self.tensors["torch_rng"], where=self.directory / "tensors.pt")

    def restore_agent(self, agent: BaseAlgorithm) -> None:
        """Networks, optimisers, counters and replay buffer into a fresh agent of the same config."""
        try:
            agent.set_parameters(self.tensors["agent"], exact_match=True, device=agent.device)
            for name, value in self.tensors["agent_variables"].items():
                recursive_setattr(agent, f"{name}.data", value.data)
        except (AttributeError, KeyError, RuntimeError, TypeError, ValueError) as error:
            raise FileFormatError(f"{self.directory / 'tensors.pt'}: does not fit this agent "
                                  f"({type(error).__name__}: {error})") from None
        agent.num_timesteps = self.timestep
        agent._n_updates = int(self.state["agent_updates"])
        agent._episode_num = int(self.state["agent_episodes"])
        if isinstance(agent, OffPolicyAlgorithm) and agent.replay_buffer is not None:
            load_replay(agent.replay_buffer, self.directory / REPLAY_FILE)


def save(loop: PreferenceRL, directory: Path, pending_pairs: int) -> None:
    """Write the resume point of a round about to ask ``pending_pairs`` pairs (atomically: a run
    killed while writing keeps the previous one)."""
    with atomic_dir(directory) as staging:
        _write(loop, staging, pending_pairs)


def _write(loop: PreferenceRL, folder: Path, pending_pairs: int) -> None:
    agent = loop.agent
    _, variables = agent._get_torch_save_params()  # the state dicts come from get_parameters()
    tensors = {
        "agent": agent.get_parameters(),
        "agent_variables": {name: recursive_getattr(agent, name) for name in variables or []},
        "reward_optimizer": loop.trainer.optimizer.state_dict(),
        "torch_rng": torch_rng_state(),
    }
    atomic_write_bytes(folder / "tensors.pt", lambda handle: torch.save(tensors, handle))
    if isinstance(agent, OffPolicyAlgorithm) and agent.replay_buffer is not None:
        save_replay(agent.replay_buffer, folder / REPLAY_FILE)
    loop.dataset.save(folder / "preferences")  # with the trajectories
    save_reward_model(loop.model, folder / "reward", norm=loop.reward_norm)
    covers = payload_files(folder)
    write_header(folder / STATE_FILE, KIND, {  # last: its presence marks a complete point
        "config": loop.config.model_dump(mode="json"),
        "timestep": agent.num_timesteps,
        "agent_updates": agent._n_updates,
        "agent_episodes": agent._episode_num,
        "pending_pairs": pending_pairs,
        "numpy_rng": numpy_rng_state(loop.rng),
        "metrics_bytes": None if loop.run_dir is None else metrics_size(loop.run_dir),
        "teacher": loop.teacher_state(),
        "rounds": [dataclasses.asdict(r) for r in loop.result.rounds],
        "episodes": dataclasses.asdict(loop.result.episodes),
    }, covers=covers)


def exists(directory: Path) -> bool:
    """Whether ``directory`` holds a resume point."""
    return (directory / STATE_FILE).is_file()


def load(directory: Path, config_json: dict[str, Any]) -> ResumePoint | None:
    """The resume point in ``directory``, or None when there is none; refused (naming the
    settings) when the run was started with another config."""
    if not exists(directory):
        return None
    state = read_header(directory / STATE_FILE, KIND, _FIELDS, verify=False)
    _check_settings(directory, state["config"], config_json)
    read_header(directory / STATE_FILE, KIND)  # now every payload file against its SHA-256
    tensors_path = directory / "tensors.pt"
    try:
        tensors = torch.load(tensors_path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch's restricted unpickler raises its own kinds
        raise FileFormatError(f"{tensors_path}: missing or damaged ({error})") from None
    missing = {"agent", "agent_variables", "reward_optimizer", "torch_rng"} - set(
        tensors if isinstance(tensors, dict) else ())
    if missing:
        raise FileFormatError(f"{tensors_path}: missing {sorted(missing)}")
    check_torch_rng_state(tensors["torch_rng"], tensors_path)
    size = state.get("metrics_bytes")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise FileFormatError(f"{directory / STATE_FILE}: metrics_bytes={size!r} is not a byte count")
    restore_numpy_rng(np.random.default_rng(), state["numpy_rng"], directory / STATE_FILE)  # a check
    return ResumePoint(directory, state, PreferenceDataset.load(directory / "preferences"),
                       load_reward_model(directory / "reward"), tensors)


def check(directory: Path, config_json: dict[str, Any]) -> bool:
    """Whether ``directory`` holds a resume point of a run with these settings (before a run
    directory is used again); one started with other settings is refused, naming them."""
    if not exists(directory):
        return False
    state = read_header(directory / STATE_FILE, KIND, _FIELDS, verify=False)
    _check_settings(directory, state["config"], config_json)
    return True


def _check_settings(directory: Path, saved: dict[str, Any], config_json: dict[str, Any]) -> None:
    changed = [".".join(key) for key in _differences(saved, config_json) if key not in FREE_TO_CHANGE]
    if changed:
        raise InvalidDataError(
            f"{directory.parent} holds a pref-rl run started with other settings for {changed}; "
            f"resume with the same config (only {sorted('.'.join(key) for key in FREE_TO_CHANGE)} "
            "may change) or use a new run directory"
        )


def _differences(saved: Any, given: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if isinstance(saved, dict) and isinstance(given, dict):
        for key in sorted(set(saved) | set(given)):
            yield from _differences(saved.get(key), given.get(key), (*prefix, key))
    elif saved != given:
        yield prefix

"""Where a killed ``rlkit pref-rl`` run picks up again: the start of its last query round.

The resume point is written just before each round draws its candidate pairs: the trajectories,
the labelled pairs, the reward model (and its optimiser and reward statistics), the agent's
networks and optimisers, an off-policy agent's replay buffer, the RNGs and the round records.
A resumed run restores all of it and asks that round again: the same RNG and the same data draw
the same pairs, so a simulated teacher gives the same labels and people's labels, stored under
those pairs, are found at once. Every query in the label store therefore names trajectories the
resume point holds. Nothing is pickled: tensors are read back with ``weights_only``, arrays from
``.npz`` without pickle, the rest is JSON.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.save_util import recursive_getattr, recursive_setattr

from rlkit.ail.resume import load_replay, save_replay
from rlkit.errors import FileFormatError, InvalidDataError
from rlkit.feedback import PreferenceDataset
from rlkit.persistence import atomic_write_bytes, atomic_write_json, read_format_json, replace_dir
from rlkit.reward import LoadedRewardModel, load_reward_model, save_reward_model

if TYPE_CHECKING:
    from rlkit.prefrl.loop import PreferenceRL

RESUME_DIR = "resume"
FORMAT = "rlkit.prefrl.resume/1"
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

    def restore_agent(self, agent: BaseAlgorithm) -> None:
        """Networks, optimisers, counters and replay buffer into a fresh agent of the same config."""
        agent.set_parameters(self.tensors["agent"], exact_match=True, device=agent.device)
        for name, value in self.tensors["agent_variables"].items():
            recursive_setattr(agent, f"{name}.data", value.data)
        agent.num_timesteps = self.timestep
        agent._n_updates = int(self.state["agent_updates"])
        agent._episode_num = int(self.state["agent_episodes"])
        if isinstance(agent, OffPolicyAlgorithm):
            load_replay(agent.replay_buffer, self.directory / "replay.npz")


def save(loop: PreferenceRL, directory: Path, pending_pairs: int) -> None:
    """Write the resume point of a round about to ask ``pending_pairs`` pairs (atomically: a run
    killed while writing keeps the previous one)."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", suffix=".tmp", dir=directory.parent))
    try:
        _write(loop, staging, pending_pairs)
        replace_dir(staging, directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _write(loop: PreferenceRL, folder: Path, pending_pairs: int) -> None:
    agent = loop.agent
    _, variables = agent._get_torch_save_params()  # the state dicts come from get_parameters()
    tensors = {
        "agent": agent.get_parameters(),
        "agent_variables": {name: recursive_getattr(agent, name) for name in variables or []},
        "reward_optimizer": loop.trainer.optimizer.state_dict(),
        "torch_rng": torch.get_rng_state(),
    }
    atomic_write_bytes(folder / "tensors.pt", lambda handle: torch.save(tensors, handle))
    if isinstance(agent, OffPolicyAlgorithm):
        save_replay(agent.replay_buffer, folder / "replay.npz")
    loop.dataset.save(folder / "preferences")  # with the trajectories
    save_reward_model(loop.model, folder / "reward", norm=loop.reward_norm)
    atomic_write_json(folder / "state.json", {  # last: its presence marks a complete point
        "format": FORMAT,
        "config": loop.config.model_dump(mode="json"),
        "timestep": agent.num_timesteps,
        "agent_updates": agent._n_updates,
        "agent_episodes": agent._episode_num,
        "pending_pairs": pending_pairs,
        "numpy_rng": loop.rng.bit_generator.state,
        "teacher": loop.teacher_state(),
        "rounds": [dataclasses.asdict(r) for r in loop.result.rounds],
        "episodes": dataclasses.asdict(loop.result.episodes),
    })


def exists(directory: Path) -> bool:
    """Whether ``directory`` holds a resume point."""
    return (directory / "state.json").is_file()


def load(directory: Path, config_json: dict[str, Any]) -> ResumePoint | None:
    """The resume point in ``directory``, or None when there is none; refused (naming the
    settings) when the run was started with another config."""
    state_path = directory / "state.json"
    if not exists(directory):
        return None
    state = read_format_json(state_path, FORMAT)
    changed = [".".join(key) for key in _differences(state["config"], config_json)
               if key not in FREE_TO_CHANGE]
    if changed:
        raise InvalidDataError(
            f"{directory.parent} holds a pref-rl run started with other settings for {changed}; "
            f"resume with the same config (only {sorted('.'.join(key) for key in FREE_TO_CHANGE)} "
            "may change) or use a new run directory"
        )
    try:
        tensors = torch.load(directory / "tensors.pt", map_location="cpu", weights_only=True)
    except Exception as error:  # torch's restricted unpickler raises its own kinds
        raise FileFormatError(f"{directory / 'tensors.pt'}: missing or damaged ({error})") from None
    return ResumePoint(directory, state, PreferenceDataset.load(directory / "preferences"),
                       load_reward_model(directory / "reward"), tensors)


def _differences(saved: Any, given: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if isinstance(saved, dict) and isinstance(given, dict):
        for key in sorted(set(saved) | set(given)):
            yield from _differences(saved.get(key), given.get(key), (*prefix, key))
    elif saved != given:
        yield prefix

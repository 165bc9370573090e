"""Per-round AIL checkpoints: generator policy, discriminator nets, round index, diagnostics.

Layout: ``<root>/round_000012/{generator.zip, generator.json, reward/, shaping/ (AIRL),
trainer_state.pt, meta.json}`` (the generator through ``rlkit.persistence.agents``: nothing unpickled)
and ``<root>/resume/replay.npz`` (the latest off-policy replay buffer). A checkpoint
is written in a staged folder and renamed into place (``rlkit.persistence.atomic_dir``), so a crash
mid-write leaves either no checkpoint or a complete one; listing only sees complete ones.
``meta.json`` (format ``rlkit.ail_checkpoint``) lists the SHA-256 of every other file, so a damaged
one is refused by name on load.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from rlkit.ail.discriminator import Discriminator, DiscriminatorConfig
from rlkit.ail.generator import GENERATORS, Generator
from rlkit.ail.resume import save_trainer_state
from rlkit.devices import resolve_device
from rlkit.errors import FileFormatError, InvalidDataError
from rlkit.factories.algorithms import ALGORITHMS
from rlkit.persistence import atomic_dir, read_header, tag, write_header
from rlkit.persistence.agents import load_agent, save_agent
from rlkit.persistence.formats import payload_files
from rlkit.reward import load_reward_model, save_reward_model

KIND = "rlkit.ail_checkpoint"
FORMAT = tag(KIND)
_FIELDS = {"round": int, "algo": str, "discriminator": dict, "diagnostics": dict}
META_FILE = "meta.json"
GENERATOR_NAME = "generator"  # generator.zip (SB3) + generator.json (rlkit.persistence.agents)
_NAME = re.compile(r"^round_(\d{6,})$")


@dataclass
class Checkpoint:
    """One loaded checkpoint (``CheckpointStore.load``).

    Attributes:
        round: the round's index, from 0.
        generator: the generator policy after the round (an SB3 PPO, SAC or DrQSAC model).
        discriminator: the discriminator after the round; its ``generator_reward`` is the reward
            the generator was trained on.
        diagnostics: the round's ``AILRound`` diagnostics, as ``AILRound.to_dict`` saved them.
    """

    round: int
    generator: Generator
    discriminator: Discriminator
    diagnostics: dict[str, Any]


class CheckpointStore:
    """Save every ``every``-th round under ``root``; list and load any saved round back.

    Args:
        root: the folder of the ``round_NNNNNN/`` checkpoints and of ``resume/``; created on the
            first save.
        every: save round ``k`` when ``k + 1`` is a multiple of it, >= 1 (1: every round).

    Raises:
        InvalidDataError: when ``every`` is below 1.
    """

    def __init__(self, root: str | os.PathLike[str], every: int = 1) -> None:
        if every < 1:
            raise InvalidDataError(f"every must be >= 1, got {every}")
        self.root = Path(root)
        self.every = every

    def wants(self, round_index: int) -> bool:
        """Rounds count from 0; round ``k`` is saved when ``k + 1`` is a multiple of ``every``."""
        return (round_index + 1) % self.every == 0

    def path(self, round_index: int) -> Path:
        return self.root / f"round_{round_index:06d}"

    def rounds(self) -> list[int]:
        """Indices of the complete checkpoints, ascending."""
        if not self.root.is_dir():
            return []
        found = (_NAME.match(p.name) for p in self.root.iterdir() if p.is_dir())
        return sorted(int(m.group(1)) for m in found if m and (self.root / m.group(0) / META_FILE).is_file())

    def latest(self) -> int | None:
        rounds = self.rounds()
        return rounds[-1] if rounds else None

    @property
    def resume_dir(self) -> Path:
        """Where the latest off-policy replay buffer lives (one copy, not one per round)."""
        return self.root / "resume"

    def save(self, round_index: int, generator: Generator, discriminator: Discriminator,
             diagnostics: dict[str, Any], trainer_state: dict[str, Any] | None = None) -> Path:
        """Write one checkpoint atomically (replacing an older one of the same round).

        ``trainer_state`` (discriminator optimiser and RNGs, see ``rlkit.ail.resume``) makes the
        checkpoint one a run can resume from."""
        if round_index < 0:
            raise InvalidDataError(f"round_index must be >= 0, got {round_index}")
        algo = type(generator).__name__
        if algo.lower() not in GENERATORS:
            raise InvalidDataError(f"generator must be one of {list(GENERATORS)}, got {algo}")
        final = self.path(round_index)
        with atomic_dir(final) as tmp:
            save_agent(generator, tmp / GENERATOR_NAME)
            save_reward_model(discriminator.reward_net, tmp / "reward")
            if discriminator.shaping_net is not None:
                save_reward_model(discriminator.shaping_net, tmp / "shaping")
            if trainer_state is not None:
                save_trainer_state(trainer_state, tmp)
            write_header(tmp / META_FILE, KIND, {
                "round": round_index, "algo": algo,
                "discriminator": discriminator.config.to_dict(), "diagnostics": diagnostics,
            }, covers=payload_files(tmp, exclude=[META_FILE]))
        return final

    def meta(self, round_index: int) -> dict[str, Any]:
        """A saved round's ``meta.json`` (format, round, algo, discriminator config, diagnostics)."""
        path = self.path(round_index) / META_FILE
        if not path.is_file():
            raise FileFormatError(f"{path}: no such checkpoint (saved rounds: {self.rounds()})")
        return _read_meta(path, verify=False)

    def load(self, round_index: int, device: str | torch.device = "cpu", env: VecEnv | None = None,
             ) -> Checkpoint:
        """Rebuild a saved round on ``device`` (a name of ``rlkit.devices`` or a torch device); a
        missing or damaged file raises FileFormatError naming it.

        ``env`` attaches the generator to an env so that it can go on training."""
        place = str(resolve_device(device))
        directory = self.path(round_index)
        if not (directory / META_FILE).is_file():
            raise FileFormatError(f"{directory / META_FILE}: no such checkpoint "
                                  f"(saved rounds: {self.rounds()})")
        meta = _read_meta(directory / META_FILE, verify=True)  # and every file it covers
        try:
            config = DiscriminatorConfig.from_dict(meta["discriminator"])
        except (TypeError, ValueError) as error:
            raise FileFormatError(f"{directory / META_FILE}: bad discriminator config ({error})") from None
        reward = load_reward_model(directory / "reward", device=place).model
        shaping = (load_reward_model(directory / "shaping", device=place).model
                   if config.loss == "airl" else None)
        generator = load_agent(ALGORITHMS, directory / GENERATOR_NAME, env=env, device=place)
        if not isinstance(generator, OnPolicyAlgorithm | OffPolicyAlgorithm):
            raise FileFormatError(f"{directory / GENERATOR_NAME}: a {type(generator).__name__}, not a "
                                  "PPO/SAC generator")
        discriminator = Discriminator(config, reward, shaping).to(place)  # type: ignore[arg-type]
        return Checkpoint(meta["round"], generator, discriminator, meta["diagnostics"])


def _read_meta(path: Path, verify: bool) -> dict[str, Any]:
    """The checked ``meta.json``; with ``verify``, every file it covers is checked too."""
    meta = read_header(path, KIND, _FIELDS, verify=verify)
    if meta["algo"].lower() not in GENERATORS:
        raise FileFormatError(f"{path}: algo {meta['algo']!r} is not one of {list(GENERATORS)}")
    return meta

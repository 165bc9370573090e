"""Save and load reward models as ``model.safetensors`` (weights) + ``model.json`` (specs, norm).

No pickle: weights are plain tensors, everything else is JSON, both readable without rlkit.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, NamedTuple

import safetensors.torch
from gymnasium import spaces

from rlkit.errors import FileFormatError, IncompatibleModelError, InvalidDataError
from rlkit.persistence import atomic_write_bytes, read_header, tag, write_header
from rlkit.persistence.formats import verify_checksums
from rlkit.persistence.reading import read_regular
from rlkit.reward.ensemble import RewardEnsemble
from rlkit.reward.nets import (
    RewardNet,
    RewardNetSpec,
    action_shape,
    observation_shape,
)
from rlkit.reward.normalize import NormalizedReward, RunningNorm
from rlkit.reward.numpy_rewards import TorchRewardFn
from rlkit.types import RewardFn

KIND = "rlkit.reward_model"
FORMAT = tag(KIND)
WEIGHTS_FILE = "model.safetensors"
SPEC_FILE = "model.json"


class LoadedRewardModel(NamedTuple):
    """A reward model read back by ``load_reward_model``.

    Attributes:
        model: the net or ensemble, with the saved weights.
        norm: the saved reward normaliser's statistics, None when the model was saved without.
    """

    model: RewardNet | RewardEnsemble
    norm: RunningNorm | None

    def reward_fn(self) -> RewardFn:
        """The numpy reward, normalised by the saved (frozen) statistics when there are any."""
        reward = TorchRewardFn(self.model)
        return reward if self.norm is None else NormalizedReward(reward, self.norm, update=False)


def save_reward_model(
    model: RewardNet | RewardEnsemble, directory: str | os.PathLike[str],
    norm: RunningNorm | None = None,
) -> Path:
    """Write both files atomically. The JSON, written last, records the weights' SHA-256, so a
    crash between the two writes or a damaged weights file is caught on load, never loaded.

    Args:
        model: a reward net or an ensemble.
        directory: the folder of ``model.safetensors`` and ``model.json`` (created).
        norm: the reward normaliser's statistics, saved with the model.

    Returns:
        ``directory``.
    """
    directory = Path(directory)
    state = {key: value.detach().cpu().contiguous() for key, value in model.state_dict().items()}
    weights = safetensors.torch.save(state, metadata={"format": FORMAT})
    specs = model.specs if isinstance(model, RewardEnsemble) else [model.spec]
    atomic_write_bytes(directory / WEIGHTS_FILE, lambda handle: handle.write(weights))
    write_header(directory / SPEC_FILE, KIND, {
        "model": "ensemble" if isinstance(model, RewardEnsemble) else "net",
        "ensemble_size": len(specs),
        "specs": [spec.to_dict() for spec in specs],
        "norm": None if norm is None else norm.state_dict(),
        "weights_sha256": hashlib.sha256(weights).hexdigest(),
    })
    return directory


def load_reward_model(
    directory: str | os.PathLike[str],
    observation_space: spaces.Space | None = None,
    action_space: spaces.Space | None = None,
    device: str = "cpu",
) -> LoadedRewardModel:
    """Rebuild a saved model; with spaces given, first check it fits the env they come from.

    Args:
        directory: a folder written by ``save_reward_model``.
        observation_space: the env's observation space, checked against the saved spec.
        action_space: the env's action space, checked against the saved spec.
        device: where the model is put.

    Returns:
        ``(model, norm)``; ``reward_fn()`` gives the numpy reward.

    Raises:
        FileFormatError: when a file is missing, damaged or of another format.
        IncompatibleModelError: when the model does not fit the spaces given.
    """
    directory = Path(directory)
    header, raw = _read_header(directory / SPEC_FILE)
    specs = header["specs"]
    if observation_space is not None or action_space is not None:
        check_spaces(specs[0], observation_space, action_space)
    weights = _read_bytes(directory / WEIGHTS_FILE)
    if hashlib.sha256(weights).hexdigest() != header["weights_sha256"]:
        raise FileFormatError(
            f"{directory / WEIGHTS_FILE}: contents do not match the SHA-256 in {SPEC_FILE} "
            f"(truncated, damaged, or from another save)"
        )
    try:
        state = safetensors.torch.load(weights)
    except Exception as error:  # safetensors raises its own error types
        raise FileFormatError(
            f"{directory / WEIGHTS_FILE}: not a safetensors file ({error})"
        ) from None
    members = [RewardNet(spec) for spec in specs]
    model = RewardEnsemble(members) if header["model"] == "ensemble" else members[0]
    try:
        model.load_state_dict(state)
    except RuntimeError as error:
        raise FileFormatError(
            f"{directory / WEIGHTS_FILE}: weights do not fit the specs in {SPEC_FILE} ({error})"
        ) from None
    verify_checksums(directory / SPEC_FILE, raw)  # the header's own digest, after the specific checks
    return LoadedRewardModel(model.to(device), header["norm"])


def check_spaces(spec: RewardNetSpec, observation_space: spaces.Space | None,
                 action_space: spaces.Space | None) -> None:
    """Raise IncompatibleModelError naming the first difference between a spec and env spaces."""
    try:
        if observation_space is not None:
            obs_shape = observation_shape(observation_space)
            if obs_shape != spec.obs_shape:
                raise IncompatibleModelError(
                    f"obs shape {spec.obs_shape} in {SPEC_FILE} vs {obs_shape} in the env"
                )
        if action_space is not None:
            act_shape, n_actions = action_shape(action_space)
            if n_actions != spec.n_actions:
                raise IncompatibleModelError(f"{_action_kind(spec.n_actions)} in {SPEC_FILE} vs "
                                             f"{_action_kind(n_actions)} in the env")
            if act_shape != spec.act_shape:
                raise IncompatibleModelError(
                    f"action shape {spec.act_shape} in {SPEC_FILE} vs {act_shape} in the env"
                )
    except InvalidDataError as error:
        raise IncompatibleModelError(f"the env's spaces are unsupported: {error}") from None


def _action_kind(n_actions: int | None) -> str:
    return "continuous actions" if n_actions is None else f"{n_actions} discrete actions"


def _read_bytes(path: Path) -> bytes:
    try:
        return read_regular(path, "safetensors")
    except FileNotFoundError:
        raise FileFormatError(f"{path}: no such file") from None
    except OSError as error:
        raise FileFormatError(f"{path}: cannot be read ({error})") from None


def _read_header(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The parsed ``model.json`` with its specs rebuilt, and as read; any defect becomes a
    FileFormatError."""
    header = read_header(path, KIND, {"model": str, "ensemble_size": int, "specs": list,
                                      "norm": (dict, type(None)), "weights_sha256": str}, verify=False)
    try:
        specs = [RewardNetSpec.from_dict(spec) for spec in header["specs"]]
        norm = None if header["norm"] is None else RunningNorm.from_state(header["norm"])
    except (InvalidDataError, AttributeError, KeyError, TypeError, ValueError) as error:
        raise FileFormatError(f"{path}: bad spec or normaliser ({type(error).__name__}: {error})") from None
    if header["model"] not in ("net", "ensemble") or len(specs) != header["ensemble_size"] or (
        header["model"] == "net" and len(specs) != 1
    ) or not specs:
        raise FileFormatError(
            f"{path}: model {header['model']!r} with ensemble_size {header['ensemble_size']} "
            f"and {len(specs)} specs is inconsistent"
        )
    return {**header, "specs": specs, "norm": norm}, header

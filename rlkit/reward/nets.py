"""Reward networks: a JSON-able spec, the torch module built from it, and a numpy adapter."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, overload

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from rlkit.errors import InvalidDataError

INPUT_NAMES = ("obs", "act", "next_obs", "done")
ACTIVATIONS: dict[str, type[nn.Module]] = {
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "leaky_relu": nn.LeakyReLU,
    "elu": nn.ELU,
    "silu": nn.SiLU,
    "gelu": nn.GELU,
}


@dataclass(frozen=True)
class RewardNetSpec:
    """Everything needed to rebuild a reward net, so a saved model is a spec plus weights.

    ``n_actions`` is the action count of a discrete action space (actions are one-hot encoded) and
    ``None`` for continuous actions. ``kind="cnn"`` expects uint8 ``H x W x C`` observations;
    ``channels`` are its convolution widths, ``hidden`` the widths of the MLP head.
    """

    kind: str
    obs_shape: tuple[int, ...]
    act_shape: tuple[int, ...]
    n_actions: int | None = None
    inputs: tuple[str, ...] = ("obs", "act")
    hidden: tuple[int, ...] = (256, 256)
    activation: str = "relu"
    channels: tuple[int, ...] = (16, 32, 32)

    def __post_init__(self) -> None:
        for name in ("obs_shape", "act_shape", "inputs", "hidden", "channels"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.kind not in ("mlp", "cnn"):
            raise InvalidDataError(f"kind must be 'mlp' or 'cnn', got {self.kind!r}")
        unknown = [name for name in self.inputs if name not in INPUT_NAMES]
        if not self.inputs or unknown or len(set(self.inputs)) != len(self.inputs):
            raise InvalidDataError(
                f"inputs must be distinct names from {INPUT_NAMES}, got {self.inputs}"
            )
        if self.activation not in ACTIVATIONS:
            raise InvalidDataError(
                f"activation must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}"
            )
        if any(int(h) < 1 for h in (*self.hidden, *self.channels)):
            raise InvalidDataError(f"hidden and channels must be >= 1, got {self.hidden}, "
                                   f"{self.channels}")
        if self.n_actions is not None and (self.n_actions < 1 or self.act_shape != ()):
            raise InvalidDataError(
                f"a discrete action space needs n_actions >= 1 and act_shape (), got "
                f"n_actions={self.n_actions}, act_shape={self.act_shape}"
            )
        if self.kind == "cnn" and len(self.obs_shape) != 3:
            raise InvalidDataError(f"kind 'cnn' needs H x W x C observations, got {self.obs_shape}")

    def to_dict(self) -> dict[str, Any]:
        return {key: list(v) if isinstance(v, tuple) else v for key, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RewardNetSpec:
        try:
            return cls(**data)
        except TypeError as error:
            raise InvalidDataError(f"not a reward net spec: {error}") from None


def observation_shape(space: spaces.Space) -> tuple[int, ...]:
    """The observation shape a reward net reads; only Box observations are supported."""
    if not isinstance(space, spaces.Box):
        raise InvalidDataError(f"observation_space must be a Box, got {type(space).__name__}")
    return tuple(space.shape)


def action_shape(space: spaces.Space) -> tuple[tuple[int, ...], int | None]:
    """(act_shape, n_actions): ``n_actions`` is the count of a Discrete space, None for a Box."""
    if isinstance(space, spaces.Discrete):
        if int(space.start) != 0:
            raise InvalidDataError(
                f"Discrete action spaces must start at 0, got start={int(space.start)}"
            )
        return (), int(space.n)
    if isinstance(space, spaces.Box):
        return tuple(space.shape), None
    raise InvalidDataError(f"action_space must be a Box or Discrete, got {type(space).__name__}")


def is_image_space(space: spaces.Space) -> bool:
    """uint8 ``H x W x C`` boxes with C in {1, 3, 4} are images (channel-last, like gymnasium)."""
    return (
        isinstance(space, spaces.Box)
        and space.dtype == np.uint8
        and len(space.shape) == 3
        and space.shape[-1] in (1, 3, 4)
    )


def build_reward_net(
    observation_space: spaces.Space,
    action_space: spaces.Space,
    inputs: Sequence[str] = ("obs", "act"),
    hidden: Sequence[int] = (256, 256),
    kind: str = "auto",
    activation: str = "relu",
    seed: int | None = None,
) -> RewardNet:
    """A reward net for an env's spaces; ``kind="auto"`` picks a CNN for image observations.

    Args:
        observation_space: the env's observation space; a Box (uint8 ``H x W x C`` for a CNN).
        action_space: the env's action space, a Box or a Discrete starting at 0 (one-hot encoded).
        inputs: what the net reads, distinct names from ``("obs", "act", "next_obs", "done")``.
        hidden: the widths of the MLP (or the CNN's MLP head), each >= 1.
        kind: ``"mlp"``, ``"cnn"`` or ``"auto"``.
        activation: a key of ``ACTIVATIONS`` (``"relu"``, ``"tanh"``, ...).
        seed: seeds the initial weights (without touching torch's global RNG); None: unseeded.

    Returns:
        The freshly initialised ``RewardNet``, its ``spec`` holding all of the above.

    Raises:
        InvalidDataError: on an unsupported space or an invalid input, width, kind or activation.
    """
    obs_shape = observation_shape(observation_space)
    act_shape, n_actions = action_shape(action_space)
    if kind == "auto":
        kind = "cnn" if is_image_space(observation_space) else "mlp"
    spec = RewardNetSpec(kind, obs_shape, act_shape, n_actions, tuple(inputs), tuple(hidden),
                         activation)
    return RewardNet(spec, seed=seed)


def _mlp(in_dim: int, hidden: Sequence[int], activation: str) -> nn.Sequential:
    layers: list[nn.Module] = []
    for width in hidden:
        layers += [nn.Linear(in_dim, width), ACTIVATIONS[activation]()]
        in_dim = width
    layers.append(nn.Linear(in_dim, 1))
    return nn.Sequential(*layers)


def _image_encoder(in_channels: int, channels: Sequence[int], activation: str) -> nn.Sequential:
    """Stride-2 3x3 convolutions: small, and valid for any image size (down to 1 x 1)."""
    layers: list[nn.Module] = []
    for width in channels:
        layers += [nn.Conv2d(in_channels, width, 3, stride=2, padding=1), ACTIVATIONS[activation]()]
        in_channels = width
    layers.append(nn.Flatten())
    return nn.Sequential(*layers)


class RewardNet(nn.Module):
    """r(s, a, s', done) for every step of a batch of any leading shape.

    Unselected inputs may be passed as ``None``: the trainer only gathers what the net reads.
    """

    def __init__(self, spec: RewardNetSpec, seed: int | None = None) -> None:
        super().__init__()
        self.spec = spec
        with torch.random.fork_rng(devices=[], enabled=seed is not None):
            if seed is not None:
                torch.manual_seed(seed)
            self.encoder, in_dim = self._build_encoder()
            self.head = _mlp(in_dim, spec.hidden, spec.activation)

    def _build_encoder(self) -> tuple[nn.Sequential | None, int]:
        spec = self.spec
        n_image = sum(name in spec.inputs for name in ("obs", "next_obs"))
        obs_dim = math.prod(spec.obs_shape)
        act_dim = spec.n_actions if spec.n_actions is not None else math.prod(spec.act_shape)
        flat_dim = ("act" in spec.inputs) * act_dim + ("done" in spec.inputs)
        if spec.kind == "mlp" or n_image == 0:
            return None, flat_dim + n_image * obs_dim
        height, width, channels = spec.obs_shape
        encoder = _image_encoder(n_image * channels, spec.channels, spec.activation)
        with torch.no_grad():
            features = encoder(torch.zeros(1, n_image * channels, height, width)).shape[1]
        return encoder, flat_dim + features

    def forward(
        self,
        obs: torch.Tensor | None,
        acts: torch.Tensor | None,
        next_obs: torch.Tensor | None,
        dones: torch.Tensor | None,
    ) -> torch.Tensor:
        features, lead = self.features(obs, acts, next_obs, dones)
        return self.head(features).reshape(lead)

    def features(
        self,
        obs: torch.Tensor | None,
        acts: torch.Tensor | None,
        next_obs: torch.Tensor | None,
        dones: torch.Tensor | None,
    ) -> tuple[torch.Tensor, tuple[int, ...]]:
        """What the MLP head reads, one row per step: ``(n, in_features)``, and the batch shape
        the ``n`` rows flatten. Without an image encoder the rows hold no learned weights, so
        nets reading the same inputs (an ensemble) share them.

        Args:
            obs, acts, next_obs, dones: the step inputs, any shared leading batch shape; those the
                net does not read may be None.

        Returns:
            The ``(n, in_features)`` float rows and the leading batch shape.
        """
        spec = self.spec
        given = {"obs": obs, "act": acts, "next_obs": next_obs, "done": dones}
        missing = [name for name in spec.inputs if given[name] is None]
        if missing:
            raise InvalidDataError(f"the reward net reads {missing} but got None for them")
        read = {name: tensor for name in spec.inputs if (tensor := given[name]) is not None}
        lead = self._leading_shape(read)
        n = math.prod(lead)
        images = [read[name].reshape(n, *spec.obs_shape) for name in ("obs", "next_obs")
                  if name in spec.inputs]
        parts: list[torch.Tensor] = []
        if self.encoder is not None:
            stacked = torch.cat(images, dim=-1).permute(0, 3, 1, 2).float() / 255.0
            parts.append(self.encoder(stacked))
        else:
            parts += [image.reshape(n, -1).float() for image in images]
        if "act" in spec.inputs:
            act = read["act"]
            if spec.n_actions is not None:
                act = nn.functional.one_hot(act.reshape(n).long(), spec.n_actions)
            parts.append(act.reshape(n, -1).float())
        if "done" in spec.inputs:
            parts.append(read["done"].reshape(n, 1).float())
        features = parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)
        return features, lead

    def _leading_shape(self, read: dict[str, torch.Tensor]) -> tuple[int, ...]:
        """The batch shape shared by every input the net reads (their trailing shapes checked)."""
        trailing = {"obs": self.spec.obs_shape, "next_obs": self.spec.obs_shape,
                    "act": self.spec.act_shape, "done": ()}
        leads = {}
        for name in self.spec.inputs:
            shape, expected = tuple(read[name].shape), trailing[name]
            ndim = len(shape) - len(expected)
            if ndim < 0 or shape[ndim:] != expected:
                raise InvalidDataError(
                    f"{name} must have shape (..., {', '.join(map(str, expected))}) for this "
                    f"reward net, got {shape}"
                )
            leads[name] = shape[:ndim]
        if len(set(leads.values())) > 1:
            raise InvalidDataError(f"inputs disagree on the batch shape: {leads}")
        return next(iter(leads.values()))


class TorchRewardFn:
    """A ``RewardFn`` over numpy batches for any reward module (net or ensemble): one
    inference-mode forward, float32 out, so env wrappers never touch torch.

    It runs on every environment step, where a handful of rows meets per-op dispatch costs of
    ~10 us each. For MLPs on continuous actions (on the CPU) it therefore builds the feature row in
    numpy and calls the MLP heads directly; anything else, or input that does not fit, goes
    through the module's own ``forward`` (which names what is wrong).
    """

    def __init__(self, module: nn.Module) -> None:
        self.module = module
        spec = getattr(module, "spec", None)
        self.reads = frozenset(spec.inputs if spec is not None else INPUT_NAMES)
        members = getattr(module, "members", [module])
        fast = spec is not None and spec.kind == "mlp" and spec.n_actions is None and all(
            isinstance(m, RewardNet) for m in members
        )
        self._heads = [m.head for m in members] if fast else None
        self._order = [n for n in ("obs", "next_obs", "act", "done") if n in self.reads]
        # .to() moves parameters in place, so this one parameter always knows the device
        self._probe = next(module.parameters())

    def __call__(
        self, obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray, dones: np.ndarray
    ) -> np.ndarray:
        given = dict(zip(INPUT_NAMES, (obs, acts, next_obs, dones), strict=True))
        device = self._probe.device
        if self._heads is not None and device.type == "cpu":
            rewards = self._mlp_rewards(given)
            if rewards is not None:
                return rewards
        tensors = [
            torch.as_tensor(_net_dtype(given[name]), device=device) if name in self.reads else None
            for name in INPUT_NAMES
        ]
        with torch.inference_mode():
            rewards = self.module(*tensors)
        return rewards.to(torch.float32).cpu().numpy()

    def _mlp_rewards(self, given: dict[str, np.ndarray]) -> np.ndarray | None:
        n = len(given["obs"])
        parts = [np.asarray(given[name]).reshape(n, -1) for name in self._order]
        features = np.concatenate(parts, axis=1, dtype=np.float32)
        heads = self._heads or []
        if features.shape[1] != heads[0][0].in_features:
            return None  # let the module's forward report the shape problem
        x = torch.from_numpy(features)
        with torch.inference_mode():
            total = heads[0](x)
            for head in heads[1:]:
                total = total + head(x)
        return (total.reshape(n) / len(heads)).numpy()


@overload
def numpy_to_tensors(module: nn.Module, *arrays: np.ndarray) -> Sequence[torch.Tensor]: ...
@overload
def numpy_to_tensors(module: nn.Module, *arrays: np.ndarray | None) -> Sequence[torch.Tensor | None]: ...
def numpy_to_tensors(module: nn.Module, *arrays: np.ndarray | None) -> Sequence[torch.Tensor | None]:
    """Arrays as tensors on the module's device. Float64 and bool become float32 (the net's
    dtype); integer and uint8 arrays keep their dtype (indices, images)."""
    device = next(module.parameters()).device
    return [None if array is None else torch.as_tensor(_net_dtype(array), device=device)
            for array in arrays]


def _net_dtype(array: np.ndarray) -> np.ndarray:
    array = np.asarray(array)
    return array.astype(np.float32) if array.dtype in (np.float64, np.bool_) else array

"""Reward networks: a JSON-able spec and the torch module built from it (the numpy adapter
that env wrappers call is ``rlkit.reward.numpy_rewards``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import torch
from gymnasium import spaces
from torch import nn

from rlkit.errors import InvalidDataError
from rlkit.reward.encoders import (
    ACTIVATIONS,
    DEFAULT_CHANNELS,
    ENCODERS,
    image_encoder,
    image_layout,
    is_image_space,
)

INPUT_NAMES = ("obs", "act", "next_obs", "done")
# Rows per pass through an MLP head: a block's activations stay in the CPU's cache, so a training
# step on APEC's 500k-state batches is ~1.3x faster on one thread than one pass over all rows
# (benchmarks/reward_head_rows.py); the values are the same and the gradients sum over the blocks.
HEAD_ROWS = 4096


@dataclass(frozen=True)
class RewardNetSpec:
    """Everything needed to rebuild a reward net, so a saved model is a spec plus weights.

    ``n_actions`` is the action count of a discrete action space (actions are one-hot encoded) and
    ``None`` for continuous actions. ``kind="cnn"`` reads uint8 images: ``C x H x W`` when
    ``channels_first`` (frame stacks, ``envs.pixels.StackFrames``), else ``H x W x C`` (gymnasium's
    layout); floats in [0, 255] are read too. ``obs`` and ``next_obs``, when both are read, are
    stacked on the channel axis and encoded together. ``hidden`` are the widths of the MLP head.

    ``encoder`` picks the convolutions (``channels`` their widths), see ``ENCODERS``:
    ``"compact"``: stride-2 3x3 convolutions with padding, pixels / 255, flattened straight into
    the head (cheap enough for CPU training: a 64 x 64 image becomes 8 x 8). ``"drq"``: the
    DrQ-v2 encoder of APEC's pixel reference (``apec_dmc/src/agent/encoder.py``): 3x3 convolutions
    without padding, the first of stride 2 and the rest stride 1, always ReLU, orthogonal
    initialisation, pixels / 255 - 0.5, then the reference's trunk ``Linear -> LayerNorm -> Tanh``
    to ``feature_dim`` features (``feature_dim`` is read by ``"drq"`` only).

    ``absorbing_flag``: the observation's last entry flags an absorbing state
    (``envs.fixed_horizon``) and the net's reward there is 0, so a padded trajectory's return sums
    its real steps only, as APEC's reference masks absorbing steps out of every return
    (apec_mjc/train_pbrl.py:32-42, f_div.py:238); read from ``obs`` (``next_obs`` when the net
    reads no ``obs``).

    ``linear_first``: no activation after the head's first hidden layer, as every reward MLP of
    APEC's reference (``first_fc``, then ``Linear -> activation`` blocks, then ``last_fc``:
    apec_mjc/model/reward.py:59-82,141-152, apec_dmc/src/reward/pref_reward.py:71-83). Its first
    two layers then compose to one linear map, so 2x512 acts as one hidden layer of 512 units.
    """

    kind: str
    obs_shape: tuple[int, ...]
    act_shape: tuple[int, ...]
    n_actions: int | None = None
    inputs: tuple[str, ...] = ("obs", "act")
    hidden: tuple[int, ...] = (256, 256)
    activation: str = "relu"
    channels: tuple[int, ...] = (16, 32, 32)
    channels_first: bool = False
    encoder: str = "compact"
    feature_dim: int = 50
    absorbing_flag: bool = False
    linear_first: bool = False

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
        if self.linear_first and not self.hidden:
            raise InvalidDataError("linear_first needs a hidden layer (hidden is empty)")
        if any(int(h) < 1 for h in (*self.hidden, *self.channels)):
            raise InvalidDataError(f"hidden and channels must be >= 1, got {self.hidden}, "
                                   f"{self.channels}")
        if self.n_actions is not None and (self.n_actions < 1 or self.act_shape != ()):
            raise InvalidDataError(
                f"a discrete action space needs n_actions >= 1 and act_shape (), got "
                f"n_actions={self.n_actions}, act_shape={self.act_shape}"
            )
        if self.kind == "cnn" and len(self.obs_shape) != 3:
            raise InvalidDataError(
                f"kind 'cnn' needs C x H x W or H x W x C observations, got {self.obs_shape}"
            )
        if self.channels_first and self.kind != "cnn":
            raise InvalidDataError("channels_first is a setting of kind 'cnn' only")
        if self.encoder not in ENCODERS:
            raise InvalidDataError(f"encoder must be one of {ENCODERS}, got {self.encoder!r}")
        if self.feature_dim < 1:
            raise InvalidDataError(f"feature_dim must be >= 1, got {self.feature_dim}")
        if self.absorbing_flag and (self.kind != "mlp" or len(self.obs_shape) != 1
                                    or self.flag_input is None):
            raise InvalidDataError("absorbing_flag needs an MLP reading flat obs or next_obs "
                                   f"(the flag their last entry), got kind {self.kind!r}, obs "
                                   f"{self.obs_shape}, inputs {self.inputs}")

    @property
    def flag_input(self) -> str | None:
        """The input whose last entry is the absorbing flag: ``obs``, else ``next_obs``."""
        return next((name for name in ("obs", "next_obs") if name in self.inputs), None)

    @property
    def image_size(self) -> tuple[int, int]:
        """``(H, W)`` of a CNN's images.

        Returns:
            Height and width in pixels.

        Raises:
            InvalidDataError: for kind ``"mlp"``.
        """
        if self.kind != "cnn":
            raise InvalidDataError(f"kind {self.kind!r} reads no images")
        height, width = self.obs_shape[1:] if self.channels_first else self.obs_shape[:2]
        return height, width

    def to_dict(self) -> dict[str, Any]:
        """The spec as JSON-able data; the image settings added later (``channels_first``,
        ``encoder``, ``feature_dim``) only when they differ from their defaults, so a spec
        without them reads as it always did.

        Returns:
            A dict of lists, strings, numbers and None that ``from_dict`` turns back into the spec.
        """
        data = {key: list(v) if isinstance(v, tuple) else v for key, v in asdict(self).items()}
        for name in _WRITTEN_WHEN_SET:
            if data[name] == _FIELD_DEFAULTS[name]:
                del data[name]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RewardNetSpec:
        try:
            return cls(**data)
        except TypeError as error:
            raise InvalidDataError(f"not a reward net spec: {error}") from None


_WRITTEN_WHEN_SET = ("channels_first", "encoder", "feature_dim", "absorbing_flag", "linear_first")
_FIELD_DEFAULTS = {f.name: f.default for f in fields(RewardNetSpec)}


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


def build_reward_net(
    observation_space: spaces.Space,
    action_space: spaces.Space,
    inputs: Sequence[str] = ("obs", "act"),
    hidden: Sequence[int] = (256, 256),
    kind: str = "auto",
    activation: str = "relu",
    seed: int | None = None,
    encoder: str = "compact",
    channels: Sequence[int] | None = None,
    feature_dim: int = 50,
    absorbing_flag: bool = False,
    linear_first: bool = False,
) -> RewardNet:
    """A reward net for an env's spaces; ``kind="auto"`` picks a CNN for image observations.

    Args:
        observation_space: the env's observation space; a Box (for a CNN a 3-d one, channel-first
            or channel-last as ``image_layout`` reads its shape).
        action_space: the env's action space, a Box or a Discrete starting at 0 (one-hot encoded).
        inputs: what the net reads, distinct names from ``("obs", "act", "next_obs", "done")``.
        hidden: the widths of the MLP (or the CNN's MLP head), each >= 1.
        kind: ``"mlp"``, ``"cnn"`` or ``"auto"``.
        activation: a key of ``ACTIVATIONS`` (``"relu"``, ``"tanh"``, ...).
        seed: seeds the initial weights (without touching torch's global RNG); None: unseeded.
        encoder: a CNN's convolutions, ``"compact"`` or ``"drq"`` (``RewardNetSpec``).
        channels: a CNN's convolution widths; None: ``DEFAULT_CHANNELS[encoder]``.
        feature_dim: the width of the ``"drq"`` encoder's LayerNorm trunk (APEC's reference: 50).
        absorbing_flag: reward 0 on the absorbing states a last observation entry flags
            (``RewardNetSpec``).
        linear_first: no activation after the head's first hidden layer (APEC's reference
            MLPs, ``RewardNetSpec``).

    Returns:
        The freshly initialised ``RewardNet``, its ``spec`` holding all of the above.

    Raises:
        InvalidDataError: on an unsupported space, an image too small for the encoder, or an
            invalid input, width, kind, encoder or activation.
    """
    obs_shape = observation_shape(observation_space)
    act_shape, n_actions = action_shape(action_space)
    if kind == "auto":
        kind = "cnn" if is_image_space(observation_space) else "mlp"
    layout = image_layout(obs_shape) if kind == "cnn" else None
    if kind == "cnn" and layout is None:
        raise InvalidDataError(
            f"kind 'cnn' needs C x H x W or H x W x C observations (channels the smallest axis), "
            f"got {obs_shape}"
        )
    spec = RewardNetSpec(kind, obs_shape, act_shape, n_actions, tuple(inputs), tuple(hidden),
                         activation, DEFAULT_CHANNELS.get(encoder, ()) if channels is None
                         else tuple(channels), layout == "channels_first", encoder, feature_dim,
                         absorbing_flag, linear_first)
    return RewardNet(spec, seed=seed)


def _mlp(in_dim: int, hidden: Sequence[int], activation: str, linear_first: bool) -> nn.Sequential:
    """``Linear -> activation`` per hidden width, then ``Linear(., 1)``; ``linear_first`` puts an
    ``nn.Identity`` after the first (parameter names stay ``head.0``, ``head.2``, ...)."""
    layers: list[nn.Module] = []
    for k, width in enumerate(hidden):
        layers += [nn.Linear(in_dim, width),
                   nn.Identity() if linear_first and k == 0 else ACTIVATIONS[activation]()]
        in_dim = width
    layers.append(nn.Linear(in_dim, 1))
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
            self.head = _mlp(in_dim, spec.hidden, spec.activation, spec.linear_first)
        self.head_rows: int | None = HEAD_ROWS  # None: every row in one pass
        # linear_first: the first two layers as one map on large batches (run_head); False runs
        # them layer by layer (the baseline of benchmarks/reward_linear_first.py)
        self.compose_first = True

    def _build_encoder(self) -> tuple[nn.Sequential | None, int]:
        spec = self.spec
        n_image = sum(name in spec.inputs for name in ("obs", "next_obs"))
        obs_dim = math.prod(spec.obs_shape)
        act_dim = spec.n_actions if spec.n_actions is not None else math.prod(spec.act_shape)
        flat_dim = ("act" in spec.inputs) * act_dim + ("done" in spec.inputs)
        if spec.kind == "mlp" or n_image == 0:
            return None, flat_dim + n_image * obs_dim
        height, width = spec.image_size
        channels = spec.obs_shape[0 if spec.channels_first else 2]
        encoder, features = image_encoder(spec.encoder, n_image * channels, height, width,
                                          spec.channels, spec.activation, spec.feature_dim)
        return encoder, flat_dim + features

    def forward(
        self,
        obs: torch.Tensor | None,
        acts: torch.Tensor | None,
        next_obs: torch.Tensor | None,
        dones: torch.Tensor | None,
    ) -> torch.Tensor:
        features, lead = self.features(obs, acts, next_obs, dones)
        real = self._real_steps(obs, next_obs).reshape(-1) if self.spec.absorbing_flag else None
        if real is None or bool(real.all()):
            return self.run_head(features).reshape(lead)
        # only the real steps run through the head (Hopper's early checkpoints fall early: much
        # of a padded rollout is absorbing); the absorbing ones are 0
        rewards = self.run_head(features[real]).reshape(-1)
        out = rewards.new_zeros(real.shape)
        out[real] = rewards
        return out.reshape(lead)

    def run_head(self, features: torch.Tensor) -> torch.Tensor:
        """The MLP head on ``features`` (rows, dim), ``head_rows`` rows at a time when there are
        more. With ``linear_first``, on at least as many rows as the first layer is wide and fewer
        inputs than that width, the first two layers run as the one linear map they compose
        (weight ``W2 W1``, bias ``W2 b1 + b2``): the same function and gradients up to float
        rounding, at ``in x h2`` multiplications per row instead of ``in x h1 + h1 x h2`` (APEC's
        2x512 head on 11-17 state entries: ~30x fewer)."""
        head: Callable[[torch.Tensor], torch.Tensor] = self.head
        first = self.head[0]
        assert isinstance(first, nn.Linear)  # _mlp's first layer
        if (self.spec.linear_first and self.compose_first
                and first.in_features < first.out_features <= len(features)):
            second, rest = self.head[2], self.head[3:]
            assert isinstance(second, nn.Linear)
            weight = second.weight @ first.weight
            bias = torch.addmv(second.bias, second.weight, first.bias)

            def head(rows: torch.Tensor) -> torch.Tensor:
                return rest(nn.functional.linear(rows, weight, bias))

        if self.head_rows is None or len(features) <= self.head_rows:
            return head(features)
        return torch.cat([head(block) for block in features.split(self.head_rows)])

    def masked(self, rewards: torch.Tensor, obs: torch.Tensor | None,
               next_obs: torch.Tensor | None) -> torch.Tensor:
        """``rewards`` (any shape ending in the steps' batch shape) with 0 at the absorbing steps
        when the spec has ``absorbing_flag``; unchanged otherwise."""
        if not self.spec.absorbing_flag:
            return rewards
        return rewards * self._real_steps(obs, next_obs).to(rewards.dtype)

    def _real_steps(self, obs: torch.Tensor | None, next_obs: torch.Tensor | None) -> torch.Tensor:
        """Per step: is its flagged observation a real (non-absorbing) state?"""
        flagged = obs if self.spec.flag_input == "obs" else next_obs
        assert flagged is not None  # features() checked the inputs the net reads
        return flagged[..., -1] < 0.5

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
            parts.append(self.encoder(self._pixels(images)))
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

    def _pixels(self, images: list[torch.Tensor]) -> torch.Tensor:
        """The images read, stacked on the channel axis, ``(n, C, H, W)`` floats as the encoder
        takes them (pixels / 255, centred for ``"drq"``)."""
        if self.spec.channels_first:
            stacked = torch.cat(images, dim=1)
        else:
            stacked = torch.cat(images, dim=-1).permute(0, 3, 1, 2)
        pixels = stacked.float() / 255.0
        return pixels - 0.5 if self.spec.encoder == "drq" else pixels

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

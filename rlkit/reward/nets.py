"""Reward networks: the torch module built from a ``RewardNetSpec`` (``rlkit.reward.spec``; the
numpy adapter that env wrappers call is ``rlkit.reward.numpy_rewards``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from rlkit.data.absorbing import is_absorbing
from rlkit.errors import InvalidDataError
from rlkit.reward.encoders import (
    ACTIVATIONS,
    DEFAULT_CHANNELS,
    image_encoder,
    image_layout,
    is_image_space,
)
from rlkit.reward.spec import (
    IMAGE_INPUTS,
    INPUT_NAMES,
    RewardNetSpec,
    action_shape,
    observation_shape,
)

# Rows per pass through an MLP head: a block's activations stay in the CPU's cache, so a training
# step on APEC's 500k-state batches is ~1.3x faster on one thread than one pass over all rows
# (benchmarks/reward_head_rows.py); the values are the same and the gradients sum over the blocks.
HEAD_ROWS = 4096


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

    Args:
        spec: the architecture and the spaces' shapes (saved with the weights).
        seed: seeds the weights' initialisation without touching torch's global RNG (None:
            drawn from torch's global RNG).
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
        self._row_inputs, self._row_width = spec.feature_inputs, in_dim  # for numpy_features

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
        return ~is_absorbing(flagged)

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
        given = dict(zip(INPUT_NAMES, (obs, acts, next_obs, dones), strict=True))
        missing = [name for name in spec.inputs if given[name] is None]
        if missing:
            raise InvalidDataError(f"the reward net reads {missing} but got None for them")
        read = {name: tensor for name in spec.inputs if (tensor := given[name]) is not None}
        lead = self._leading_shape(read)
        n = math.prod(lead)
        parts: list[torch.Tensor] = []
        if self.encoder is not None:
            parts.append(self.encoder(self._pixels([read[name].reshape(n, *spec.obs_shape)
                                                    for name in spec.feature_inputs
                                                    if name in IMAGE_INPUTS])))
        for name in spec.feature_inputs:
            if self.encoder is not None and name in IMAGE_INPUTS:
                continue  # encoded together above
            value = read[name]
            if name == "act" and spec.n_actions is not None:
                parts.append(nn.functional.one_hot(value.reshape(n).long(), spec.n_actions).float())
            else:
                parts.append(value.reshape(n, math.prod(value.shape[len(lead):])).float())
        features = parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)
        return features, lead

    def numpy_features(self, inputs: Mapping[str, np.ndarray]) -> np.ndarray | None:
        """``features`` of numpy inputs with a first batch axis, for a net whose spec has
        ``flat_features``: the same rows, built without a torch op (a few µs on an env step's
        handful of rows, where each torch op costs ~10 µs).

        Args:
            inputs: the step inputs by name (at least those the net reads), each ``(n, ...)``.

        Returns:
            The ``(n, in_features)`` float32 rows, or None when the inputs do not fit the head
            (``features`` names what is wrong).
        """
        n = len(inputs[self._row_inputs[0]])
        parts = []
        for name in self._row_inputs:
            array = np.asarray(inputs[name])
            if len(array) != n:
                return None
            parts.append(array.reshape(n, math.prod(array.shape[1:])))
        rows = np.concatenate(parts, axis=1, dtype=np.float32)
        return rows if rows.shape[1] == self._row_width else None

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

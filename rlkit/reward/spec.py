"""The JSON-able spec a reward net is built from (``rlkit.reward.nets``), and the spaces' shapes it
records."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from gymnasium import spaces

from rlkit.errors import InvalidDataError
from rlkit.reward.encoders import ACTIVATIONS, ENCODERS

INPUT_NAMES = ("obs", "act", "next_obs", "done")
# The order of the inputs' entries in a head's feature row (a CNN's images first, encoded together)
FEATURE_ORDER = ("obs", "next_obs", "act", "done")
IMAGE_INPUTS = ("obs", "next_obs")


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
    (``envs.fixed_horizon``, ``rlkit.data.absorbing``) and the net's reward there is 0, so a
    padded trajectory's return sums its real steps only, as APEC's reference masks absorbing
    steps out of every return
    (apec_mjc/train_pbrl.py:32-42, f_div.py:238); read from ``obs`` (``next_obs`` when the net
    reads no ``obs``).

    ``linear_first``: no activation after the head's first hidden layer, as every reward MLP of
    APEC's reference (``first_fc``, then ``Linear -> activation`` blocks, then ``last_fc``:
    apec_mjc/model/reward.py:59-82,141-152, apec_dmc/src/reward/pref_reward.py:71-83). Its first
    two layers then compose to one linear map, so 2x512 acts as one hidden layer of 512 units.

    Attributes:
        kind: ``"mlp"`` or ``"cnn"`` (reads images of 3 dimensions).
        obs_shape: the observation shape.
        act_shape: the action shape (``()`` for a discrete action space).
        n_actions: the action count of a discrete action space, None for continuous actions.
        inputs: the distinct inputs the net reads, from ``"obs"``, ``"act"``, ``"next_obs"``
            and ``"done"``.
        hidden: the widths of the MLP head's hidden layers, each >= 1.
        activation: the head's activation, a name of ``ACTIVATIONS``.
        channels: the widths of a CNN's convolutions, each >= 1.
        channels_first: a CNN's images are ``C x H x W`` (else ``H x W x C``).
        encoder: a CNN's convolutions, ``"compact"`` or ``"drq"``.
        feature_dim: the features of the ``"drq"`` encoder's trunk, >= 1.
        absorbing_flag: the observation's last entry flags an absorbing state, where the reward
            is 0.
        linear_first: no activation after the head's first hidden layer.
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
    def feature_inputs(self) -> tuple[str, ...]:
        """The inputs read, in the order of their entries in the head's feature row."""
        return tuple(name for name in FEATURE_ORDER if name in self.inputs)

    @property
    def flat_features(self) -> bool:
        """Is the head's feature row the read inputs' entries as they are (an MLP on continuous
        actions: no encoder, no one-hot), so that numpy can build it (``RewardNet.numpy_features``)?"""
        return self.kind == "mlp" and self.n_actions is None

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
        """The spec as JSON-able data, every field written.

        Returns:
            A dict of lists, strings, numbers and None that ``from_dict`` turns back into the spec.
        """
        return {key: list(v) if isinstance(v, tuple) else v for key, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RewardNetSpec:
        """The spec ``to_dict`` wrote.

        Args:
            data: every field of the spec, by name.

        Returns:
            The spec.

        Raises:
            InvalidDataError: when a field is missing (a spec written with fewer fields is
                refused, not filled in with defaults), unknown or invalid.
        """
        missing = [f.name for f in fields(cls) if f.name not in data]
        if missing:
            raise InvalidDataError(f"not a reward net spec: it lacks {missing}")
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

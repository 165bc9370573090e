"""A fixed pixel encoder for CPU-scale pixel agents: where each object's colour is in each frame.

``ColourKeypoints`` reads the channel-first frame stacks every pixel network in rlkit reads
(``(k * 3, H, W)``, SB3 scales them to ``[0, 1]``) and returns, for every stacked frame and every
listed colour, the centroid ``(x, y)`` of the pixels of exactly that colour (in ``[-1, 1]``, y up)
and whether any pixel has it (1 or 0; a missing colour's centroid is 0). Positions in k frames give
an MLP velocities too. It learns nothing: it is a hand-designed encoder for flat-coloured scenes
(``envs.pixels``' tasks list their colours in ``KEYPOINT_COLOURS``), in the spirit of spatial-softmax
keypoints (Levine et al. 2016) without their training.

Why it exists: a learned conv encoder trained by SAC's critic (``PixelEncoder``) makes a few
gradient updates a second on this 2-core CPU and had not learned the pixel tasks after 12-20k env
steps (``rlkit.factories.pixel_sac``'s docstring); an agent that acts from these keypoints trains
at MLP speed. APEC's pixel experiment uses it for the agents that only have to act (demonstrator,
AIL generator); every network whose features are the method (discriminator, reward models, D-REX's
BC policy) learns its own conv encoder from the raw frames.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

from rlkit.errors import InvalidDataError

__all__ = ["ColourKeypoints"]

PACK = torch.tensor([65536.0, 256.0, 1.0])  # RGB (0-255 each) -> one number; a pixel has a colour
# when its channels, rounded to 0-255, are exactly that colour's


class ColourKeypoints(BaseFeaturesExtractor):
    """Per frame and colour: centroid x, centroid y, present. ``features_dim = k * len(colours) * 3``.

    Args:
        observation_space: a channel-first image Box ``(k * 3, H, W)``.
        colours: the RGB colours (0-255) of the objects to locate, at least one.
        features_dim: ignored unless given, then it must equal ``k * len(colours) * 3`` (SB3 and
            rlkit's policy settings pass it for every encoder).

    Raises:
        InvalidDataError: on a space that is not ``(k * 3, H, W)``, no colours, a colour that is not
            three numbers in 0-255, or a ``features_dim`` that disagrees.
    """

    codes: torch.Tensor  # buffers (follow the module's device), not weights
    xs: torch.Tensor
    ys: torch.Tensor

    def __init__(self, observation_space: spaces.Box, colours: Sequence[Sequence[float]] = (),
                 features_dim: int | None = None) -> None:
        shape = observation_space.shape
        if len(shape) != 3 or shape[0] % 3:
            raise InvalidDataError(f"ColourKeypoints needs channel-first RGB frame stacks (k * 3, H, W), "
                                   f"got {shape}")
        table = torch.as_tensor(colours, dtype=torch.float32)
        if table.ndim != 2 or table.shape[0] == 0 or table.shape[1] != 3 or not (
                (table >= 0) & (table <= 255)).all():
            raise InvalidDataError(f"colours must be a non-empty list of [r, g, b] in 0-255, got {colours!r}")
        frames = shape[0] // 3
        dim = frames * table.shape[0] * 3
        if features_dim is not None and features_dim != dim:
            raise InvalidDataError(f"ColourKeypoints of {frames} frames and {table.shape[0]} colours has "
                                   f"{dim} features, not features_dim={features_dim}")
        super().__init__(observation_space, dim)
        self.frames = frames
        codes = table.round() @ PACK  # one number per colour (exact in float32: < 2**24)
        self.register_buffer("codes", codes.view(1, 1, -1, 1, 1), persistent=False)
        height, width = shape[1], shape[2]
        xs = (torch.arange(width, dtype=torch.float32) + 0.5) / width * 2 - 1
        ys = 1 - (torch.arange(height, dtype=torch.float32) + 0.5) / height * 2  # row 0 is the top
        self.register_buffer("xs", xs, persistent=False)
        self.register_buffer("ys", ys, persistent=False)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        """Keypoints of a batch of stacks scaled to ``[0, 1]`` (SB3's preprocessing of uint8 images).

        Args:
            observations: ``(n, k * 3, H, W)`` floats in ``[0, 1]``.

        Returns:
            ``(n, k * len(colours) * 3)``: for frame 0's colour 0 ``x, y, present``, then frame 0's
            colour 1, ..., frame k-1's last colour.
        """
        n, _, height, width = observations.shape
        levels = (observations.reshape(n, self.frames, 3, height, width) * 255).round()
        packed = levels[:, :, 0] * PACK[0] + levels[:, :, 1] * PACK[1] + levels[:, :, 2]
        masks = torch.eq(packed.unsqueeze(2), self.codes).float()  # (n, k, C, H, W)
        columns, rows = masks.sum(dim=3), masks.sum(dim=4)  # per column (n, k, C, W), per row
        counts = columns.sum(dim=3)
        x = columns @ self.xs / counts.clamp(min=1)
        y = rows @ self.ys / counts.clamp(min=1)
        return torch.stack([x, y, (counts > 0).float()], dim=3).reshape(n, -1)

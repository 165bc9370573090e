"""DrQ-style random-shift augmentation for batches of channel-first images."""

from __future__ import annotations

import torch

from rlkit.errors import InvalidDataError

__all__ = ["random_shift"]


def random_shift(
    images: torch.Tensor, pad: int = 4, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Shift every image of a batch by its own random whole-pixel offset, as DrQ does.

    Each image is padded by ``pad`` pixels on every side with its edge pixels repeated
    ("replicate" padding) and cropped back to ``H x W`` at a uniformly drawn offset in
    ``{0, ..., 2 * pad}`` along each axis, independently per image and per axis; all channels of
    one image (a frame stack) move together. The pad-and-crop is done as clamped index gathers,
    so nothing the size of the padded batch is allocated.

    DrQ-v2 (``RandomShiftsAug``, also used by the APEC reference) does the same with
    ``F.grid_sample``: bilinear sampling of a pixel-centre grid moved by a whole number of
    padded-image pixels. Its sample points fall on pixel centres, so it is this integer crop
    up to float rounding; it needs square float images, this works on any ``H x W`` and dtype.

    Args:
        images: an ``(N, C, H, W)`` tensor, uint8 or floating point, on any device.
        pad: the largest shift in pixels, >= 0; 0 returns the images unchanged (a copy).
        generator: the torch RNG the shifts are drawn from (on the CPU or on the images'
            device); the same generator state gives the same shifts. None: torch's global RNG.

    Returns:
        A new ``(N, C, H, W)`` tensor with the input's dtype and device (uint8 stays uint8;
        networks divide by 255 themselves).

    Raises:
        InvalidDataError: if ``images`` is not 4-dimensional or ``pad`` is negative.
    """
    if images.ndim != 4:
        raise InvalidDataError(
            f"random_shift needs (N, C, H, W) images, got shape {tuple(images.shape)}"
        )
    if pad < 0:
        raise InvalidDataError(f"pad must be >= 0, got {pad}")
    n, channels, height, width = images.shape
    draw_device = generator.device if generator is not None else images.device
    shifts = torch.randint(0, 2 * pad + 1, (n, 2), generator=generator, device=draw_device)
    shifts = shifts.to(images.device) - pad
    # column shift first, as in DrQ-v2's (x, y) grid offsets
    cols = (torch.arange(width, device=images.device) + shifts[:, :1]).clamp_(0, width - 1)
    rows = (torch.arange(height, device=images.device) + shifts[:, 1:]).clamp_(0, height - 1)
    rows = rows[:, None, :, None].expand(n, channels, height, width)
    cols = cols[:, None, None, :].expand(n, channels, height, width)
    return images.gather(2, rows).gather(3, cols)

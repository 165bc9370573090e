"""DrQ-style random-shift augmentation for batches of channel-first images."""

from __future__ import annotations

import torch

from rlkit.errors import InvalidDataError

__all__ = ["REFERENCE_PAD", "default_pad", "random_shift", "shift_observations"]

REFERENCE_PAD = (4, 84)  # DrQ-v2 / APEC's RandomShiftsAug: pad 4 on 84 x 84 frames


def default_pad(height: int, width: int) -> int:
    """The reference's shift scaled to an image size: 4 pixels per 84, rounded (3 on 64 x 64,
    1 on 16 x 16, 0 below 11 pixels, where a shift would move most of the picture out).

    Args:
        height: image height in pixels.
        width: image width in pixels.

    Returns:
        The pad, >= 0.
    """
    pad, side = REFERENCE_PAD
    return round(pad * min(height, width) / side)


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


def shift_observations(
    batch: dict[str, torch.Tensor], pad: int, generator: torch.Generator | None,
    channels_first: bool = True,
) -> dict[str, torch.Tensor]:
    """``random_shift`` of the image observations of a batch of steps, for training.

    Every step (any leading batch shape) draws its own shift; its ``obs`` and ``next_obs`` (when
    the batch holds both) move together, so a net that stacks the two keeps their relative
    motion. Other entries are passed through untouched.

    Args:
        batch: tensors keyed by name; ``obs`` and ``next_obs``, where present and not None, are
            images ``(..., C, H, W)`` (``(..., H, W, C)`` when not ``channels_first``).
        pad: the largest shift in pixels, >= 0.
        generator: the torch RNG of the shifts (see ``random_shift``).
        channels_first: the images' layout.

    Returns:
        A new dict with the shifted observations (same shapes and dtypes) and the other entries.

    Raises:
        InvalidDataError: if ``obs`` and ``next_obs`` differ in shape or are not images.
    """
    names = [name for name in ("obs", "next_obs") if batch.get(name) is not None]
    if not names:
        return dict(batch)
    images = [batch[name] for name in names]
    shape = images[0].shape
    if any(image.shape != shape for image in images) or len(shape) < 3:
        raise InvalidDataError(
            f"obs and next_obs must be images of one shape, got {[tuple(i.shape) for i in images]}"
        )
    lead = shape[:-3]
    stacked = torch.cat([image.reshape(-1, *shape[-3:]) for image in images],
                        dim=1 if channels_first else 3)
    if not channels_first:
        stacked = stacked.permute(0, 3, 1, 2)
    shifted = random_shift(stacked, pad, generator)
    if not channels_first:
        shifted = shifted.permute(0, 2, 3, 1)
    parts = shifted.chunk(len(names), dim=1 if channels_first else 3)
    return {**batch, **{name: part.reshape(*lead, *shape[-3:])
                        for name, part in zip(names, parts, strict=True)}}

"""Pixel networks: random-shift augmentation, CNN reward nets and discriminators on frame stacks."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from rlkit.errors import InvalidDataError
from rlkit.reward.augment import random_shift


def _images(n: int = 6, c: int = 9, h: int = 12, w: int = 10, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (n, c, h, w), generator=gen, dtype=torch.uint8)


def test_random_shift_at_pad_zero_is_identity() -> None:
    images = _images()
    out = random_shift(images, pad=0, generator=torch.Generator().manual_seed(1))
    assert out.dtype == torch.uint8
    assert torch.equal(out, images)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_random_shift_is_a_crop_of_the_replicate_padded_image(dtype: torch.dtype) -> None:
    pad = 3
    images = _images(n=16).to(dtype)
    out = random_shift(images, pad=pad, generator=torch.Generator().manual_seed(2))
    assert out.shape == images.shape and out.dtype == dtype
    padded = F.pad(images.float(), (pad,) * 4, mode="replicate").to(dtype)
    offsets = set()
    for image, shifted in zip(padded, out, strict=True):
        matches = [(dy, dx) for dy in range(2 * pad + 1) for dx in range(2 * pad + 1)
                   if torch.equal(image[:, dy:dy + 12, dx:dx + 10], shifted)]
        assert matches, "an output is not a crop of its padded input"
        offsets.add(matches[0])
    assert len(offsets) > 1  # each image draws its own shift


def test_random_shift_is_reproducible_given_the_generator() -> None:
    images = _images(n=32)
    first = random_shift(images, pad=4, generator=torch.Generator().manual_seed(5))
    again = random_shift(images, pad=4, generator=torch.Generator().manual_seed(5))
    other = random_shift(images, pad=4, generator=torch.Generator().manual_seed(6))
    assert torch.equal(first, again)
    assert not torch.equal(first, other)


def test_random_shift_equals_drqv2_grid_sample_for_the_same_shifts() -> None:
    """DrQ-v2's RandomShiftsAug (bilinear grid_sample of a shifted pixel-centre grid), written out
    with shifts drawn from the same generator, gives the same images."""
    n, c, h, pad = 5, 6, 16, 4
    images = torch.rand(n, c, h, h, generator=torch.Generator().manual_seed(0))
    eps = 1.0 / (h + 2 * pad)
    arange = torch.linspace(-1.0 + eps, 1.0 - eps, h + 2 * pad)[:h]
    arange = arange.unsqueeze(0).repeat(h, 1).unsqueeze(2)
    base = torch.cat([arange, arange.transpose(1, 0)], dim=2).unsqueeze(0).repeat(n, 1, 1, 1)
    shift = torch.randint(0, 2 * pad + 1, (n, 2), generator=torch.Generator().manual_seed(3))
    grid = base + shift[:, None, None, :].float() * 2.0 / (h + 2 * pad)
    padded = F.pad(images, (pad,) * 4, "replicate")
    expected = F.grid_sample(padded, grid, padding_mode="zeros", align_corners=False)
    out = random_shift(images, pad=pad, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize("shape, pad", [((3, 8, 8), 4), ((2, 3, 8, 8), -1)])
def test_random_shift_rejects_bad_input(shape: tuple[int, ...], pad: int) -> None:
    with pytest.raises(InvalidDataError):
        random_shift(torch.zeros(shape), pad=pad)

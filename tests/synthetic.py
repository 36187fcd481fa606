"""Synthetic illustrations the tests draw themselves (no real manuscript images in the repository):
``drawing`` (strokes and ellipses, the engine tests') and ``shapes`` (filled shapes, the synthetic
manuscripts of the service tests)."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

PAPER = (232, 220, 190)


def drawing(seed: int, size: tuple[int, int] = (320, 256)) -> Image.Image:
    """A synthetic 'illustration': random strokes and ellipses on parchment-coloured paper."""
    rng = np.random.default_rng(seed)
    w, h = size
    image = Image.new("RGB", size, PAPER)
    draw = ImageDraw.Draw(image)
    for _ in range(30):
        x0, y0 = int(rng.integers(0, w - 40)), int(rng.integers(0, h - 40))
        x1, y1 = x0 + int(rng.integers(10, 90)), y0 + int(rng.integers(10, 90))
        colour = tuple(int(v) for v in rng.integers(0, 180, 3))
        if rng.random() < 0.5:
            draw.ellipse([x0, y0, x1, y1], outline=colour, width=3)
        else:
            draw.line([x0, y0, x1, y1], fill=colour, width=4)
    return image


def restyled_copy(image: Image.Image, matrix=(1.08, 0.08, -12, -0.06, 0.95, 10)) -> Image.Image:
    """Another 'copyist's' version: an affine warp, other colours, softer strokes."""
    warped = image.transform(
        image.size, Image.Transform.AFFINE, matrix, resample=Image.Resampling.BICUBIC, fillcolor=PAPER
    )
    pixels = np.asarray(warped, dtype=np.float32)
    tinted = np.clip(pixels[..., [1, 2, 0]] * 0.9 + 15, 0, 255).astype(np.uint8)  # swap colour channels
    return Image.fromarray(tinted).filter(ImageFilter.GaussianBlur(1.2))


def hard_copy(image: Image.Image, seed: int) -> Image.Image:
    """A copyist who redraws: a strong warp (scale, shear, turn, shift), a lost patch, and the drawing
    reduced to thin outlines in another ink, as in the hard copies of the scale benchmark."""
    rng = np.random.default_rng(seed)
    w, h = image.size
    angle = np.deg2rad(rng.uniform(-10, 10))
    linear = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]]) @ np.array(
        [[rng.uniform(0.8, 1.2), rng.uniform(-0.2, 0.2)], [0.0, rng.uniform(0.8, 1.2)]]
    )
    centre = np.array([w / 2, h / 2])
    offset = centre - linear @ centre + rng.uniform(-0.08, 0.08, 2) * np.array([w, h])
    warped = image.transform(
        image.size,
        Image.Transform.AFFINE,
        (linear[0, 0], linear[0, 1], offset[0], linear[1, 0], linear[1, 1], offset[1]),
        resample=Image.Resampling.BICUBIC,
        fillcolor=PAPER,
    )
    x0, y0 = int(rng.integers(0, w * 3 // 4)), int(rng.integers(0, h * 3 // 4))
    warped.paste(Image.new("RGB", (w // 4, h // 4), PAPER), (x0, y0))  # a lost patch
    edges = np.asarray(warped.convert("L").filter(ImageFilter.FIND_EDGES), dtype=np.float32)
    ink = np.clip(edges / max(float(np.percentile(edges, 97)), 1.0), 0, 1)[..., None]
    pixels = np.array(PAPER, dtype=np.float32) * (1 - ink) + rng.uniform(10, 110, 3) * ink
    return Image.fromarray(pixels.astype(np.uint8)).filter(ImageFilter.GaussianBlur(0.6))


def shapes(k: int, size: tuple[int, int] = (200, 150)) -> Image.Image:
    """Illustration k of the synthetic manuscripts: random shapes on a light ground, the same for a given k."""
    rng = np.random.default_rng(1000 + k)
    image = Image.new("RGB", size, (235, 225, 205))
    draw = ImageDraw.Draw(image)
    for _ in range(12):
        x0, y0 = rng.integers(0, size[0] - 20), rng.integers(0, size[1] - 20)
        x1, y1 = x0 + rng.integers(15, 90), y0 + rng.integers(15, 70)
        color = tuple(int(c) for c in rng.integers(0, 200, 3))
        if rng.random() < 0.5:
            draw.ellipse((x0, y0, x1, y1), fill=color)
        else:
            draw.rectangle((x0, y0, x1, y1), outline=color, width=int(rng.integers(2, 8)))
    return image

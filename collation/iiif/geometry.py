"""Rectangles between canvas units and image pixels, and media-fragment ``xywh`` parsing.

API::

    unit, (x, y, w, h) = parse_xywh("xywh=percent:1,2,3,4")      # or None
    x, y, w, h = canvas_to_image(xywh, canvas)                   # floats, image pixels
    x, y, w, h = image_to_canvas(xywh, canvas, image_size)       # floats, canvas units

A canvas's image may paint only part of the canvas (``ImageSource.target``, canvas units) and show
only part of the image (``ImageSource.selector``, image pixels); both offsets are applied.
"""

from __future__ import annotations

import math
import re
from typing import Any

from collation.iiif.errors import ManifestError
from collation.iiif.model import Canvas

_XYWH = re.compile(
    r"xywh\s*=\s*(?:(pixel|percent)\s*:)?\s*"
    r"([-+]?[\d.]+(?:[eE][-+]?\d+)?)\s*,\s*([-+]?[\d.]+(?:[eE][-+]?\d+)?)\s*,\s*"
    r"([-+]?[\d.]+(?:[eE][-+]?\d+)?)\s*,\s*([-+]?[\d.]+(?:[eE][-+]?\d+)?)",
    re.IGNORECASE,
)


def parse_xywh(value: Any) -> tuple[str, tuple[float, float, float, float]] | None:
    """Parse a media-fragment ``xywh`` (``pixel:`` or ``percent:``) into (unit, numbers), or None.

    Accepts a bare fragment, ``xywh=…`` or a URI ending in ``#xywh=…``; negative or non-finite
    widths and heights are refused (None).
    """
    if not isinstance(value, str):
        return None
    text = value if "xywh" in value.lower() else f"xywh={value}"
    match = _XYWH.search(text)
    if match is None:
        return None
    try:
        numbers = tuple(float(g) for g in match.groups()[1:])
    except ValueError:
        return None
    if not all(math.isfinite(n) for n in numbers) or numbers[2] <= 0 or numbers[3] <= 0:
        return None
    unit = (match.group(1) or "pixel").lower()
    return unit, (numbers[0], numbers[1], numbers[2], numbers[3])


def canvas_to_image(
    xywh: tuple[float, float, float, float],
    canvas: Canvas,
    image_size: tuple[int, int] | None = None,
) -> tuple[float, float, float, float]:
    """Map a canvas rectangle to image pixels (x_img = x_canvas · image.width / canvas.width, plus the
    offsets of the painting target and the image selector). ``image_size`` overrides the declared
    image size (info.json or the decoded static image is the authority)."""
    ix, iy, iw, ih = _image_rect(canvas, image_size)
    tx, ty, tw, th = _target_rect(canvas)
    sx, sy = iw / tw, ih / th
    x, y, w, h = xywh
    return ix + (x - tx) * sx, iy + (y - ty) * sy, w * sx, h * sy


def image_to_canvas(
    xywh: tuple[float, float, float, float],
    canvas: Canvas,
    image_size: tuple[int, int] | None = None,
) -> tuple[float, float, float, float]:
    """Inverse of ``canvas_to_image``: image pixels to canvas units."""
    ix, iy, iw, ih = _image_rect(canvas, image_size)
    tx, ty, tw, th = _target_rect(canvas)
    sx, sy = tw / iw, th / ih
    x, y, w, h = xywh
    return tx + (x - ix) * sx, ty + (y - iy) * sy, w * sx, h * sy


def _image_rect(canvas: Canvas, image_size: tuple[int, int] | None) -> tuple[float, float, float, float]:
    image = canvas.image
    if image is not None and image.selector is not None:
        return image.selector
    if image_size is not None:
        return 0.0, 0.0, float(image_size[0]), float(image_size[1])
    if image is not None and image.width and image.height:
        return 0.0, 0.0, float(image.width), float(image.height)
    if canvas.width and canvas.height:
        return 0.0, 0.0, float(canvas.width), float(canvas.height)
    raise ManifestError(f"canvas {canvas.id} has no known size", field="width")


def _target_rect(canvas: Canvas) -> tuple[float, float, float, float]:
    if canvas.image is not None and canvas.image.target is not None:
        return canvas.image.target
    if canvas.width and canvas.height:
        return 0.0, 0.0, float(canvas.width), float(canvas.height)
    if canvas.image is not None and canvas.image.width and canvas.image.height:
        return 0.0, 0.0, float(canvas.image.width), float(canvas.image.height)
    raise ManifestError(f"canvas {canvas.id} has no known size", field="width")

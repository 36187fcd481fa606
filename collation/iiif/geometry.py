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
from dataclasses import replace
from typing import Any

from collation.core.errors import ManifestError
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
    offsets of the painting target and the image selector, through the body's rotation).
    ``image_size`` overrides the declared image size (info.json or the decoded static image is the
    authority)."""
    ix, iy, iw, ih = _image_rect(canvas, image_size)
    tx, ty, tw, th = _target_rect(canvas)
    rotation, mirrored = _rotation(canvas)
    dw, dh = (ih, iw) if rotation in (90, 270) else (iw, ih)
    x, y, w, h = xywh
    u0, v0 = (x - tx) * dw / tw, (y - ty) * dh / th
    u1, v1 = u0 + w * dw / tw, v0 + h * dh / th
    corners = [_unrotate(u, v, iw, ih, rotation, mirrored) for u, v in ((u0, v0), (u1, v1))]
    a0, a1 = sorted(c[0] for c in corners)
    b0, b1 = sorted(c[1] for c in corners)
    return ix + a0, iy + b0, a1 - a0, b1 - b0


def image_to_canvas(
    xywh: tuple[float, float, float, float],
    canvas: Canvas,
    image_size: tuple[int, int] | None = None,
) -> tuple[float, float, float, float]:
    """Inverse of ``canvas_to_image``: image pixels to canvas units."""
    ix, iy, iw, ih = _image_rect(canvas, image_size)
    tx, ty, tw, th = _target_rect(canvas)
    rotation, mirrored = _rotation(canvas)
    dw, dh = (ih, iw) if rotation in (90, 270) else (iw, ih)
    x, y, w, h = xywh
    corners = [_rotate(a - ix, b - iy, iw, ih, rotation, mirrored) for a, b in ((x, y), (x + w, y + h))]
    u0, u1 = sorted(c[0] for c in corners)
    v0, v1 = sorted(c[1] for c in corners)
    return tx + u0 * tw / dw, ty + v0 * th / dh, (u1 - u0) * tw / dw, (v1 - v0) * th / dh


def _rotation(canvas: Canvas) -> tuple[int, bool]:
    image = canvas.image
    return (image.rotation, image.mirrored) if image is not None else (0, False)


def _rotate(a: float, b: float, w: float, h: float, rotation: int, mirrored: bool) -> tuple[float, float]:
    """A point of a w × h image to the displayed image: mirrored first, then turned clockwise."""
    if mirrored:
        a = w - a
    if rotation == 90:
        return h - b, a
    if rotation == 180:
        return w - a, h - b
    if rotation == 270:
        return b, w - a
    return a, b


def _unrotate(u: float, v: float, w: float, h: float, rotation: int, mirrored: bool) -> tuple[float, float]:
    """Inverse of ``_rotate``: a point of the displayed image back to the w × h image."""
    if rotation == 90:
        a, b = v, h - u
    elif rotation == 180:
        a, b = w - u, h - v
    elif rotation == 270:
        a, b = w - v, u
    else:
        a, b = u, v
    return (w - a if mirrored else a), b


def image_for_region(canvas: Canvas, xywh: tuple[float, float, float, float]) -> tuple[Canvas, tuple[float, ...]]:
    """(canvas seen through the one image that paints ``xywh``, ``xywh`` clipped to the area that
    image paints): the topmost image that shows at least half of the region, else the one that
    shows most of it. On a composite canvas the region is read from that image only; a canvas
    with one image is returned as is. ManifestError when no image paints any of the region."""
    images = canvas.painted()
    if len(images) <= 1:
        return canvas, tuple(xywh)
    x, y, w, h = xywh
    best, best_area, best_box = None, 0.0, None
    for image in reversed(images):  # the last painted is on top: it wins when it shows most of the region
        if image.target is not None:
            tx, ty, tw, th = image.target
        elif canvas.width and canvas.height:
            tx, ty, tw, th = 0.0, 0.0, float(canvas.width), float(canvas.height)
        else:
            continue
        x0, y0 = max(x, tx), max(y, ty)
        x1, y1 = min(x + w, tx + tw), min(y + h, ty + th)
        area = max(0.0, x1 - x0) * max(0.0, y1 - y0)
        if area > best_area:
            best, best_area, best_box = image, area, (x0, y0, x1 - x0, y1 - y0)
        if area >= 0.5 * w * h:
            break
    if best is None or best_box is None:
        raise ManifestError(f"no image of canvas {canvas.id} paints the region {list(xywh)}", field="canvas")
    return replace(canvas, image=best, images=(best,)), best_box


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

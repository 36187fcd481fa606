"""Annotation targets and selectors reduced to rectangles: media fragments, SVG shapes, percentages.

A selector (``FragmentSelector`` xywh, ``SvgSelector``, a ``Choice`` of them) or a target
(``canvas#xywh=…`` or a ``SpecificResource``) becomes a ``Shape`` (pixel or percent units of the
canvas), then integer canvas units clipped to the canvas. API::

    box = svg_bounding_box('<svg><path d="M10,10 L50,10 L50,40z"/></svg>')   # (x, y, w, h) or None
    canvas_id, shape = target_shape(annotation["target"])                    # (str | None, Shape | None)
    shape = selector_shape(target["selector"])                                # Shape or None
    x, y, w, h = shape_on_canvas(shape, canvas)                               # ints, or None when empty
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from typing import Any

from collation.iiif.geometry import parse_xywh
from collation.iiif.model import Canvas, as_list, bare, json_id, json_type

MAX_SVG_CHARS = 1_000_000
"""SVG selectors longer than this are not parsed."""


_SVG_ELEMENT = re.compile(r"<\s*(path|rect|circle|ellipse|polygon|polyline|line)\b([^>]*)>", re.IGNORECASE)
_SVG_ATTR = re.compile(r"([\w:-]+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_PATH_TOKEN = re.compile(rf"[MmLlHhVvCcSsQqTtAaZz]|{_NUMBER}")
_PATH_ARGS = {"m": 2, "l": 2, "h": 1, "v": 1, "c": 6, "s": 4, "q": 4, "t": 2, "a": 7, "z": 0}


def _float(text: str | None) -> float | None:
    if text is None:
        return None
    match = re.match(rf"\s*({_NUMBER})", text)
    if match is None:
        return None
    value = float(match.group(1))
    return value if math.isfinite(value) else None


def _path_points(d: str) -> list[tuple[float, float]]:
    """End and control points of an SVG path; their bounding box contains the drawn shape (arcs
    excepted, which Mirador does not draw anyway)."""
    tokens = _PATH_TOKEN.findall(d)[:200_000]
    points: list[tuple[float, float]] = []
    x = y = start_x = start_y = 0.0
    command = ""
    i = 0
    while i < len(tokens):
        if tokens[i].isalpha():
            command = tokens[i]
            i += 1
            if command.lower() == "z":
                x, y = start_x, start_y
                command = ""  # numbers right after a closepath are an error: skip them
                continue
        if not command:
            i += 1
            continue
        lower = command.lower()
        count = _PATH_ARGS[lower]
        args = tokens[i : i + count]
        if len(args) < count or any(a.isalpha() for a in args):
            i += 1
            continue
        values = [float(a) for a in args]
        i += count
        relative = command.islower()
        ox, oy = (x, y) if relative else (0.0, 0.0)
        if lower == "h":
            x = values[0] + (x if relative else 0.0)
            points.append((x, y))
        elif lower == "v":
            y = values[0] + (y if relative else 0.0)
            points.append((x, y))
        elif lower == "a":
            x, y = values[5] + ox, values[6] + oy
            points.append((x, y))
        else:
            pairs = [(values[k] + ox, values[k + 1] + oy) for k in range(0, count, 2)]
            points.extend(pairs)
            x, y = pairs[-1]
            if lower == "m":
                start_x, start_y = x, y
                command = "l" if relative else "L"  # further pairs after a moveto are linetos
    return [p for p in points if math.isfinite(p[0]) and math.isfinite(p[1])]


def svg_bounding_box(svg: Any) -> tuple[float, float, float, float] | None:
    """Bounding box (x, y, w, h) of the shapes of an SVG selector, or None if it draws nothing.

    Parsed with regular expressions, not an XML parser: selectors come from third parties and
    need no entities, namespaces or validation to yield a box. Transforms are ignored.
    """
    if not isinstance(svg, str) or len(svg) > MAX_SVG_CHARS:
        return None
    points: list[tuple[float, float]] = []
    for element, attributes in _SVG_ELEMENT.findall(svg):
        attrs = {m[0].lower(): html.unescape(m[1] or m[2]) for m in _SVG_ATTR.findall(attributes)}
        kind = element.lower()
        get = attrs.get
        if kind == "path" and "d" in attrs:
            points.extend(_path_points(attrs["d"]))
        elif kind == "rect":
            x, y, w, h = (
                _float(get("x", "0")),
                _float(get("y", "0")),
                _float(get("width")),
                _float(get("height")),
            )
            if None not in (x, y, w, h):
                points += [(x, y), (x + w, y + h)]  # type: ignore[operator]
        elif kind in ("circle", "ellipse"):
            cx, cy = _float(get("cx", "0")), _float(get("cy", "0"))
            rx = _float(get("r") if kind == "circle" else get("rx"))
            ry = _float(get("r") if kind == "circle" else get("ry"))
            if None not in (cx, cy, rx, ry):
                points += [(cx - rx, cy - ry), (cx + rx, cy + ry)]  # type: ignore[operator]
        elif kind in ("polygon", "polyline") and "points" in attrs:
            numbers = [float(n) for n in re.findall(_NUMBER, attrs["points"])[:200_000]]
            points += [(numbers[k], numbers[k + 1]) for k in range(0, len(numbers) - 1, 2)]
        elif kind == "line":
            coords = [_float(get(k, "0")) for k in ("x1", "y1", "x2", "y2")]
            if None not in coords:
                points += [(coords[0], coords[1]), (coords[2], coords[3])]  # type: ignore[list-item]
    points = [p for p in points if math.isfinite(p[0]) and math.isfinite(p[1])]
    if not points:
        return None
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)


# -- selectors and targets ----------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """A selector reduced to a rectangle: pixel or percent units of the canvas."""

    unit: str
    xywh: tuple[float, float, float, float]


def selector_shape(selector: Any, depth: int = 0) -> Shape | None:
    """A rectangle from a selector: FragmentSelector xywh first, else an SVG bounding box."""
    if depth > 4:
        return None
    candidates = as_list(selector)
    for item in candidates:
        if isinstance(item, dict) and bare(json_type(item)) == "fragmentselector":
            parsed = parse_xywh(item.get("value"))
            if parsed:
                return Shape(*parsed)
        if isinstance(item, dict) and bare(json_type(item)) == "imageapiselector":
            parsed = parse_xywh(str(item.get("region", "")).removeprefix("pct:"))
            if parsed:
                return Shape("percent" if str(item.get("region")).startswith("pct:") else "pixel", parsed[1])
        if isinstance(item, dict) and bare(json_type(item)) == "choice":
            inner = [item.get("default"), *as_list(item.get("item")), *as_list(item.get("items"))]
            shape = selector_shape([i for i in inner if i is not None], depth + 1)
            if shape:
                return shape
    for item in candidates:
        if isinstance(item, dict) and bare(json_type(item)) == "svgselector":
            box = svg_bounding_box(item.get("value", item.get("chars")))
            if box and box[2] > 0 and box[3] > 0:
                return Shape("pixel", box)
    return None


def target_shape(target: Any) -> tuple[str | None, Shape | None]:
    """(canvas id, rectangle) of an annotation target: ``canvas#xywh=…`` or a SpecificResource."""
    if isinstance(target, str):
        source, _, fragment = target.partition("#")
        parsed = parse_xywh(fragment) if fragment else None
        return source.strip() or None, Shape(*parsed) if parsed else None
    if isinstance(target, dict):
        if bare(json_type(target)) == "specificresource" or "selector" in target:
            source = json_id(target.get("source", target.get("full")))
            if source is None and "source" not in target and "full" not in target:
                source = json_id(target)  # {"id": canvas, "type": "Canvas", "selector": ...}
            shape = selector_shape(target.get("selector"))
            if source and shape is None and "#" in source:  # the fragment on the source, no selector
                return target_shape(source)
            return (source.partition("#")[0] if source else None), shape
        canvas = json_id(target)
        if canvas:
            return target_shape(canvas)
    return None, None


def shape_on_canvas(shape: Shape, canvas: Canvas) -> tuple[int, int, int, int] | None:
    """Integer pixel rectangle in canvas units, clipped to the canvas; None when empty."""
    x, y, w, h = shape.xywh
    width, height = canvas.width, canvas.height
    if shape.unit == "percent":
        if not width or not height:
            return None
        x, y, w, h = x * width / 100, y * height / 100, w * width / 100, h * height / 100
    x0, y0, x1, y1 = round(x), round(y), round(x + w), round(y + h)
    if width and height:
        x0, y0 = max(0, min(x0, width)), max(0, min(y0, height))
        x1, y1 = max(0, min(x1, width)), max(0, min(y1, height))
    else:
        x0, y0 = max(0, x0), max(0, y0)
    if x1 <= x0 or y1 <= y0:
        return None
    return x0, y0, x1 - x0, y1 - y0

"""From the built-in detector's cell maps to boxes: components, merging, shaping, judging, scoring.

``collation.engine.detection.builtin`` turns a folio into per-cell maps (solid, weak, strong, line cells, the
backdrop); the functions here work on such maps and on boxes (row0, col0, row1, col1) in cells, end
excluded, and know nothing of images.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from types import SimpleNamespace

import numpy as np
import torch


def components(mask: np.ndarray) -> list[tuple[int, int, int, int]]:
    """(row0, col0, row1, col1) bounds (end excluded) of the 8-connected components of a (h, w) bool map."""
    seen = np.zeros_like(mask)
    h, w = mask.shape
    found = []
    for r0, c0 in zip(*np.nonzero(mask), strict=True):
        if seen[r0, c0]:
            continue
        seen[r0, c0] = True
        queue, bounds = deque([(r0, c0)]), [r0, c0, r0 + 1, c0 + 1]
        while queue:
            r, c = queue.popleft()
            bounds = [min(bounds[0], r), min(bounds[1], c), max(bounds[2], r + 1), max(bounds[3], c + 1)]
            for rr in range(max(r - 1, 0), min(r + 2, h)):
                for cc in range(max(c - 1, 0), min(c + 2, w)):
                    if mask[rr, cc] and not seen[rr, cc]:
                        seen[rr, cc] = True
                        queue.append((rr, cc))
        found.append(tuple(int(v) for v in bounds))
    return found


def merge_boxes(
    boxes: list[tuple[int, int, int, int]],
    gap: int,
    stack_gap: int,
    whole: Callable[[tuple[int, int, int, int]], bool],
) -> list[tuple[int, int, int, int]]:
    """Boxes (row0, col0, row1, col1) that overlap or lie within ``gap`` cells of each other, merged; boxes
    one above the other (sharing 60 % of the narrower one's columns) within ``stack_gap`` cells, too: a
    title band or a pale sky above a miniature's painted part. Two boxes that do not overlap and are both
    ``whole`` (each a drawing by itself) are not merged."""
    boxes = list(boxes)
    merged = True
    while merged:
        merged = False
        for i in range(len(boxes)):
            for j in range(i + 1, len(boxes)):
                a, b = boxes[i], boxes[j]
                over = min(a[3], b[3]) - max(a[1], b[1])
                g = stack_gap if over >= 0.6 * min(a[3] - a[1], b[3] - b[1]) else gap
                overlap = a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
                near = a[0] - g < b[2] and b[0] - g < a[2] and a[1] - gap < b[3] and b[1] - gap < a[3]
                if overlap or (near and not (whole(a) and whole(b))):
                    boxes[i] = (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
                    del boxes[j]
                    merged = True
                    break
            if merged:
                break
    return boxes


def strong_box(box: tuple[int, int, int, int], strong: np.ndarray) -> tuple[int, int, int, int]:
    """The bounds (row0, col0, row1, col1) of the strong cells of a (h, w) bool map within box."""
    r0, c0, r1, c1 = box
    rows, cols = np.nonzero(strong[r0:r1, c0:c1])
    return (r0 + int(rows.min()), c0 + int(cols.min()), r0 + int(rows.max()) + 1, c0 + int(cols.max()) + 1)


def grow_box(box: tuple[int, int, int, int], weak: np.ndarray, share: float) -> tuple[int, int, int, int]:
    """Box (row0, col0, row1, col1) grown a row or a column at a time on each side while the cells it would
    take in are ``share`` or more weak (a (h, w) bool map). A drawing's paler parts fill the rows beside its
    strong core; script or a stain that the weak cells reach through a narrow bridge fill few of them."""
    r0, c0, r1, c1 = box
    h, w = weak.shape
    moved = True
    while moved:
        moved = False
        if r0 > 0 and weak[r0 - 1, c0:c1].mean() >= share:
            r0, moved = r0 - 1, True
        if r1 < h and weak[r1, c0:c1].mean() >= share:
            r1, moved = r1 + 1, True
        if c0 > 0 and weak[r0:r1, c0 - 1].mean() >= share:
            c0, moved = c0 - 1, True
        if c1 < w and weak[r0:r1, c1].mean() >= share:
            c1, moved = c1 + 1, True
    return r0, c0, r1, c1


def accept(
    box: tuple[int, int, int, int],
    solid: torch.Tensor,
    background: np.ndarray,
    conf: SimpleNamespace,
    lines: torch.Tensor | None = None,
) -> float | None:
    """The score of a candidate box (row0, col0, row1, col1) in cells, or None when it is not a drawing:
    its share of solid cells over ``solid``, or of line-drawing cells (``lines``) over ``line_share``."""
    r0, c0, r1, c1 = box
    h, w = background.shape
    b = conf.border
    if (r0 < b) + (c0 < b) + (r1 > h - b) + (c1 > w - b) >= 2:
        return None  # along two edges of the image: a binding, the scan's background (one edge: a cut page)
    bh, bw = r1 - r0, c1 - c0
    if bh * bw < conf.min_area * h * w or min(bh, bw) < conf.min_side * max(h, w):
        return None
    if max(bh, bw) > conf.max_aspect * min(bh, bw):
        return None
    ring = np.zeros((h, w), dtype=bool)  # cells 3 to 4 cells around the box
    ring[max(r0 - 4, 0) : r1 + 4, max(c0 - 4, 0) : c1 + 4] = True
    ring[max(r0 - 2, 0) : r1 + 2, max(c0 - 2, 0) : c1 + 2] = False
    if background[ring].mean() > conf.max_background:
        return None  # lying on the backdrop, not on the page: a colour chart, a ruler, a label
    painted = float(solid[r0:r1, c0:c1].mean()) / conf.solid
    drawn = float(lines[r0:r1, c0:c1].float().mean()) / conf.line_share if lines is not None else 0.0
    return min(1.0, max(painted, drawn))


def box_features(
    box: tuple[int, int, int, int], solid: torch.Tensor, lines: torch.Tensor, conf: SimpleNamespace
) -> np.ndarray:
    """(4,) float64 what the score is computed from: painted evidence (solid share over ``solid``, at most
    2), drawn evidence (line-cell share over ``line_share``, at most 2), log of the box's share of the
    image's area, elongation (long side over short side)."""
    r0, c0, r1, c1 = box
    h, w = solid.shape
    painted = min(2.0, float(solid[r0:r1, c0:c1].mean()) / conf.solid)
    drawn = min(2.0, float(lines[r0:r1, c0:c1].float().mean()) / conf.line_share)
    area = np.log((r1 - r0) * (c1 - c0) / (h * w))
    return np.array([painted, drawn, area, max(r1 - r0, c1 - c0) / min(r1 - r0, c1 - c0)])


def calibrated(features: np.ndarray, weights: tuple[float, ...]) -> float:
    """The score: 1 / (1 + exp(-(w0 + w . features))), the chance that a box with these (4,) features is
    an illustration, fit on the tuned part of benchmarks/detect_pages.py (docs/detection.md)."""
    return float(1.0 / (1.0 + np.exp(-(weights[0] + np.dot(weights[1:], features)))))


def judged(
    merged: list[tuple[int, int, int, int]],
    parts: list[tuple[int, int, int, int]],
    refused: Callable[[tuple[int, int, int, int]], bool],
) -> list[tuple[int, int, int, int]]:
    """The merged boxes, except that one ``refused`` as a whole (by ``accept``) is replaced by the parts
    it merged: a painting whose ground runs into the leaf edge can be merged with a strip of that edge
    (the gutter, a dark margin) into a box that lies on the backdrop, while the painting alone lies on
    the page. Parts under a quarter of the largest one's area (the strips that glued them) are dropped."""
    out = []
    for box in merged:
        inside = [p for p in parts if box[0] <= p[0] and box[1] <= p[1] and p[2] <= box[2] and p[3] <= box[3]]
        if len(inside) > 1 and refused(box):
            area = [(p[2] - p[0]) * (p[3] - p[1]) for p in inside]
            out += [p for p, a in zip(inside, area, strict=True) if a >= 0.25 * max(area)]  # not the strips
        else:
            out.append(box)
    return out

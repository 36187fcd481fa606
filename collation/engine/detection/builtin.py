"""The built-in illustration detector: image analysis of a folio, no model, no download.

A folio is read at a fixed working size (long side ``conf.size`` pixels) and cut into square cells.
The steps, each a free function:

1. ``paper_colour``: the colour of the writing support, the most frequent bright colour of the
   central part of the image (parchment, paper; on a cover, the leather).
2. ``departure``: per pixel, whether it departs from the paper: darker than the paper around it
   (``local_paper_light``: under a tinted patch or a stain the tint's lightness, down to 30 % darker
   than the page's paper) or of another hue than the page's paper. Only pixels that differ strongly
   count, so stains, tinted paper and faint watermarks do not.
3. ``cell_density``: per cell, the share of departing pixels and the share of coloured ones. Script
   covers a text block thinly (thin strokes in rows, with parchment between lines and letters);
   a miniature or a drawing covers its area densely or in colour.
4. ``dense_components``: the cells that are dense (or coloured) over a neighbourhood larger than a
   text line, opened so that thin bands (headpieces, ruling, the gutter, the edges of the page)
   fall away, grouped in 8-connected components. ``line_cells`` adds ink-only line drawings: cells
   well covered by strokes but without the empty pixel rows that script leaves between its lines.
5. From the maps to boxes (``collation.engine.detection.boxes``): a component's box is its strong core grown
   over the rows and columns of weak cells beside it that hold ink or paint themselves (``strong_box``,
   ``grow_box``), so that a narrow
   bridge into script or a stain does not widen it (a component with no strong cell is taken whole when
   it is solid enough: a small or pale miniature); ``accept`` keeps boxes large enough, not too
   elongated, and not touching the edge of the image (the scan's background, a binding seen around
   the page, a colour chart lying beside it); ``calibrated`` scores them.

Boxes are returned in the pixel frame of the image given, with a score in (0, 1].
"""

from __future__ import annotations

from collections import deque
from types import MappingProxyType, SimpleNamespace

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from collation.engine.detection.boxes import (
    accept,
    box_features,
    calibrated,
    components,
    grow_box,
    judged,
    merge_boxes,
    strong_box,
)

default_conf = MappingProxyType(
    {
        "size": 512,  # long side of the working image, pixels
        "cell": 8,  # side of one cell of the working image, pixels
        "dark": 0.22,  # a pixel this much darker than the paper (0..1 of the paper's lightness) is ink or paint
        "colour": 0.12,  # ... or this far from the paper's hue (chroma difference, 0..1)
        "stroke": 5,  # areas of ink or paint narrower than this (working pixels) are strokes: script, lines
        "solid": 0.35,  # a neighbourhood of cells this much covered by solid areas is part of a drawing
        "weak": 0.16,  # ... and grows over neighbourhoods this much covered (hysteresis)
        "margin": 2,  # ... but not within this many cells of the backdrop (the edges of the leaves)
        "background": 0.15,  # cells this far from the paper's colour may be the scan's backdrop
        "max_background": 0.85,  # largest share of backdrop around a drawing
        "gap": 2,  # parts of a drawing this many cells apart are one drawing
        "stack_gap": 4,  # ... and this many cells apart when one lies above the other
        "whole": 0.7,  # ... unless both score this much alone: two drawings side by side
        "grow_share": 0.3,  # a box grows from its strong cells by rows and columns at least this much weak
        "grow_ink": 0.05,  # ... counting weak cells that are themselves this much ink or paint
        "coreless": 0.2,  # a weak component with no strong cells is a candidate when this much of it is solid
        "window": 5,  # side of the neighbourhood in cells (larger than a text line)
        "open": 3,  # side of the opening in cells: thinner bands are not drawings
        "min_area": 0.012,  # smallest drawing, as a share of the image's area
        "min_side": 0.08,  # shortest side of a drawing, as a share of the image's long side
        "max_aspect": 4.0,  # longest over shortest side
        "border": 1,  # components this many cells from the image's edge are the scan's background
        "line_ink": 0.15,  # a neighbourhood this much covered by ink (departure, strokes included) ...
        "line_gaps": 0.06,  # ... with this small a share of empty pixel rows is a line drawing, not script
        "line_solid": 0.1,  # ... where solid areas cover less than this (paint, stains: the solid path)
        "row_span": 32,  # empty rows are measured over this many working pixels across ...
        "row_window": 24,  # ... and counted over this many down (more than a text line's pitch)
        "line_share": 0.5,  # the score of a line drawing: its share of line cells over this, capped at 1
        "rhythm": 0.5,  # ink whose rhythm of script rows (``script_rhythm``) is under this is not script ...
        "rhythm_ink": 0.2,  # ... where it covers this much of a neighbourhood: a line drawing
        "rhythm_lags": (10, 50, 4),  # ... the pitches tried (start, stop, step; working pixels); () for none
        "max_tint": 0.3,  # the paper around a pixel may be this much darker than the page's (a tint, a stain)
        "tint_window": 9,  # ... judged over this many cells
        "min_evidence": 0.5,  # a candidate box needs this much painted or drawn evidence (``accept``) ...
        "calibration": (4.474, 0.843, 0.205, 0.963, -0.728),  # ... its score is a logistic function of box_features
        "min_score": 0.5,  # ... and boxes whose score is under this are dropped
    }
)


def working_image(image: Image.Image, size: int) -> tuple[np.ndarray, float]:
    """(H, W, 3) float32 RGB in 0..1 with long side ``size``, and the factor back to the image's pixels."""
    scale = size / max(image.size)
    w, h = max(1, round(image.width * scale)), max(1, round(image.height * scale))
    small = image.convert("RGB").resize((w, h), Image.BILINEAR, reducing_gap=2.0)
    return np.asarray(small, dtype=np.float32) / 255.0, 1.0 / scale


def paper_colour(rgb: np.ndarray, grid: int = 8) -> np.ndarray:
    """(3,) the colour of the support: of the light colours (16 levels a channel), the one that fills a
    fifth or more of the most inner blocks of a grid x grid division of the image (paper shows all over a
    page, between lines and in the margins; a painted sky or a backdrop fills only part of it)."""
    h, w, _ = rgb.shape
    q = np.clip((rgb * 16).astype(np.int64), 0, 15)
    bins = (q[..., 0] * 256 + q[..., 1] * 16 + q[..., 2]).ravel()
    rows = np.minimum(np.arange(h) * grid // h, grid - 1)
    cols = np.minimum(np.arange(w) * grid // w, grid - 1)
    block = (rows[:, None] * grid + cols[None, :]).ravel()
    counts = np.bincount(block * 4096 + bins, minlength=grid * grid * 4096).reshape(grid * grid, 4096)
    inner = np.arange(grid * grid)
    inner = inner[(inner // grid > 0) & (inner // grid < grid - 1) & (inner % grid > 0) & (inner % grid < grid - 1)]
    counts = counts[inner]  # the outer blocks may be the scan's backdrop
    share = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    levels = np.arange(4096)
    light = ((levels // 256) + (levels // 16 % 16) + (levels % 16)) / 45.0
    spread = (share >= 0.2).sum(axis=0) + counts.sum(axis=0) / counts.sum()
    if (spread[light >= 0.3] > 0).any():
        spread[light < 0.3] = -1  # a black backdrop is not the paper (a dark cover may be)
    wide = spread >= 0.5 * spread.max()  # of the colours spread nearly as wide, the lightest: paper, not a sky
    mode = int(np.where(wide, light + spread / 1e4, -1).argmax())
    return np.median(rgb.reshape(-1, 3)[bins == mode], axis=0)


def running_mean(a: np.ndarray, k: int, axis: int) -> np.ndarray:
    """(H, W) the mean of a (H, W) array over k values along axis, centred, cut at the edges (cumulative
    sums: a long thin window costs no more than a short one). Summed and gathered along ``axis`` in place,
    not on a transposed view: a strided cumulative sum and gather took 40% of the detector's time."""
    n = a.shape[axis]
    total = np.cumsum(a, axis=axis, dtype=np.float32)
    lo = np.clip(np.arange(n) - k // 2, 0, n)
    hi = np.clip(np.arange(n) - k // 2 + k, 0, n)
    shape = (n, 1) if axis == 0 else (1, n)
    # total[i] holds the sum of the first i + 1 values; a sum that starts at 0 subtracts nothing
    start = np.where((lo > 0).reshape(shape), np.take(total, np.maximum(lo - 1, 0), axis=axis), np.float32(0))
    return (np.take(total, hi - 1, axis=axis) - start) / (hi - lo).reshape(shape)


def local_paper_light(light: np.ndarray, paper_light: float, conf: SimpleNamespace) -> np.ndarray:
    """(H, W) float32 the paper's lightness near each pixel: the lightest spots (3 x 3 means) within
    ``tint_window`` cells, never more than ``max_tint`` darker than the page's paper nor lighter.
    Under a tinted patch or a stain wider than the window it is the tint's, so that only the ink on it
    departs; a drawing is still measured against paper at most ``max_tint`` darker."""
    if conf.max_tint <= 0:
        return np.full_like(light, paper_light)
    smooth = torch.from_numpy(running_mean(running_mean(light, 3, axis=0), 3, axis=1))[None, None]
    cell_light = F.max_pool2d(smooth, conf.cell, conf.cell)
    k = conf.tint_window
    local = F.avg_pool2d(F.max_pool2d(cell_light, k, 1, k // 2), k, 1, k // 2, count_include_pad=False)
    local = F.interpolate(local, size=light.shape, mode="bilinear", align_corners=False)[0, 0].numpy()
    return np.clip(local, (1 - conf.max_tint) * paper_light, paper_light)


def departure(rgb: np.ndarray, paper: np.ndarray, conf: SimpleNamespace) -> np.ndarray:
    """(H, W) bool: pixels that depart from the paper, darker (ink, paint) than the paper around them
    (``local_paper_light``) or of another hue than the page's paper (paint)."""
    light = rgb.mean(axis=2)
    paper_light = float(paper.mean())
    reference = local_paper_light(light, paper_light, conf)
    darker = (reference - light) / np.maximum(reference, 1e-3)
    chroma = np.linalg.norm((rgb - light[..., None]) - (paper - paper_light), axis=2)
    return (darker > conf.dark) | (chroma > conf.colour)


def erode(mask: np.ndarray, k: int) -> np.ndarray:
    """Binary erosion of a (H, W) bool map with a k x k square: what is left of areas wider than strokes."""
    t = torch.from_numpy(mask.astype(np.float32))[None, None]
    return (-F.max_pool2d(-t, k, 1, k // 2))[0, 0].numpy() > 0.5


def empty_rows(ink: np.ndarray, conf: SimpleNamespace) -> torch.Tensor:
    """(h, w) per cell, the share of empty pixel rows around it: rows of ``row_span`` pixels with almost
    no ink, counted over ``row_window`` pixels down. Script leaves empty rows between its lines (about
    0.15 of them); a line drawing, a diagram, a framed picture has almost none."""
    empty = (running_mean(ink, conf.row_span, axis=1) < 0.03).astype(np.float32)
    return cell_density(running_mean(empty, conf.row_window, axis=0), conf.cell)


def row_rhythm(ink: np.ndarray, pitch: int, conf: SimpleNamespace) -> np.ndarray:
    """(H, W) float32 how much the ink around each pixel comes in rows ``pitch`` apart, as script does:
    the correlation of the local row profile (ink share over ``row_span`` pixels across) with itself one
    pitch down, minus its correlation half a pitch down, over 2.5 pitches. About 1 to 2 in script at its
    pitch; about 0 or below in drawings, diagrams, paint and stains, whose ink has no such rhythm."""
    rows = running_mean(ink.astype(np.float32), conf.row_span, axis=1)

    def down(a: np.ndarray, s: int) -> np.ndarray:
        out = np.zeros_like(a)
        out[:-s] = a[s:]
        return out

    window = max(3, int(2.5 * pitch))
    mean = running_mean(rows, window, axis=0)
    var = np.maximum(running_mean(rows * rows, window, axis=0) - mean * mean, 1e-4)
    full, half = down(rows, pitch), down(rows, max(1, pitch // 2))
    at_pitch = running_mean(rows * full, window, axis=0) - mean * running_mean(full, window, axis=0)
    at_half = running_mean(rows * half, window, axis=0) - mean * running_mean(half, window, axis=0)
    return (at_pitch - at_half) / var


def script_rhythm(ink: np.ndarray, conf: SimpleNamespace) -> torch.Tensor:
    """(h, w) float32 per cell, the strongest ``row_rhythm`` of its neighbourhood over the pitches
    ``rhythm_lags`` (start, stop, step, working pixels). Measured locally at every pitch rather than at
    one pitch found for the page: hands, line spacing and slant vary, and on some pages (P3's) the
    rows of script do not show in the page's row profile at all."""
    best = np.max([row_rhythm(ink, lag, conf) for lag in range(*conf.rhythm_lags)], axis=0)
    return _box_mean(cell_density(best, conf.cell), conf.window)


def line_cells(ink: np.ndarray, solid_cover: torch.Tensor, conf: SimpleNamespace) -> torch.Tensor:
    """(h, w) bool cells of line drawings: a neighbourhood well covered by ink, and not solid (paint and
    stains are found as solid areas), whose ink is not in rows of script: without the empty rows
    between lines, or without their rhythm (``script_rhythm``)."""
    cover = _box_mean(cell_density(ink, conf.cell), conf.window)
    gaps = _box_mean(empty_rows(ink, conf), conf.window)
    h, w = solid_cover.shape
    drawn = (cover[:h, :w] > conf.line_ink) & (gaps[:h, :w] < conf.line_gaps)
    if conf.rhythm_lags:
        rhythm = script_rhythm(ink, conf)
        drawn |= (cover[:h, :w] > conf.rhythm_ink) & (rhythm[:h, :w] < conf.rhythm)
    return drawn & (solid_cover < conf.line_solid)


def background_cells(rgb: np.ndarray, paper: np.ndarray, conf: SimpleNamespace) -> np.ndarray:
    """(h, w) bool cells of the scan's background: connected to the image's edge, unlike the paper, and
    either dark or uniform (a black or grey backdrop, a binding's edge, a board seen around the page)."""
    t = torch.from_numpy(rgb).permute(2, 0, 1)[None]
    mean = F.avg_pool2d(t, conf.cell, conf.cell)[0]
    spread = (F.avg_pool2d(t * t, conf.cell, conf.cell)[0] - mean * mean).clamp(min=0).sqrt().mean(0)
    mean = mean.permute(1, 2, 0).numpy()
    far = np.linalg.norm(mean - paper, axis=2) > conf.background
    eligible = far & ((mean.mean(axis=2) < 0.3) | (spread.numpy() < 0.04))
    h, w = eligible.shape
    seen = np.zeros_like(eligible)
    queue = deque((r, c) for r in range(h) for c in range(w) if (r in (0, h - 1) or c in (0, w - 1)) and eligible[r, c])
    for r, c in queue:
        seen[r, c] = True
    while queue:
        r, c = queue.popleft()
        for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            if 0 <= rr < h and 0 <= cc < w and eligible[rr, cc] and not seen[rr, cc]:
                seen[rr, cc] = True
                queue.append((rr, cc))
    return seen


def cell_density(mask: np.ndarray, cell: int) -> torch.Tensor:
    """(h, w) float32 mean of a (H, W) bool or float map in each cell: the share of true pixels
    (partial cells at the edges are cut off)."""
    h, w = mask.shape[0] // cell, mask.shape[1] // cell
    blocks = mask[: h * cell, : w * cell].reshape(h, cell, w, cell)
    return torch.from_numpy(blocks.mean(axis=(1, 3), dtype=np.float32))


def _box_mean(x: torch.Tensor, k: int) -> torch.Tensor:
    return F.avg_pool2d(x[None, None], k, 1, k // 2, count_include_pad=False)[0, 0]


def _open(x: torch.Tensor, k: int) -> torch.Tensor:
    """Binary opening of a (h, w) bool map with a k x k square."""
    f = x.float()[None, None]
    eroded = -F.max_pool2d(-f, k, 1, k // 2)
    return F.max_pool2d(eroded, k, 1, k // 2)[0, 0] > 0.5


def detect(image: Image.Image, conf: SimpleNamespace) -> list[tuple[tuple[int, int, int, int], float]]:
    """(x, y, w, h) in the image's pixels and a score for each illustration found, best first."""
    rgb, back = working_image(image, conf.size)
    background = background_cells(rgb, paper_colour(rgb), conf)
    cells = np.repeat(np.repeat(~background, conf.cell, 0), conf.cell, 1)
    h, w = cells.shape
    paper = paper_colour(np.where(cells[..., None], rgb[:h, :w], 0.0)) if cells.any() else paper_colour(rgb)
    ink = departure(rgb, paper, conf)
    solid = cell_density(erode(ink, conf.stroke), conf.cell)
    solid[torch.from_numpy(background)] = 0.0
    cover = _box_mean(solid, conf.window)
    lines = _open(line_cells(ink, cover, conf) & ~torch.from_numpy(background), conf.open)
    strong = (_open(cover > conf.solid, conf.open) | lines).numpy()
    page = ~(
        F.max_pool2d(torch.from_numpy(background).float()[None, None], 1 + 2 * conf.margin, 1, conf.margin)[
            0, 0
        ].numpy()
        > 0.5
    )
    weak = (((cover > conf.weak).numpy() | lines.numpy()) & page) | strong
    # A box is its strong core grown over the weak cells beside it, not the whole weak component: weak
    # cells reach into bold script, stains and tinted patches through narrow bridges. It grows over weak
    # cells that hold ink or paint themselves: a neighbourhood mean also makes weak the cell or two of
    # blank paper past a drawing's painted edge. A small or pale miniature can have no strong cell at all
    # (its neighbourhood means never reach ``solid`` over the blank paper around it), yet be solidly
    # painted as a whole: it is taken whole.
    inked = weak & (cell_density(ink, conf.cell).numpy() >= conf.grow_ink)
    grown = []
    for r0, c0, r1, c1 in components(weak):
        if max(r1 - r0, c1 - c0) > conf.max_aspect * min(r1 - r0, c1 - c0):
            continue
        if strong[r0:r1, c0:c1].any():
            grown.append(grow_box(strong_box((r0, c0, r1, c1), strong), inked, conf.grow_share))
        elif float(solid[r0:r1, c0:c1].mean()) >= conf.coreless:
            grown.append((r0, c0, r1, c1))
    verdicts: dict[tuple[int, int, int, int], float | None] = {}

    def evidence_of(box: tuple[int, int, int, int]) -> float | None:
        """``accept``'s verdict on a box, worked out once (merging asks about the same boxes again)."""
        if box not in verdicts:
            verdicts[box] = accept(box, solid, background, conf, lines)
        return verdicts[box]

    def score_of(box: tuple[int, int, int, int]) -> float:
        """The box's calibrated score, 0 when ``accept`` refuses it or finds too little evidence."""
        evidence = evidence_of(box)
        if evidence is None or evidence < conf.min_evidence:
            return 0.0
        return calibrated(box_features(box, solid, lines, conf), conf.calibration)

    # Two boxes that are each surely a drawing are two drawings, however near (two miniatures stacked).
    merged = merge_boxes(grown, conf.gap, conf.stack_gap, whole=lambda box: score_of(box) >= conf.whole)
    found = []
    for r0, c0, r1, c1 in judged(merged, grown, refused=lambda box: evidence_of(box) is None):
        score = score_of((r0, c0, r1, c1))
        if score < conf.min_score:
            continue
        k = conf.cell * back
        x0, y0 = round(c0 * k), round(r0 * k)
        x1, y1 = min(round(c1 * k), image.width), min(round(r1 * k), image.height)
        found.append(((x0, y0, x1 - x0, y1 - y0), score))
    return sorted(found, key=lambda f: -f[1])

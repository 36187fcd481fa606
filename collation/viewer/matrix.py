"""The score matrix of a manuscript pair as a PNG, like Figure 2 of the paper.

Rows are the illustrations of the first manuscript (top to bottom), columns those of the second
(left to right). Scores go through a perceptually uniform colormap (viridis: brightness grows with
the score, so a dark background with a bright diagonal reads at a glance and survives greyscale
printing). Small matrices are enlarged with nearest neighbour so every cell stays a crisp square
and marks fit inside it; huge ones are reduced by max pooling so that a strong match is never
averaged away.

Marks, drawn inside the cell they concern:

- 2-cycle (mutual best): white square outline;
- 3-cycle: orange inner outline (inside the 2-cycle one, so both stay visible);
- confirmed by an expert: green centre dot; rejected: red cross;
- ground truth (optional): cyan corner ticks over the outline's corners, so a found match shows
  white edges with cyan corners and a missed one cyan corners alone.

Only Pillow and NumPy: the API process must not pull in matplotlib for one picture.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from PIL import Image, ImageDraw

Pair = tuple[int, int]

VIRIDIS_ANCHORS = np.array(
    [
        (68, 1, 84),
        (72, 40, 120),
        (62, 74, 137),
        (49, 104, 142),
        (38, 130, 142),
        (31, 158, 137),
        (53, 183, 121),
        (109, 205, 89),
        (180, 222, 44),
        (253, 231, 37),
    ],
    dtype=np.float64,
)
"""Viridis sampled at ten evenly spaced points; interpolated linearly into a 256-entry table."""

NAN_COLOR = (128, 128, 128)
"""Cells without a score (NaN, or -inf: a pair outside the candidate set), e.g. a region that could not be read."""

COLORS = {
    "two_cycles": (255, 255, 255),
    "three_cycles": (255, 140, 0),
    "confirmed": (0, 200, 60),
    "rejected": (230, 20, 20),
    "ground_truth": (0, 220, 255),
}
"""Mark colours, by ``MatrixMarks`` field."""

MAX_CELL = 24
"""Largest enlargement of one cell, in pixels (a 15 x 15 matrix becomes 360 x 360)."""

MAX_SIDE = 1024
"""Default cap of the image's longer side before pooling kicks in (cells of one pixel)."""


def colormap(values: np.ndarray) -> np.ndarray:
    """(H, W) floats in [0, 1] (NaN allowed) -> (H, W, 3) uint8 viridis colours."""
    positions = np.linspace(0.0, 1.0, len(VIRIDIS_ANCHORS))
    grid = np.linspace(0.0, 1.0, 256)
    table = np.stack([np.interp(grid, positions, VIRIDIS_ANCHORS[:, c]) for c in range(3)], axis=1)
    table = np.round(table).astype(np.uint8)
    finite = np.isfinite(values)
    index = np.clip(np.nan_to_num(values, nan=0.0) * 255.0 + 0.5, 0, 255).astype(np.int64)
    rgb = table[index]
    rgb[~finite] = NAN_COLOR
    return rgb


@dataclass(frozen=True)
class MatrixMarks:
    """Cells to mark, as (row, column) positions in the matrix (not region indices)."""

    two_cycles: Sequence[Pair] = ()
    three_cycles: Sequence[Pair] = ()
    confirmed: Sequence[Pair] = ()
    rejected: Sequence[Pair] = ()
    ground_truth: Sequence[Pair] | None = None


@dataclass(frozen=True)
class MatrixLayout:
    """Where the cells of a (n0, n1) matrix land in the image.

    Matrix cell (i, j) covers the pooled cell (i // factor, j // factor), which spans pixels
    x in [j' * cell, (j' + 1) * cell) and y in [i' * cell, (i' + 1) * cell).
    """

    shape: tuple[int, int]
    factor: int  # matrix cells per pooled cell along each axis (1 = no pooling)
    cell: int  # pixels per pooled cell along each axis
    pooled: tuple[int, int] = field(init=False)

    def __post_init__(self) -> None:
        n0, n1 = self.shape
        object.__setattr__(self, "pooled", (math.ceil(n0 / self.factor), math.ceil(n1 / self.factor)))

    @property
    def size(self) -> tuple[int, int]:
        """Image (width, height) in pixels."""
        return self.pooled[1] * self.cell, self.pooled[0] * self.cell

    def box(self, i: int, j: int) -> tuple[int, int, int, int]:
        """Pixel box (x0, y0, x1, y1), inclusive, of matrix cell (i, j)."""
        r, c = i // self.factor, j // self.factor
        return c * self.cell, r * self.cell, (c + 1) * self.cell - 1, (r + 1) * self.cell - 1

    def center(self, i: int, j: int) -> tuple[int, int]:
        """Pixel (x, y) at the centre of matrix cell (i, j)."""
        x0, y0, x1, y1 = self.box(i, j)
        return (x0 + x1) // 2, (y0 + y1) // 2


def layout(shape: tuple[int, int], max_side: int = MAX_SIDE) -> MatrixLayout:
    """Cell size and pooling for a matrix of ``shape`` so that the image's longer side is at most
    ``max_side`` (cells of at most ``MAX_CELL`` pixels)."""
    if max_side < 1:
        raise ValueError("max_side must be positive")
    longest = max(shape[0], shape[1], 1)
    if longest <= max_side:
        return MatrixLayout(shape, 1, max(1, min(MAX_CELL, max_side // longest)))
    return MatrixLayout(shape, math.ceil(longest / max_side), 1)


def scale_scores(matrix: np.ndarray) -> np.ndarray:
    """Scores to [0, 1] by the matrix's own finite min and max (a constant matrix gives 0)."""
    values = np.asarray(matrix, dtype=np.float64)
    finite = np.isfinite(values)
    if not finite.any():
        return np.full(values.shape, np.nan)
    lo, hi = float(values[finite].min()), float(values[finite].max())
    span = hi - lo
    out = np.where(finite, (values - lo) / span if span > 0 else 0.0, np.nan)
    return out


def _pool_max(values: np.ndarray, factor: int) -> np.ndarray:
    if factor == 1:
        return values
    n0, n1 = values.shape
    p0, p1 = math.ceil(n0 / factor), math.ceil(n1 / factor)
    padded = np.full((p0 * factor, p1 * factor), -np.inf)
    padded[:n0, :n1] = np.where(np.isfinite(values), values, -np.inf)
    pooled = padded.reshape(p0, factor, p1, factor).max(axis=(1, 3))
    return np.where(np.isfinite(pooled), pooled, np.nan)


def _cells(pairs: Iterable[Pair] | None, shape: tuple[int, int]) -> list[Pair]:
    """Valid (row, column) positions; out-of-range ones are dropped (a stale ground truth, say)."""
    out = []
    for i, j in pairs or ():
        i, j = int(i), int(j)
        if 0 <= i < shape[0] and 0 <= j < shape[1]:
            out.append((i, j))
    return out


def render_matrix(
    matrix: np.ndarray, marks: MatrixMarks | None = None, *, max_side: int = MAX_SIDE
) -> tuple[Image.Image, MatrixLayout]:
    """The matrix as an RGB image with its marks, and the layout that maps cells to pixels.

    Args:
        matrix: (n0, n1) scores; larger is better, NaN for missing.
        marks: cells to mark (see the module docstring).
        max_side: cap of the image's longer side.
    """
    values = np.asarray(matrix, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"expected a (n0, n1) matrix, got shape {values.shape}")
    shape = (int(values.shape[0]), int(values.shape[1]))
    geometry = layout(shape, max_side)
    if 0 in shape:
        return Image.new("RGB", (max(1, geometry.size[0]), max(1, geometry.size[1])), NAN_COLOR), geometry
    rgb = colormap(_pool_max(scale_scores(values), geometry.factor))
    image = Image.fromarray(rgb, "RGB")
    if geometry.cell > 1:
        image = image.resize(geometry.size, Image.Resampling.NEAREST)
    if marks is not None:
        _draw_marks(image, geometry, marks)
    return image, geometry


def _draw_marks(image: Image.Image, geometry: MatrixLayout, marks: MatrixMarks) -> None:
    draw = ImageDraw.Draw(image)
    cell, shape = geometry.cell, geometry.shape
    if cell < 4:  # too small for shapes: colour the cell's pixels, strongest evidence last
        order = ("ground_truth", "three_cycles", "two_cycles", "rejected", "confirmed")
        for name in order:
            for i, j in _cells(getattr(marks, name), shape):
                x0, y0, x1, y1 = geometry.box(i, j)
                draw.rectangle((x0, y0, x1, y1), fill=COLORS[name])
        return
    line = max(1, cell // 10)
    tick = max(2, cell // 4)
    for i, j in _cells(marks.two_cycles, shape):
        x0, y0, x1, y1 = geometry.box(i, j)
        draw.rectangle((x0, y0, x1, y1), outline=COLORS["two_cycles"], width=line)
    for i, j in _cells(marks.ground_truth, shape):
        x0, y0, x1, y1 = geometry.box(i, j)
        # filled rectangles, not wide lines: a wide line is centred and would spill into the next cell
        for left, top in ((True, True), (False, True), (True, False), (False, False)):
            hx0, hx1 = (x0, x0 + tick) if left else (x1 - tick, x1)
            vx0, vx1 = (x0, x0 + line - 1) if left else (x1 - line + 1, x1)
            hy0, hy1 = (y0, y0 + line - 1) if top else (y1 - line + 1, y1)
            vy0, vy1 = (y0, y0 + tick) if top else (y1 - tick, y1)
            draw.rectangle((hx0, hy0, hx1, hy1), fill=COLORS["ground_truth"])
            draw.rectangle((vx0, vy0, vx1, vy1), fill=COLORS["ground_truth"])
    inset = line + max(1, cell // 8)
    for i, j in _cells(marks.three_cycles, shape):
        x0, y0, x1, y1 = geometry.box(i, j)
        draw.rectangle((x0 + inset, y0 + inset, x1 - inset, y1 - inset), outline=COLORS["three_cycles"], width=line)
    radius = max(1, cell // 6)
    for i, j in _cells(marks.confirmed, shape):
        cx, cy = geometry.center(i, j)
        draw.ellipse((cx - radius, cy - radius, cx + radius, cy + radius), fill=COLORS["confirmed"])
    for i, j in _cells(marks.rejected, shape):
        x0, y0, x1, y1 = geometry.box(i, j)
        pad = inset + 1
        draw.line((x0 + pad, y0 + pad, x1 - pad, y1 - pad), fill=COLORS["rejected"], width=max(1, line))
        draw.line((x0 + pad, y1 - pad, x1 - pad, y0 + pad), fill=COLORS["rejected"], width=max(1, line))


def render_matrix_png(matrix: np.ndarray, marks: MatrixMarks | None = None, *, max_side: int = MAX_SIDE) -> bytes:
    """``render_matrix`` encoded as PNG bytes (what ``GET …/matrix.png`` sends)."""
    image, _ = render_matrix(matrix, marks, max_side=max_side)
    buf = io.BytesIO()
    image.save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()

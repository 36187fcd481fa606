"""The score-matrix image: brightness follows the score, cells map to the pixels the layout says,
and every kind of mark lands in its own cell and nowhere else."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from collation.viewer.matrix import (
    COLORS,
    MAX_CELL,
    NAN_COLOR,
    MatrixMarks,
    colormap,
    layout,
    render_matrix,
    render_matrix_png,
)


def luminance(rgb: np.ndarray) -> np.ndarray:
    rgb = rgb.astype(np.float64)
    return 0.2126 * rgb[..., 0] + 0.7152 * rgb[..., 1] + 0.0722 * rgb[..., 2]


def diagonal_matrix(n0: int = 12, n1: int = 15, seed: int = 0) -> np.ndarray:
    """Noise in [0, 0.5) with 1.0 on the diagonal, like the scores of two copies in the same order."""
    rng = np.random.default_rng(seed)
    matrix = rng.random((n0, n1)) * 0.5
    for k in range(min(n0, n1)):
        matrix[k, k] = 1.0
    return matrix


def pixel(image: Image.Image, xy: tuple[int, int]) -> tuple[int, int, int]:
    return tuple(int(v) for v in image.getpixel(xy))  # type: ignore[union-attr]


def test_colormap_brightness_grows_with_the_score() -> None:
    values = np.linspace(0, 1, 11)[None, :]
    lum = luminance(colormap(values))[0]
    assert np.all(np.diff(lum) > 0)
    assert tuple(colormap(np.array([[np.nan]]))[0, 0]) == NAN_COLOR


def test_small_matrix_is_enlarged_with_crisp_cells() -> None:
    matrix = diagonal_matrix()
    image, geometry = render_matrix(matrix)
    assert geometry.factor == 1 and geometry.cell == MAX_CELL
    assert image.size == (15 * MAX_CELL, 12 * MAX_CELL)
    rgb = np.asarray(image)
    x0, y0, x1, y1 = geometry.box(3, 7)
    cell = rgb[y0 : y1 + 1, x0 : x1 + 1].reshape(-1, 3)
    assert (cell == cell[0]).all()  # nearest neighbour: one colour per cell


def test_diagonal_is_brighter_than_the_rest() -> None:
    matrix = diagonal_matrix()
    image, geometry = render_matrix(matrix)
    lum = luminance(np.asarray(image))
    n0, n1 = matrix.shape
    centers = {(i, j): geometry.center(i, j) for i in range(n0) for j in range(n1)}
    diagonal = [lum[y, x] for (i, j), (x, y) in centers.items() if i == j]
    off = [lum[y, x] for (i, j), (x, y) in centers.items() if i != j]
    assert min(diagonal) > max(off)
    assert np.mean(diagonal) > np.mean(off) + 100


def test_png_round_trip() -> None:
    matrix = diagonal_matrix(5, 4)
    data = render_matrix_png(matrix, MatrixMarks(two_cycles=[(0, 0)]))
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    decoded = Image.open(io.BytesIO(data)).convert("RGB")
    expected, _ = render_matrix(matrix, MatrixMarks(two_cycles=[(0, 0)]))
    assert np.array_equal(np.asarray(decoded), np.asarray(expected))


MARK_COLORS = {tuple(c) for c in COLORS.values()}


def mark_pixels(image: Image.Image, box: tuple[int, int, int, int]) -> dict[tuple[int, int, int], int]:
    """How many pixels of each mark colour lie in a pixel box (inclusive)."""
    x0, y0, x1, y1 = box
    rgb = np.asarray(image)[y0 : y1 + 1, x0 : x1 + 1].reshape(-1, 3)
    counts: dict[tuple[int, int, int], int] = {}
    for color in MARK_COLORS:
        n = int((rgb == np.array(color)).all(axis=1).sum())
        if n:
            counts[color] = n
    return counts


def test_marks_land_in_their_cells() -> None:
    matrix = np.zeros((6, 6))  # all one dark colour: any mark colour found was drawn
    marks = MatrixMarks(
        two_cycles=[(0, 0), (1, 1)],
        three_cycles=[(1, 1), (2, 3)],
        confirmed=[(4, 4)],
        rejected=[(5, 0)],
        ground_truth=[(0, 0), (3, 2)],
    )
    image, geometry = render_matrix(matrix, marks)
    cell = geometry.cell

    # 2-cycle: white outline on the cell's border, not in its centre
    x0, y0, x1, y1 = geometry.box(0, 0)
    assert pixel(image, (x0 + cell // 2, y0)) == COLORS["two_cycles"]
    assert pixel(image, (x0, y0 + cell // 2)) == COLORS["two_cycles"]
    assert pixel(image, geometry.center(0, 0)) not in MARK_COLORS
    # ground truth: corner ticks, over the corners of a 2-cycle outline
    assert pixel(image, geometry.box(0, 0)[:2]) == COLORS["ground_truth"]
    x0, y0, x1, y1 = geometry.box(3, 2)
    assert pixel(image, (x0, y0)) == COLORS["ground_truth"]
    assert pixel(image, (x1, y1)) == COLORS["ground_truth"]
    # 3-cycle: an inner outline, inside the 2-cycle one when both apply
    x0, y0, x1, y1 = geometry.box(1, 1)
    counts = mark_pixels(image, geometry.box(1, 1))
    assert counts.get(COLORS["two_cycles"], 0) > 0 and counts.get(COLORS["three_cycles"], 0) > 0
    assert pixel(image, (x0, y0 + cell // 2)) == COLORS["two_cycles"]
    assert COLORS["three_cycles"] in mark_pixels(image, geometry.box(2, 3))
    # confirmed: green centre; rejected: red cross through the centre
    assert pixel(image, geometry.center(4, 4)) == COLORS["confirmed"]
    assert pixel(image, geometry.center(5, 0)) == COLORS["rejected"]

    marked = {(0, 0), (1, 1), (2, 3), (4, 4), (5, 0), (3, 2)}
    for i in range(6):
        for j in range(6):
            if (i, j) not in marked:
                assert mark_pixels(image, geometry.box(i, j)) == {}, (i, j)


def test_marks_outside_the_matrix_are_ignored() -> None:
    image, _ = render_matrix(np.zeros((3, 3)), MatrixMarks(two_cycles=[(3, 0), (-1, 2)], ground_truth=[(0, 9)]))
    assert mark_pixels(image, (0, 0, image.width - 1, image.height - 1)) == {}


def test_large_matrix_is_max_pooled_so_a_peak_survives() -> None:
    matrix = np.zeros((3000, 100))
    matrix[2999, 50] = 1.0
    image, geometry = render_matrix(matrix, max_side=1024)
    assert geometry.factor == 3 and geometry.cell == 1
    assert image.size == (34, 1000)
    lum = luminance(np.asarray(image))
    x, y = geometry.center(2999, 50)
    assert (x, y) == (16, 999)
    assert lum[y, x] == lum.max() and (lum == lum.max()).sum() == 1


def test_tiny_cells_are_coloured_by_their_strongest_mark() -> None:
    matrix = np.zeros((400, 300))
    marks = MatrixMarks(two_cycles=[(10, 20), (30, 40)], confirmed=[(30, 40)], ground_truth=[(50, 60)])
    image, geometry = render_matrix(matrix, marks, max_side=800)
    assert geometry.cell == 2
    assert pixel(image, geometry.center(10, 20)) == COLORS["two_cycles"]
    assert pixel(image, geometry.center(30, 40)) == COLORS["confirmed"]
    assert pixel(image, geometry.center(50, 60)) == COLORS["ground_truth"]


@pytest.mark.parametrize("matrix", [np.full((3, 4), 0.7), np.full((2, 2), np.nan), np.zeros((0, 5))])
def test_degenerate_matrices_render(matrix: np.ndarray) -> None:
    data = render_matrix_png(matrix)
    assert Image.open(io.BytesIO(data)).size[0] >= 1


def test_nan_cells_are_grey() -> None:
    matrix = diagonal_matrix(3, 3)
    matrix[0, 2] = np.nan
    image, geometry = render_matrix(matrix)
    assert pixel(image, geometry.center(0, 2)) == NAN_COLOR


def test_layout_rejects_a_bad_size() -> None:
    with pytest.raises(ValueError, match="max_side"):
        layout((3, 3), 0)
    with pytest.raises(ValueError, match="matrix"):
        render_matrix(np.zeros(5))

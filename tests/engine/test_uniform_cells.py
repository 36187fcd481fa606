"""Uniform cells (``features.uniform_cells``, docs/transpositions.md "Uniform cells"): a cell of one colour
(bare paper, a fill, a turned copy's corners, a lost patch) has a zero descriptor and never matches, so two
pictures turned alike in enlarged frames do not match each other by their paper corners."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image
from synthetic import PAPER, drawing, hard_copy

from collation.core import defaults
from collation.core.options import CollationOptions
from collation.engine.evaluation import accuracy
from collation.engine.features import cells_for_scale, extract_features, image_to_tensor, uniform_cells
from collation.engine.pipeline import assemble, correspond, describe, score_manuscripts


def turn(image: Image.Image, angle: int) -> Image.Image:
    """``image`` turned in a frame enlarged to hold it, the uncovered corners paper (as a copyist slants it)."""
    return image.rotate(angle, Image.Resampling.BICUBIC, expand=True, fillcolor=PAPER)


def test_a_cell_of_one_colour_is_uniform_and_a_drawn_one_is_not():
    pixels = torch.zeros((3, 32, 48))
    pixels[:] = torch.tensor(PAPER).view(3, 1, 1) / 255
    pixels[:, 16:, 16:32] += torch.linspace(-0.2, 0.2, 16)  # strokes across cell (1, 1)
    pixels[:, :16, 32:] += 2 / 255 * (torch.arange(16) % 2)  # scanner noise of 1 grey level in cell (0, 2)
    assert uniform_cells(pixels, 2, 3).tolist() == [True, True, True, True, False, True]
    assert uniform_cells(pixels, 2, 3, below=0.5).tolist() == [True, True, False, True, False, True]


def test_uniform_cells_have_zero_descriptors_and_drawn_ones_unit_norm(backbone):
    image = turn(drawing(0), 30)
    feats = extract_features([image], backbone, scales=(20,), query_scale=20)
    rows, cols = cells_for_scale(*image.size, 20)
    count = rows * cols
    flat = uniform_cells(image_to_tensor(image, rows, cols), rows, cols, defaults.UNIFORM_CELL_STD)
    norms = feats.desc[0, 0, :count].norm(dim=1)
    assert 0.1 < float(flat.float().mean()) < 0.9  # the paper corners and margins, not the strokes
    assert torch.equal(norms[flat], torch.zeros(int(flat.sum())))
    assert torch.allclose(norms[~flat], torch.ones(int((~flat).sum())), atol=1e-5)


@pytest.mark.heavy
def test_turned_copies_match_their_originals_not_pictures_turned_alike(backbone):
    """Three hard copies turned ±30° in enlarged frames, among four unrelated drawings turned so in the first
    witness: with default options, each copy's best match at P_S is its original (before uniform cells, each
    matched a turned stranger by its paper corners, and was never tried turned)."""
    n = 6
    first = [drawing(k) for k in range(n)] + [turn(drawing(20 + k), 30 if k % 2 else -30) for k in range(4)]
    copies = [hard_copy(drawing(k), k) for k in range(n)]
    second = [turn(c, 30 if k % 2 else -30) if k < 3 else c for k, c in enumerate(copies)]
    truth = np.array([(k, k) for k in range(n)])
    options = CollationOptions()
    feats0, feats1 = describe(first, backbone, options), describe(second, backbone, options)
    matrix, _ = assemble((len(first), n), *score_manuscripts(feats0, feats1, second, backbone, options))
    p_s = correspond({(0, 1): matrix}, options)[(0, 1)].P_S
    assert p_s.argmax(axis=0).tolist() == list(range(n))
    assert accuracy(p_s, truth) == 1.0

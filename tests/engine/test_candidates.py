"""Candidate pruning: top-k in both directions, and unscored pairs that never shift a statistic."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from synthetic import hard_copy, restyled_copy, shapes

from collation.core import defaults
from collation.core.errors import InputError
from collation.engine.candidates import UNSCORED, global_descriptors, global_scores, recall, top_k_pairs, whitened
from collation.engine.correspondences import mutual_best, normalize, propagate
from collation.engine.features import MultiScaleFeatures, extract_features


def test_candidates_are_the_union_of_row_and_column_top_k():
    scores = np.array([[0.9, 0.1, 0.2], [0.8, 0.7, 0.1], [0.85, 0.2, 0.3], [0.1, 0.2, 0.95]])
    pairs = {tuple(p) for p in top_k_pairs(scores, 1).tolist()}
    rows = {(0, 0), (1, 0), (2, 0), (3, 2)}  # each row's best column
    cols = {(0, 0), (1, 1), (3, 2)}  # each column's best row
    assert pairs == rows | cols
    assert len(top_k_pairs(scores, 5)) == scores.size  # k beyond the other side: every pair
    assert recall(top_k_pairs(scores, 1), np.array([[1, 1], [2, 2]])) == 0.5
    with pytest.raises(InputError, match="candidates"):
        top_k_pairs(scores, 0)


def test_unscored_pairs_do_not_shift_maxima_averages_or_softmax_sums():
    dense = np.array([[2.0, 1.0, 0.5], [1.0, 1.5, 0.2]])
    sparse = dense.copy()
    sparse[0, 2] = UNSCORED
    for method in ("max", "avg", "softmax", "softmax-max"):
        n = normalize(sparse, method)
        assert np.isfinite(n[1]).all() and np.isfinite(n[0, :2]).all()
        assert n[0, 2] == (0.0 if method.startswith("softmax") else -np.inf)
    avg = normalize(sparse, "avg")
    assert np.isclose(avg[0, 0], 2.0 / 1.5 + 2.0 / 1.5)  # row mean over the two scored pairs only
    n = normalize(sparse, "max")
    assert np.isclose(n[1, 2], 0.2 / 1.5 + 1.0)  # the column's max is its one scored pair
    assert np.isneginf(propagate(n, mutual_best(n))[0, 2])


def test_a_row_without_scored_pairs_has_no_best_match():
    s = np.array([[UNSCORED, UNSCORED], [1.0, 0.5]])
    assert mutual_best(normalize(s, "max")).tolist() == [[1, 0]]


def test_global_descriptors_are_unit_vectors_of_the_real_cells():
    desc = torch.zeros(1, 1, 4, 3)
    desc[0, 0, :2] = torch.tensor([1.0, 0.0, 0.0])
    desc[0, 0, 2:] = torch.tensor([0.0, 5.0, 0.0])  # padded cells: never read
    mask = torch.tensor([[[True, True, False, False]]])
    feats = MultiScaleFeatures(desc, torch.full((1, 1, 4, 2), 0.5), mask, (1,), 1, "efficientnet-lite0")
    g = global_descriptors(feats, grid=1)  # one illustration: nothing to centre on
    assert torch.allclose(g, torch.tensor([[1.0, 0.0, 0.0]]))
    assert global_descriptors(feats).shape == (1, 4 * 3)


def test_global_descriptors_keep_the_layout_and_drop_what_a_manuscript_shares():
    # 2 x 2 cells; channel 3 is the page every illustration shares, channels 0 and 1 the drawing.
    left, right, page = torch.eye(4)[0], torch.eye(4)[1], torch.eye(4)[3]
    pos = torch.tensor([[0.25, 0.25], [0.75, 0.25], [0.25, 0.75], [0.75, 0.75]]).expand(3, 1, 4, 2)
    drawings = [(left, right), (right, left), (left, right)]  # the second mirrored, the third a copy
    desc = torch.stack([torch.stack([a, b, a, b]) + page for a, b in drawings]).unsqueeze(1)
    feats = MultiScaleFeatures(desc, pos.clone(), torch.ones(3, 1, 4, dtype=torch.bool), (2,), 2, "x")
    g = global_descriptors(feats)
    assert g.shape == (3, 16) and torch.allclose(g.norm(dim=1), torch.ones(3))
    cos = g @ g.T
    assert float(cos[0, 2]) == pytest.approx(1.0, abs=1e-6)
    assert cos[0, 1] < 0  # same cells, other layout: centred, the two differ as much as they can
    whole = global_descriptors(feats, grid=1) @ global_descriptors(feats, grid=1).T
    assert float(whole[0, 1]) == pytest.approx(float(whole[0, 2]), abs=1e-6)  # one region cannot tell them apart
    assert np.allclose(global_scores(feats, feats, whitening=None), cos.numpy(), atol=1e-6)


def test_whitening_ranks_a_copy_in_another_style_first_in_its_originals_row():
    # 40 subjects drawn in each manuscript; the second draws every other one in another style: a large shift
    # along one direction (as a line-art copy of a painted drawing). In its original's row, the plain cosine
    # puts the restyled copy behind the copies that kept the style; whitening by the collation's own spread
    # weighs that direction down (issue 38, eighth round).
    n, dim = 40, 32
    rng = torch.Generator().manual_seed(0)
    subjects = torch.randn(n, dim, generator=rng)
    style = torch.zeros(dim)
    style[0] = 4.0
    sign = torch.where(torch.arange(n) % 2 == 0, 1.0, -1.0)[:, None]  # odd subjects restyled
    g0 = torch.nn.functional.normalize(subjects + 0.5 * torch.randn(n, dim, generator=rng) + style, dim=1)
    g1 = torch.nn.functional.normalize(subjects + 0.5 * torch.randn(n, dim, generator=rng) + sign * style, dim=1)

    def first_in_row(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a @ b.T).argmax(dim=1) == torch.arange(n)

    assert int(first_in_row(g0, g1)[1::2].sum()) == 2  # of 20 restyled copies
    w0, w1 = whitened(g0, g1, defaults.CANDIDATES_WHITENING)
    assert w0.shape == (n, dim) and torch.allclose(w0.norm(dim=1), torch.ones(n), atol=1e-6)
    assert int(first_in_row(w0, w1)[1::2].sum()) == 18 and int(first_in_row(w0, w1)[::2].sum()) == 20
    plain0, plain1 = whitened(g0, g1, 1e9)  # shrinkage far above every spread: the centred cosine
    centred = torch.cat([g0, g1]) - torch.cat([g0, g1]).mean(dim=0)
    expected = torch.nn.functional.normalize(centred, dim=1)
    assert torch.allclose(torch.cat([plain0, plain1]), expected, atol=1e-5)
    with pytest.raises(InputError, match="whitening"):
        whitened(g0, g1, 0.0)
    one, other = whitened(g0[:1], g1[:0], 3.0)  # a single descriptor: nothing to learn, returned as it is
    assert torch.equal(one, g0[:1]) and other.shape == (0, dim)


@pytest.mark.heavy
def test_whitening_puts_outline_copies_of_painted_illustrations_first_among_painted_distractors(backbone):
    # 64 painted illustrations (filled shapes) and 32 others; the second manuscript copies the 64, every other one
    # redrawn in thin outlines (hard_copy: a warp, a lost patch, outlines in another ink), the rest restyled but
    # still painted, among 64 painted distractors: the line-art copies of issue 38's eighth round, in small.
    n = 64
    originals = [shapes(k) for k in range(n)] + [shapes(900 + k) for k in range(32)]
    copies = [hard_copy(im, k) if k % 2 else restyled_copy(im) for k, im in enumerate(originals[:n])]
    copies += [restyled_copy(shapes(500 + k)) for k in range(64)]
    # the global descriptors read the query scale only: the other four are not extracted
    query = {"scales": (defaults.QUERY_SCALE,), "query_scale": defaults.QUERY_SCALE}
    feats0, feats1 = extract_features(originals, backbone, **query), extract_features(copies, backbone, **query)
    outlines = np.stack([np.arange(1, n, 2)] * 2, axis=1)
    painted = np.stack([np.arange(0, n, 2)] * 2, axis=1)
    plain = top_k_pairs(global_scores(feats0, feats1, whitening=None), 1)
    white = top_k_pairs(global_scores(feats0, feats1), 1)
    assert recall(plain, outlines) <= 0.9  # measured 0.75-0.81: 6-8 of 32 outline copies first in neither direction
    assert recall(white, outlines) >= 31 / 32  # measured 1.0
    assert recall(white, painted) == 1.0 and recall(plain, painted) == 1.0

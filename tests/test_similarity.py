"""S_trans, S_matching and S_features on illustrations the tests draw."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from synthetic import drawing, restyled_copy

from collation.errors import InputError
from collation.features import extract_features, extract_square_features
from collation.similarity import all_pairs, score_features_matrix, score_matrix, score_pairs

N = 5


@pytest.fixture(scope="module")
def originals(backbone):
    return extract_features([drawing(k) for k in range(N)], backbone)


@pytest.fixture(scope="module")
def copies(backbone):
    return extract_features([restyled_copy(drawing(k)) for k in range(N)], backbone)


def _margins(matrix: np.ndarray) -> np.ndarray:
    """Diagonal score minus the best off-diagonal score of its row."""
    off = matrix + np.diag(np.full(len(matrix), -np.inf))
    return np.diag(matrix) - off.max(axis=1)


@pytest.mark.parametrize("similarity", ["s_trans", "s_matching"])
def test_a_warped_restyled_copy_beats_unrelated_drawings(originals, copies, similarity):
    s = score_matrix(originals, copies, similarity=similarity)
    assert s.shape == (N, N) and (s >= 0).all() and (s <= 2).all()
    assert (s.argmax(axis=1) == np.arange(N)).all() and (s.argmax(axis=0) == np.arange(N)).all()
    assert _margins(s).min() > 0.3


def test_s_trans_beats_s_matching_under_a_geometric_change(originals, copies):
    trans = score_matrix(originals, copies, similarity="s_trans")
    matching = score_matrix(originals, copies, similarity="s_matching")
    # Without a transform, matches displaced by the warp count less: the diagonal drops.
    assert (np.diag(trans) > np.diag(matching)).all()


def test_identical_images_score_almost_two(originals):
    # Every query cell finds itself at the query scale under the identity map; only cells of blank
    # paper, whose descriptors tie with their neighbours', may settle for a neighbour.
    s = score_pairs(originals, originals, [[0, 0], [1, 1]])
    assert ((s > 1.97) & (s <= 2.0 + 1e-9)).all()


def test_same_seed_same_scores_any_chunking_any_order(originals, copies):
    pairs = all_pairs(N, N)
    full = score_pairs(originals, copies, pairs, seed=7)
    again = score_pairs(originals, copies, pairs.flip(0), seed=7, batch_size=3).flip(0)
    assert torch.equal(full, again)
    swapped = score_pairs(copies, originals, pairs[:, [1, 0]], seed=7)
    assert torch.allclose(full, swapped, atol=1e-12, rtol=0)


def test_another_seed_moves_scores_only_slightly(originals, copies):
    a = score_matrix(originals, copies, seed=0)
    b = score_matrix(originals, copies, seed=1)
    assert not np.array_equal(a, b)
    assert np.abs(a - b).max() < 0.1


def test_manuscripts_of_different_padding_and_sizes(backbone, originals):
    tall = extract_features([drawing(9, (120, 300)), drawing(10, (300, 90))], backbone)
    s = score_matrix(originals, tall)
    assert s.shape == (N, 2) and np.isfinite(s).all()
    assert np.allclose(score_matrix(tall, originals), s.T, atol=1e-12)


def test_s_features_is_the_mean_same_location_cosine(backbone):
    images = [drawing(k) for k in range(3)]
    square = extract_square_features(images, backbone)
    s = score_features_matrix(square, extract_square_features([restyled_copy(im) for im in images], backbone))
    assert (s.argmax(axis=1) == np.arange(3)).all()
    manual = (square[0] * square[1]).sum(-1).mean().item()
    assert np.isclose(score_features_matrix(square, square)[0, 1], manual, atol=1e-6)
    assert np.allclose(np.diag(score_features_matrix(square, square)), 1.0, atol=1e-4)


def test_bad_requests_are_input_errors(originals):
    with pytest.raises(InputError, match="out of range"):
        score_pairs(originals, originals, [[0, N]])
    with pytest.raises(InputError, match="s_trans or s_matching"):
        score_pairs(originals, originals, [[0, 0]], similarity="s_features")

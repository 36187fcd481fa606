"""S_trans, S_matching and S_features on illustrations the tests draw."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from engine_grid import COSINE_TOLERANCE, device_dtype_grid, full_scores, tolerance
from synthetic import drawing, restyled_copy

from collation.core.errors import DTypeError, IndexRangeError, InputError, OptionError, ShapeError
from collation.engine.features import MultiScaleFeatures, extract_features, extract_square_features
from collation.engine.similarity import (
    _tasks,
    all_pairs,
    directional_scores,
    mutual_matches,
    score_pairs,
)

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
@pytest.mark.heavy
def test_a_warped_restyled_copy_beats_unrelated_drawings(originals, copies, similarity):
    s = full_scores(originals, copies, similarity=similarity)
    assert s.shape == (N, N) and (s >= 0).all() and (s <= 2).all()
    assert (s.argmax(axis=1) == np.arange(N)).all() and (s.argmax(axis=0) == np.arange(N)).all()
    assert _margins(s).min() > 0.3


@pytest.mark.heavy
def test_s_trans_beats_s_matching_under_a_geometric_change(originals, copies):
    trans = full_scores(originals, copies, similarity="s_trans")
    matching = full_scores(originals, copies, similarity="s_matching")
    # Without a transform, matches displaced by the warp count less: the diagonal drops.
    assert (np.diag(trans) > np.diag(matching)).all()


def test_identical_images_score_twice_their_drawn_share(originals):
    # Every drawn query cell finds itself at the query scale under the identity map; the uniform cells of
    # bare paper have zero descriptors (features.uniform_cells) and match nothing, though N_Q counts them.
    s, _ = score_pairs(originals, originals, [[0, 0], [1, 1]])
    q = originals.query_index
    drawn = (originals.desc[:2, q].norm(dim=-1) > 0).sum(dim=1) / originals.mask[:2, q].sum(dim=1)
    assert (drawn > 0.3).all() and (drawn < 1).all()
    assert ((s > 2 * drawn.double() - 0.03) & (s <= 2 * drawn.double() + 1e-6)).all()


@pytest.mark.heavy
def test_same_seed_same_scores_any_chunking_any_order(originals, copies):
    pairs = all_pairs(N, N)
    full, winners = score_pairs(originals, copies, pairs, seed=7)
    again = score_pairs(originals, copies, pairs.flip(0), seed=7, batch_size=3)[0].flip(0)
    assert torch.equal(full, again) and full.dtype == torch.float64
    for workers in (1, 3):  # one task, or tasks side by side on one thread each
        assert torch.equal(score_pairs(originals, copies, pairs, seed=7, workers=workers)[0], full)
    assert winners.dtype == torch.int8 and not winners.any()  # one transposition: as drawn
    swapped, _ = score_pairs(copies, originals, pairs[:, [1, 0]], seed=7)
    assert torch.allclose(full, swapped, atol=1e-12, rtol=0)


@pytest.mark.heavy
def test_another_seed_moves_scores_only_slightly(originals, copies):
    a = full_scores(originals, copies, seed=0)
    b = full_scores(originals, copies, seed=1)
    assert not np.array_equal(a, b)
    assert np.abs(a - b).max() < 0.1


@pytest.mark.heavy
def test_manuscripts_of_different_padding_and_sizes(backbone, originals):
    tall = extract_features([drawing(9, (120, 300)), drawing(10, (300, 90))], backbone)
    s = full_scores(originals, tall)
    assert s.shape == (N, 2) and np.isfinite(s).all()
    assert np.allclose(full_scores(tall, originals), s.T, atol=1e-12)


@pytest.mark.heavy
def test_s_features_is_the_mean_same_location_cosine(backbone):
    images = [drawing(k) for k in range(3)]
    square = extract_square_features(images, backbone)
    assert square.desc.shape[:3] == (3, 1, 256) and square.scales == (16,) and square.mask.all()
    copies = extract_square_features([restyled_copy(im) for im in images], backbone)
    s = full_scores(square, copies, similarity="s_features")
    assert (s.argmax(axis=1) == np.arange(3)).all()
    manual = (square.desc[0, 0] * square.desc[1, 0]).sum(-1).mean().item()
    same = full_scores(square, square, similarity="s_features")
    assert np.isclose(same[0, 1], manual, atol=1e-6)
    assert np.allclose(np.diag(same), 1.0, atol=1e-4)
    # A pair's S_features does not depend on the other pairs it is computed with.
    pairs = torch.tensor([[2, 0], [0, 1], [2, 2]])
    expected = [s[2, 0], s[0, 1], s[2, 2]]
    assert np.allclose(score_pairs(square, copies, pairs, similarity="s_features")[0].numpy(), expected, atol=1e-12)


def test_bad_requests_are_input_errors(originals):
    with pytest.raises(IndexRangeError, match="out of range"):
        score_pairs(originals, originals, [[0, N]])
    with pytest.raises(InputError, match="square features"):
        score_pairs(originals, originals, [[0, 0]], similarity="s_features")


@pytest.mark.parametrize(
    ("option", "value", "allowed"),
    [
        ("similarity", "s_cosine", "s_trans, s_matching, s_features"),
        ("kernel", "gaussian", "reference, paper"),
    ],
)
def test_unknown_options_of_score_pairs_name_the_allowed_values(originals, option, value, allowed):
    with pytest.raises(OptionError, match=f"unknown {option} '{value}': choose one of {allowed}") as e:
        score_pairs(originals, originals, [[0, 0]], **{option: value})
    assert e.value.field == option
    with pytest.raises(OptionError, match=option):
        full_scores(originals, originals, **{option: value})


def test_pairs_must_be_p_by_2_integers(originals):
    with pytest.raises(ShapeError) as e:
        score_pairs(originals, originals, [0, 1, 2])
    assert e.value.actual == (3,) and e.value.expected == ("P", 2)
    with pytest.raises(ShapeError):
        score_pairs(originals, originals, [[0, 1, 2]])
    with pytest.raises(DTypeError):
        score_pairs(originals, originals, [[0.0, 1.0]])
    scores, winners = score_pairs(originals, originals, np.zeros((0, 2), np.int64))
    assert scores.shape == winners.shape == (0,)
    for bad in ({"seed": 1.5}, {"iterations": 0}, {"batch_size": 0}):
        with pytest.raises(InputError, match=next(iter(bad))):
            score_pairs(originals, originals, [[0, 0]], **bad)


def test_directional_scores_and_matches_check_their_shapes():
    target, pos = torch.zeros(2, 5, 30, 8), torch.zeros(2, 5, 30, 2)
    query, qpos, cells = torch.zeros(2, 20, 8), torch.zeros(2, 20, 2), torch.full((2,), 20)
    with pytest.raises(ShapeError, match=r"query must have shape \(B, Lq, C\)") as e:
        mutual_matches(target, torch.zeros(3, 20, 8))
    assert "B is 2 elsewhere" in str(e.value)
    with pytest.raises(ShapeError, match="C is 8 elsewhere"):
        directional_scores(target, pos, torch.zeros(2, 20, 4), qpos, cells, None)
    with pytest.raises(ShapeError, match="draws"):
        directional_scores(target, pos, query, qpos, cells, torch.zeros(2, 100, 2))
    with pytest.raises(OptionError, match="kernel"):
        directional_scores(target, pos, query, qpos, cells, None, kernel="Paper")


def test_feature_sets_must_agree(originals):
    other = replace(originals, desc=originals.desc[..., :64])
    with pytest.raises(InputError, match="channels"):
        score_pairs(originals, other, [[0, 0]])
    with pytest.raises(InputError, match="square features"):
        score_pairs(originals, originals, [[0, 0]], similarity="s_features")


# -- the device x dtype grid -------------------------------------------------------------------------


def _on(feats: MultiScaleFeatures, device: str, dtype: torch.dtype) -> MultiScaleFeatures:
    return replace(feats, desc=feats.desc.to(dtype)).to(device)


@device_dtype_grid
def test_mutual_nearest_neighbours_are_the_same_in_every_dtype(device, dtype):
    # 30 query cells are noisy copies of target cells (in another order at each of the two target
    # scales, which also hold 10 unrelated cells): partners have a cosine near 0.99, all other
    # couples near 0 (±0.3), a margin no rounding of 2⁻⁸ can cross. Tolerance: COSINE_TOLERANCE.
    g = torch.Generator().manual_seed(0)
    query = torch.nn.functional.normalize(torch.randn(3, 30, 64, generator=g), dim=-1)
    order = torch.stack([torch.randperm(40, generator=g)[:30] for _ in range(2)])  # (S, Lq) partner of each cell
    target = torch.nn.functional.normalize(torch.randn(3, 2, 40, 64, generator=g), dim=-1)
    for s in range(2):
        target[:, s, order[s]] = torch.nn.functional.normalize(
            query + 0.02 * torch.randn(3, 30, 64, generator=g), dim=-1
        )
    sim, index, valid = mutual_matches(target, query)
    assert torch.equal(index, order.expand(3, -1, -1)) and valid.all()  # the float32 reference is right
    sim_d, index_d, valid_d = mutual_matches(target.to(device, dtype), query.to(device, dtype))
    assert sim_d.dtype == torch.float32 and sim_d.device.type == device
    assert torch.equal(index_d.cpu(), index) and torch.equal(valid_d.cpu(), valid)
    assert (sim_d.cpu() - sim).abs().max() <= tolerance(dtype, COSINE_TOLERANCE)


@device_dtype_grid
@pytest.mark.parametrize("similarity", ["s_trans", "s_matching"])
@pytest.mark.heavy
def test_score_decisions_are_the_same_in_every_dtype(originals, copies, device, dtype, similarity):
    reference = full_scores(originals, copies, similarity=similarity)
    s = full_scores(_on(originals, device, dtype), _on(copies, device, dtype), similarity=similarity)
    assert s.dtype == np.float64 and s.shape == (N, N)
    assert (s.argmax(axis=1) == reference.argmax(axis=1)).all()
    assert (s.argmax(axis=0) == reference.argmax(axis=0)).all()
    assert np.abs(s - reference).max() <= tolerance(dtype)


@device_dtype_grid
@pytest.mark.heavy
def test_s_features_decisions_are_the_same_in_every_dtype(backbone, device, dtype):
    images = [drawing(k) for k in range(3)]
    square0 = extract_square_features(images, backbone)
    square1 = extract_square_features([restyled_copy(im) for im in images], backbone)
    reference = full_scores(square0, square1, similarity="s_features")
    s = full_scores(_on(square0, device, dtype), _on(square1, device, dtype), similarity="s_features")
    assert (s.argmax(axis=1) == reference.argmax(axis=1)).all()
    assert np.abs(s - reference).max() <= tolerance(dtype, COSINE_TOLERANCE)


def test_tasks_hold_whole_targets_and_every_couple():
    runs = [(0, 5), (5, 70), (70, 71), (71, 200), (200, 203)]
    tasks = _tasks(runs, 64)
    assert tasks == [[(0, 5), (5, 70)], [(70, 71), (71, 200)], [(200, 203)]]
    assert [run for task in tasks for run in task] == runs
    assert _tasks([], 64) == []

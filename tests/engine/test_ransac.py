"""Batched affine RANSAC: sampling, fitting, selection, scoring."""

from __future__ import annotations

import math

import pytest
import torch
from engine_grid import device_grid

from collation.core.errors import DTypeError, OptionError, ShapeError
from collation.engine.ransac import (
    KERNELS,
    cell_scores,
    compact_matches,
    fit_affine,
    ransac_scores,
    sample_triples,
    select_hypothesis,
    transfer_error2,
    uniform_draws,
)

TRUE_AFFINE = torch.tensor([[0.9, 0.1], [-0.15, 1.1], [0.05, -0.02]], dtype=torch.float64)  # [x, y, 1] @ A


def test_fit_affine_recovers_a_known_map_exactly():
    src = torch.tensor([[0.1, 0.2], [0.8, 0.3], [0.4, 0.9]], dtype=torch.float64)
    dst = torch.cat([src, torch.ones(3, 1, dtype=torch.float64)], dim=1) @ TRUE_AFFINE
    assert torch.allclose(fit_affine(src, dst), TRUE_AFFINE, atol=1e-10)


def test_fit_affine_is_batched_and_finite_on_collinear_points():
    src = torch.tensor([[[0.1, 0.1], [0.2, 0.2], [0.3, 0.3]]] * 4)
    out = fit_affine(src, src)
    assert out.shape == (4, 3, 2) and torch.isfinite(out).all()


def test_uniform_draws_depend_only_on_seed_and_key():
    keys = torch.tensor([[0, 1], [1, 0], [5, 7]])
    a = uniform_draws(0, keys, (100, 3))
    assert a.shape == (3, 100, 3) and (a >= 0).all() and (a < 1).all()
    assert torch.equal(a[2], uniform_draws(0, keys[2:], (100, 3))[0])  # batch composition is irrelevant
    assert not torch.equal(a[0], a[1])  # (0, 1) and (1, 0) are different keys
    assert not torch.equal(a, uniform_draws(1, keys, (100, 3)))
    big = uniform_draws(3, torch.zeros((1, 2), dtype=torch.long), (100_000,))
    assert abs(big.mean().item() - 0.5) < 0.01 and abs(big.var().item() - 1 / 12) < 0.002


def test_sample_triples_drops_repeats_and_needs_three_matches():
    count = torch.tensor([10, 2])
    draws = torch.tensor([[[0.05, 0.55, 0.95], [0.1, 0.12, 0.5]]] * 2, dtype=torch.float64)
    idx, ok = sample_triples(count, draws)
    assert idx[0].tolist() == [[0, 5, 9], [1, 1, 5]]
    assert ok.tolist() == [[True, False], [False, False]]
    assert (idx[1] <= 1).all()


def test_compact_matches_moves_valid_slots_first():
    valid = torch.tensor([[False, True, False, True], [True, False, False, False]])
    data = torch.arange(8).view(2, 4)
    v, d = compact_matches(valid, data)
    assert v.tolist() == [[True, True], [True, False]]
    assert d[0].tolist() == [1, 3] and d[1, 0].item() == 4


def test_cell_scores_keep_the_best_match_of_each_cell():
    error2 = torch.zeros(1, 3, 1)
    sim = torch.tensor([[0.5, 0.8, 0.3]])
    cell = torch.tensor([[0, 0, 1]])
    assert math.isclose(cell_scores(error2, sim, cell, 2, 0.02).item(), 0.8 + 0.3, rel_tol=1e-6)


def _synthetic_matches(n_in: int = 60, n_out: int = 40, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    src = torch.rand(n_in + n_out, 2, generator=g, dtype=torch.float64)
    dst = torch.cat([src, torch.ones(len(src), 1, dtype=torch.float64)], dim=1) @ TRUE_AFFINE
    dst[n_in:] = torch.rand(n_out, 2, generator=g, dtype=torch.float64)  # outliers
    return src[None], dst[None], torch.ones(1, n_in + n_out, dtype=torch.float64)


def test_ransac_recovers_a_known_affine_among_outliers():
    src, dst, sim = _synthetic_matches()
    cell = torch.arange(100)[None]
    draws = uniform_draws(0, torch.tensor([[3, 4]]), (100, 3))
    affine, found = select_hypothesis(src, dst, sim, cell, torch.tensor([100]), 100, draws)
    assert found.item()
    assert torch.allclose(affine[0], TRUE_AFFINE, atol=1e-8)
    score = ransac_scores(src, dst, sim, cell, torch.tensor([100]), 100, draws)
    # Each inlier adds exactly 1; outliers add at most a little (those that fall near by chance).
    assert 60 <= score.item() < 60 + 40 * 0.2


def test_paper_kernel_is_wider_than_the_reference_kernel():
    src, dst, sim = _synthetic_matches()
    dst = dst + 0.03  # every match now has a residual
    cell, count = torch.arange(100)[None], torch.tensor([100])
    draws = uniform_draws(0, torch.tensor([[0, 0]]), (100, 3))
    ref = ransac_scores(src, dst, sim, cell, count, 100, draws, kernel="reference")
    paper = ransac_scores(src, dst, sim, cell, count, 100, draws, kernel="paper")
    assert paper.item() > ref.item() > 0


def test_too_few_matches_score_zero():
    src, dst, sim = _synthetic_matches(2, 0)
    draws = uniform_draws(0, torch.tensor([[0, 0]]), (100, 3))
    assert ransac_scores(src, dst, sim, torch.arange(2)[None], torch.tensor([2]), 2, draws).item() == 0.0


# -- the device grid: geometry runs in float32 (the engine's positions) on every device ----------


@device_grid
def test_ransac_recovers_a_known_affine_on_every_device(device):
    src, dst, sim = (t.float().to(device) for t in _synthetic_matches())
    cell, count = torch.arange(100, device=device)[None], torch.tensor([100], device=device)
    draws = uniform_draws(0, torch.tensor([[3, 4]], device=device), (100, 3))
    affine, found = select_hypothesis(src, dst, sim, cell, count, 100, draws)
    assert found.item() and affine.device.type == device and affine.dtype == torch.float32
    assert torch.allclose(affine[0].cpu().double(), TRUE_AFFINE, atol=1e-4)
    score = ransac_scores(src, dst, sim, cell, count, 100, draws)
    assert 60 <= score.item() < 60 + 40 * 0.2


@device_grid
def test_uniform_draws_are_the_same_on_every_device(device):
    keys = torch.tensor([[0, 1], [1, 0], [5, 7]])
    assert torch.equal(uniform_draws(11, keys.to(device), (100, 3)).cpu(), uniform_draws(11, keys, (100, 3)))


# -- boundary checks -------------------------------------------------------------------------------


def test_an_unknown_kernel_is_an_option_error_naming_the_allowed_ones():
    src, dst, sim = _synthetic_matches()
    draws = uniform_draws(0, torch.tensor([[0, 0]]), (100, 3))
    with pytest.raises(OptionError, match="unknown kernel 'gaussian': choose one of reference, paper") as e:
        ransac_scores(src, dst, sim, torch.arange(100)[None], torch.tensor([100]), 100, draws, kernel="gaussian")
    assert e.value.allowed == KERNELS


def test_ransac_inputs_are_shape_checked():
    src, dst, sim = _synthetic_matches()
    cell, count = torch.arange(100)[None], torch.tensor([100])
    draws = uniform_draws(0, torch.tensor([[0, 0]]), (100, 3))
    with pytest.raises(ShapeError) as e:
        ransac_scores(src, dst[:, :50], sim, cell, count, 100, draws)
    assert e.value.name == "query_pos" and e.value.actual == (1, 50, 2) and e.value.expected == ("B", "M", 2)
    with pytest.raises(ShapeError, match="draws"):
        ransac_scores(src, dst, sim, cell, count, 100, draws[..., :2])
    with pytest.raises(ShapeError, match="count"):
        select_hypothesis(src, dst, sim, cell, torch.tensor([100, 100]), 100, draws)
    with pytest.raises(DTypeError, match="cell"):
        cell_scores(torch.zeros(1, 100, 1), sim, cell.float(), 100, 0.02)
    with pytest.raises(ShapeError, match="affine"):
        transfer_error2(torch.zeros(1, 3, 2), src, dst)
    with pytest.raises(ShapeError, match="dst"):
        fit_affine(torch.zeros(4, 3, 2), torch.zeros(4, 4, 2))
    with pytest.raises(ShapeError, match="draws"):
        sample_triples(torch.tensor([10]), torch.zeros(1, 5, 2))
    with pytest.raises(ShapeError, match="tensors"):
        compact_matches(torch.ones(2, 4, dtype=torch.bool), torch.zeros(2, 3))
    with pytest.raises(ShapeError, match="keys"):
        uniform_draws(0, torch.tensor([1, 2]), (3,))

"""Candidate pruning, its first stage: a cheap global score for every pair, and top-k sets.

Each illustration gets one global descriptor that keeps the coarse layout of its picture: its frame
is cut into ``GRID`` x ``GRID`` regions, and each region's query-scale cells are pooled by their
generalized mean (GeM, p = 3; negative parts clipped), centred on the manuscript's mean for that
region (what every illustration of a manuscript shares, such as the page and the script, says nothing
about which one it is) and L2-normalized; the regions are concatenated and normalized again. The two
manuscripts' descriptors are then whitened together by their own PCA (``whitened``: the directions in
which all the collation's illustrations differ most, such as the style of a copy, weigh less). The
global score of a pair is the cosine of the two descriptors, for all pairs at once in chunked matrix
products. ``top_k_pairs`` unites, over both directions, each row's ``k`` best columns and each
column's ``k`` best rows. ``collation.engine.cascade`` builds the candidates of S_trans from these: the
global score alone loses the true partner of hard copies (docs/candidates.md).

Pairs outside the candidate set are *unscored*: their S holds ``UNSCORED`` (-inf), so they are never a
best match and never enter a maximum, an average or a softmax sum (``collation.engine.correspondences``).
The definitions are in docs/candidates.md.
"""

from __future__ import annotations

import numpy as np
import torch

from collation.core import defaults
from collation.core.errors import InputError
from collation.engine.checks import check_positive_float, check_positive_int, check_shape
from collation.engine.features import MultiScaleFeatures

UNSCORED = -np.inf
"""S, N_S and P_S of a pair outside the candidate set: below every score, excluded from every statistic."""


def scattered(shape: tuple[int, int], pairs: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``(n0, n1)`` float64: ``values`` ``(P,)`` at ``pairs`` ``(P, 2)``, ``UNSCORED`` everywhere else."""
    matrix = np.full(shape, UNSCORED)
    if len(pairs):
        matrix[pairs[:, 0], pairs[:, 1]] = values
    return matrix


def global_descriptors(
    feats: MultiScaleFeatures, *, grid: int | None = None, power: float | None = None, chunk: int = 256
) -> torch.Tensor:
    """``(n, grid² C)`` float32 unit vectors: per region, GeM of the query-scale cells, centred, normalized.

    Region (r, c) holds the cells whose centre lies in row r and column c of a ``grid`` x ``grid``
    division of the illustration's own frame (``grid``: default ``defaults.CANDIDATES_GRID``; ``power``:
    ``defaults.CANDIDATES_GEM_POWER``). Centring subtracts the manuscript's mean of each
    region's normalized descriptor (not done for a single illustration, which it would zero).
    """
    grid = check_positive_int("grid", defaults.CANDIDATES_GRID if grid is None else grid)
    power = defaults.CANDIDATES_GEM_POWER if power is None else power
    check_positive_int("chunk", chunk)
    q = feats.query_index
    channels = feats.desc.shape[3]
    regions = []
    for start in range(0, len(feats), chunk):
        desc = feats.desc[start : start + chunk, q].float().clamp(min=0)  # (c, L, C), zero where padded
        real = feats.mask[start : start + chunk, q].unsqueeze(-1).float()  # (c, L, 1)
        cell = (feats.pos[start : start + chunk, q] * grid).long().clamp(max=grid - 1)  # (c, L, 2) as (x, y)
        region = (cell[..., 1] * grid + cell[..., 0]).unsqueeze(-1)  # (c, L, 1)
        sums = desc.new_zeros((len(desc), grid * grid, channels)).scatter_add_(
            1, region.expand_as(desc), desc**power * real
        )
        counts = desc.new_zeros((len(desc), grid * grid, 1)).scatter_add_(1, region, real)
        gem = sums.div(counts.clamp(min=1)).pow(1 / power)
        regions.append(torch.nn.functional.normalize(gem, dim=-1))  # (c, grid², C)
    if not regions:
        return torch.zeros((0, grid * grid * channels), device=feats.desc.device)
    pooled = torch.cat(regions)
    if len(pooled) > 1:
        pooled = torch.nn.functional.normalize(pooled - pooled.mean(dim=0, keepdim=True), dim=-1)
    return torch.nn.functional.normalize(pooled.flatten(1), dim=-1)


def whitened(g0: torch.Tensor, g1: torch.Tensor, shrinkage: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The two sets' descriptors ``(n0, D)``, ``(n1, D)`` whitened by the collation's own PCA, unit vectors.

    A copy and its original can differ along the directions in which all the collation's illustrations
    differ most, such as the style (a line-art copy against its painted model) and the density of ink;
    whitening weighs each principal direction of the two sets' descriptors, taken together, by the inverse
    of its spread, so that the rarer directions, which tell one subject from another, count as much
    (Jégou and Chum, ECCV 2012: PCA-whitening in retrieval). It is learned from the descriptors at hand,
    unsupervised: x -> V (Λ + s λ̄ I)^(-1/2) Vᵀ (x - μ), with μ, V, Λ the mean, eigenvectors and eigenvalues of
    their covariance and λ̄ the mean eigenvalue. The shrinkage s keeps the directions of tiny spread (all
    of them but n - 1 when the collation has fewer illustrations n than D) from being magnified into noise:
    s λ̄ is added to every eigenvalue (large s: the plain descriptors).
    """
    check_positive_float("whitening", shrinkage)
    both = torch.cat([g0, g1]).double()
    if len(both) < 2:  # nothing to learn a spread from
        return g0, g1
    centred = both - both.mean(dim=0)
    values, vectors = torch.linalg.eigh(centred.T @ centred / len(both))
    values = values.clamp(min=0)
    mean_value = values.mean()
    if mean_value <= 0:  # all alike
        return g0, g1
    transform = vectors / (values + shrinkage * mean_value).sqrt() @ vectors.T  # (D, D)
    out = torch.nn.functional.normalize((centred @ transform).to(g0.dtype), dim=-1)
    return out[: len(g0)], out[len(g0) :]


def global_scores(
    feats0: MultiScaleFeatures,
    feats1: MultiScaleFeatures,
    *,
    grid: int | None = None,
    power: float | None = None,
    whitening: float | None = defaults.CANDIDATES_WHITENING,
    chunk: int = 4096,
) -> np.ndarray:
    """``(n0, n1)`` float32 cosines of the global descriptors of every pair (``global_descriptors``' ``grid``
    and ``power``), whitened with shrinkage ``whitening`` (``whitened``; None: not whitened), ``chunk`` rows
    at a time."""
    g0, g1 = (global_descriptors(f, grid=grid, power=power) for f in (feats0, feats1))
    if g0.shape[1] != g1.shape[1]:
        raise InputError("the two feature sets differ in channels", field="features")
    if whitening is not None:
        g0, g1 = whitened(g0, g1, whitening)
    rows = [(g0[s : s + chunk] @ g1.T).cpu() for s in range(0, len(g0), chunk)]
    return torch.cat(rows).numpy() if rows else np.zeros((0, len(g1)), np.float32)


def top_k_pairs(scores: np.ndarray, k: int) -> np.ndarray:
    """Each row's ``k`` best columns and each column's ``k`` best rows, united.

    Args:
        scores: ``(n0, n1)`` global scores.
        k: candidates per illustration and direction, at least 1 (capped by the other side's size).

    Returns:
        ``(P, 2)`` int64 unique pairs (i, j), sorted row-major.
    """
    check_positive_int("candidates", k)
    scores = np.asarray(scores)
    check_shape("scores", scores, ("n0", "n1"))
    n0, n1 = scores.shape
    if scores.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    keep = np.zeros((n0, n1), dtype=bool)
    k1, k0 = min(k, n1), min(k, n0)
    cols = np.argpartition(-scores, k1 - 1, axis=1)[:, :k1]  # (n0, k1)
    keep[np.arange(n0)[:, None], cols] = True
    rows = np.argpartition(-scores, k0 - 1, axis=0)[:k0]  # (k0, n1)
    keep[rows, np.arange(n1)[None, :]] = True
    return np.argwhere(keep).astype(np.int64)


def recall(pairs: np.ndarray, ground_truth: np.ndarray) -> float:
    """Share of the ground-truth pairs ``(G, 2)`` found among ``pairs`` ``(P, 2)`` (1.0 when G is 0)."""
    gt = {tuple(p) for p in np.asarray(ground_truth).reshape(-1, 2).tolist()}
    if not gt:
        return 1.0
    found = {tuple(p) for p in np.asarray(pairs).reshape(-1, 2).tolist()}
    return len(gt & found) / len(gt)

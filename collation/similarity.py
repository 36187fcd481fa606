"""Similarity between illustrations, batched over many pairs: S_trans, S_matching, S_features.

A pair (i, j) of illustrations gets two directional scores (B.1): illustration i of the first set
as target (all scales) against j as query (the query scale), and the reverse. Each directional score
finds the mutual nearest neighbours of every query cell at every target scale (B.4), weighs them by
a Gaussian of their residual (under a RANSAC affine map for S_trans, in place for S_matching), keeps
the best match per query cell and divides by the query's cell count. S = S1 + S2 (B.6).

Batches hold pairs and both directions together; nothing loops over pairs in Python.
"""

from __future__ import annotations

import numpy as np
import torch

from . import defaults
from .checks import (
    as_index_pairs,
    check_dtype,
    check_flag,
    check_integer,
    check_option,
    check_positive_int,
    check_shape,
)
from .errors import InputError
from .features import MultiScaleFeatures, Progress, pad_cells
from .partial import partial_normalizer
from .ransac import KERNELS, cell_scores, compact_matches, ransac_scores, uniform_draws

SIMILARITIES = ("s_trans", "s_matching", "s_features")
"""Every similarity of A.2; ``score_pairs`` computes the first two, ``score_features_matrix`` the third."""

PAIR_SIMILARITIES = ("s_trans", "s_matching")
"""The similarities ``score_pairs`` computes from multi-scale features."""


def mutual_matches(target: torch.Tensor, query: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Mutual nearest neighbours between each query cell and each target scale (B.4).

    Padded cells are zero vectors: their cosine with anything is 0, and matches with a cosine
    of 0 or less are dropped, so padding can never produce a match.

    Args:
        target: ``(B, S, L, C)`` L2-normalized target cells, zero where padded.
        query: ``(B, Lq, C)`` L2-normalized query cells, zero where padded.

    Returns:
        sim ``(B, S, Lq)`` cosine of each query cell's best target cell per scale, index
        ``(B, S, Lq)`` of that target cell, and valid ``(B, S, Lq)``: the match is mutual and its
        cosine positive.
    """
    dims = check_shape("target", target, ("B", "S", "L", "C"))
    check_shape("query", query, ("B", "Lq", "C"), dims)
    b, s, length, c = target.shape
    cos = torch.matmul(target.reshape(b, s * length, c), query.transpose(1, 2)).view(b, s, length, -1)
    sim, index = cos.max(dim=2)  # best target cell of each query cell, per scale
    back = cos.argmax(dim=3)  # best query cell of each target cell, per scale
    mutual = back.gather(2, index) == torch.arange(cos.shape[3], device=cos.device)
    return sim.float(), index, mutual & (sim > 0)


def directional_scores(
    target: torch.Tensor,
    target_pos: torch.Tensor,
    query: torch.Tensor,
    query_pos: torch.Tensor,
    query_cells: torch.Tensor,
    draws: torch.Tensor | None,
    *,
    kernel: str = defaults.KERNEL,
    partial: bool = False,
) -> torch.Tensor:
    """S_trans (with ``draws``) or S_matching (``draws=None``) for a batch of target/query couples.

    Args:
        target: ``(B, S, L, C)`` and target_pos ``(B, S, L, 2)``, zero where padded.
        query: ``(B, Lq, C)`` and query_pos ``(B, Lq, 2)``, zero where padded.
        query_cells: ``(B,)`` real cells of each query, the score's normalizer N_Q.
        draws: ``(B, K, 3)`` uniform numbers for RANSAC, or None for no transform.
        kernel: final Gaussian, one of ``KERNELS``.
        partial: S_trans only: divide by the query cells of the matched area (``collation.partial``).

    Returns:
        ``(B,)`` scores in [0, 1].
    """
    check_option("kernel", kernel, KERNELS)
    dims = check_shape("target", target, ("B", "S", "L", "C"))
    check_shape("target_pos", target_pos, ("B", "S", "L", 2), dims)
    check_shape("query", query, ("B", "Lq", "C"), dims)
    check_shape("query_pos", query_pos, ("B", "Lq", 2), dims)
    check_shape("query_cells", query_cells, ("B",), dims)
    if draws is not None:
        check_shape("draws", draws, ("B", "K", 3), dims)
    sim, index, valid = mutual_matches(target, query)
    b, s, lq = sim.shape
    tpos = target_pos.gather(2, index.unsqueeze(-1).expand(-1, -1, -1, 2)).view(b, s * lq, 2)
    qpos = query_pos.repeat(1, s, 1)  # (B, S * Lq, 2), scale-major like tpos
    cell = torch.arange(lq, device=sim.device).repeat(s).expand(b, -1)
    valid, tpos, qpos, sim, cell = compact_matches(valid.view(b, -1), tpos, qpos, sim.view(b, -1), cell)
    sim = torch.where(valid, sim, 0.0)
    if draws is None:
        sigma2x2 = 2 * defaults.RANSAC_TOLERANCE**2 if kernel == "paper" else defaults.RANSAC_TOLERANCE**2
        error2 = ((tpos - qpos) ** 2).sum(dim=-1, keepdim=True)
        total = cell_scores(error2, sim, cell, lq, sigma2x2).squeeze(1)
    elif partial:  # hook of the partial-copy option (docs/transpositions.md)
        total, affine = ransac_scores(tpos, qpos, sim, cell, valid.sum(dim=1), lq, draws, kernel=kernel,
                                      with_affine=True)
        return (total / partial_normalizer(affine, query_pos, query_cells)).clamp(max=1.0)
    else:
        total = ransac_scores(tpos, qpos, sim, cell, valid.sum(dim=1), lq, draws, kernel=kernel)
    return total / query_cells.clamp(min=1)


def score_pairs(
    feats0: MultiScaleFeatures,
    feats1: MultiScaleFeatures,
    pairs: torch.Tensor | np.ndarray | list,
    *,
    similarity: str = defaults.SIMILARITY,
    seed: int = defaults.SEED,
    kernel: str = defaults.KERNEL,
    iterations: int = defaults.RANSAC_ITERATIONS,
    batch_size: int | None = None,
    progress: Progress | None = None,
    partial: bool = defaults.PARTIAL,
) -> torch.Tensor:
    """Symmetric scores S = S1 + S2 of the pairs (i, j): illustration i of ``feats0``, j of ``feats1``.

    RANSAC samples depend only on the seed and the (target, query) indices of each directional
    score, so a pair's score is the same whatever the batch or chunk it is computed in, and
    ``score_pairs(feats1, feats0, pairs[:, [1, 0]])`` gives the same scores.

    Args:
        feats0: n0 illustrations; feats1: n1 illustrations of the same backbone, scales and device.
        pairs: ``(P, 2)`` integer indices, (i, j) with 0 <= i < n0 and 0 <= j < n1.
        similarity: one of ``PAIR_SIMILARITIES``, "s_trans" or "s_matching" (S_features needs square
            features: see ``score_features_matrix``).
        kernel: final Gaussian of S_trans, one of ``KERNELS``.
        iterations: RANSAC hypotheses per directional score.
        batch_size: pairs per batch; by default sized to keep each batch's similarity volume
            near 256 MB.
        partial: S_trans divided by the matched area's query cells (``collation.partial``).

    Returns:
        ``(P,)`` float64 on the CPU, in [0, 2].
    """
    if similarity == "s_features":
        raise InputError("score_pairs computes s_trans or s_matching; s_features needs square features "
                         "(score_features_matrix)", field="similarity")
    check_option("similarity", similarity, PAIR_SIMILARITIES)
    check_option("kernel", kernel, KERNELS)
    check_integer("seed", seed)
    check_positive_int("iterations", iterations)
    check_partial(partial, similarity)
    if feats0.backbone != feats1.backbone or feats0.scales != feats1.scales:
        raise InputError("the two feature sets come from different backbones or scales")
    if feats0.desc.shape[3] != feats1.desc.shape[3] or feats0.desc.device != feats1.desc.device:
        raise InputError("the two feature sets differ in channels or device", field="features")
    device = feats0.desc.device
    pairs = as_index_pairs("pairs", pairs, (len(feats0), len(feats1)), device)
    length = max(feats0.desc.shape[2], feats1.desc.shape[2])
    n_scales = len(feats0.scales)
    if batch_size is None:
        batch_size = max(1, int(256e6 // (2 * n_scales * length * length * 4)))
    check_positive_int("batch_size", batch_size)
    # CPU matrix products are fastest in float32; on a GPU half-precision storage is used as is.
    compute = torch.float32 if device.type == "cpu" else feats0.desc.dtype
    q = feats0.query_index

    out = torch.empty(len(pairs), dtype=torch.float64)
    for start in range(0, len(pairs), batch_size):
        i, j = pairs[start : start + batch_size].unbind(dim=1)
        desc0, desc1 = (pad_cells(f.desc[idx], length).to(compute) for f, idx in ((feats0, i), (feats1, j)))
        pos0, pos1 = pad_cells(feats0.pos[i], length), pad_cells(feats1.pos[j], length)
        cells0, cells1 = feats0.mask[i, q].sum(dim=1), feats1.mask[j, q].sum(dim=1)
        lq = int(torch.maximum(cells0, cells1).max())  # query maps are smaller than the largest scale
        # Both directions in one batch: first i as target and j as query, then the reverse.
        target, target_pos = torch.cat([desc0, desc1]), torch.cat([pos0, pos1])
        query = torch.cat([desc1[:, q, :lq], desc0[:, q, :lq]])
        query_pos = torch.cat([pos1[:, q, :lq], pos0[:, q, :lq]])
        draws = None
        if similarity == "s_trans":
            # Keyed by (target, query) index: swapping the two feature sets gives the transpose exactly.
            keys = torch.stack([torch.cat([i, j]), torch.cat([j, i])], dim=1)
            draws = uniform_draws(seed, keys, (iterations, 3))
        scores = directional_scores(target, target_pos, query, query_pos, torch.cat([cells1, cells0]), draws,
                                    kernel=kernel, partial=partial)
        half = len(i)
        out[start : start + half] = (scores[:half] + scores[half:]).double().cpu()
        if progress:
            progress(min(start + batch_size, len(pairs)), len(pairs))
    return out


def check_partial(partial: object, similarity: str) -> bool:
    """The partial-copy flag: a bool, and only for S_trans (it needs the RANSAC map)."""
    check_flag("partial", partial)
    if partial and similarity != "s_trans":
        raise InputError(f"partial needs similarity s_trans, not {similarity!r}", field="partial")
    return bool(partial)


def all_pairs(n0: int, n1: int) -> torch.Tensor:
    """``(n0 * n1, 2)`` row-major indices of every pair."""
    return torch.cartesian_prod(torch.arange(n0), torch.arange(n1)).view(-1, 2)


def score_matrix(
    feats0: MultiScaleFeatures,
    feats1: MultiScaleFeatures,
    *,
    similarity: str = defaults.SIMILARITY,
    seed: int = defaults.SEED,
    kernel: str = defaults.KERNEL,
    batch_size: int | None = None,
    progress: Progress | None = None,
    partial: bool = defaults.PARTIAL,
) -> np.ndarray:
    """The ``(n0, n1)`` float64 score matrix S of two manuscripts, computed in memory-bounded batches.

    Arguments and checks as ``score_pairs``.
    """
    n0, n1 = len(feats0), len(feats1)
    scores = score_pairs(feats0, feats1, all_pairs(n0, n1), similarity=similarity, seed=seed, kernel=kernel,
                         batch_size=batch_size, progress=progress, partial=partial)
    return scores.numpy().reshape(n0, n1)


def score_features_matrix(square0: torch.Tensor, square1: torch.Tensor, *, block: int = 256) -> np.ndarray:
    """S_features (A.2): mean over cells of the cosine of same-location features.

    Args:
        square0: ``(n0, N, C)`` and square1 ``(n1, N, C)`` L2-normalized cells of square resizes.

    Returns:
        ``(n0, n1)`` float64.
    """
    dims = check_shape("square0", square0, ("n0", "N", "C"))
    check_shape("square1", square1, ("n1", "N", "C"), dims)
    check_dtype("square0", square0, "floating")
    check_dtype("square1", square1, "floating")
    check_positive_int("block", block)
    n0, cells, _ = square0.shape
    flat1 = square1.float().flatten(1)
    rows = [square0[s : s + block].float().flatten(1) @ flat1.T for s in range(0, n0, block)]
    return (torch.cat(rows) / cells).double().cpu().numpy()

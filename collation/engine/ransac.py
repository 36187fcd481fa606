"""Affine RANSAC over many directional scores at once (reference-method.md B.5).

Every function works on a batch axis B (one directional score each), a match axis M and, where
hypotheses are involved, a hypothesis axis K. A directional score has at most one match per
(target scale, query cell); ``compact_matches`` moves them to the front of their row, so that ragged
match counts become one dense, masked tensor. The best match of a query cell across scales is a
segment maximum (``scatter_reduce`` "amax"), never a dense cell x match tensor.
"""

from __future__ import annotations

import torch

from collation.core import defaults
from collation.core.errors import InputError, ShapeError
from collation.core.options import KERNELS, check_option
from collation.engine.checks import check_dtype, check_integer, check_positive_float, check_positive_int, check_shape

_MASK32 = 0xFFFFFFFF


def hash32(x: torch.Tensor) -> torch.Tensor:
    """MurmurHash3's 32-bit finalizer on int64 tensors holding values in [0, 2³²)."""
    x = x & _MASK32
    x = x ^ (x >> 16)
    x = (x * 0x85EBCA6B) & _MASK32
    x = x ^ (x >> 13)
    x = (x * 0xC2B2AE35) & _MASK32
    return x ^ (x >> 16)


def uniform_draws(seed: int, keys: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """Uniform numbers in [0, 1) that depend only on (seed, key, position), on any device.

    A counter-based generator: a directional score's samples are a function of its key, so scores do
    not change with the order, the chunking or the machine that computes them.

    Args:
        keys: ``(B, k)`` int64 identifiers of each batch element (e.g. row, column, direction).
        shape: shape of the draws per element.

    Returns:
        ``(B, *shape)`` float64.
    """
    check_integer("seed", seed)
    check_shape("keys", keys, ("B", "k"))
    check_dtype("keys", keys, "integer")
    if not shape or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise InputError(f"shape must be a tuple of sizes, not {shape!r}", field="shape")
    h = torch.full(keys.shape[:1], seed & _MASK32, dtype=torch.int64, device=keys.device)
    for column in keys.unbind(dim=1):
        h = hash32(h ^ hash32(column + 0x9E3779B9))
    count = 1
    for n in shape:
        count *= n
    counter = torch.arange(count, device=keys.device, dtype=torch.int64).view(1, *shape)
    bits = hash32(h.view(-1, *[1] * len(shape)) * 0x01000193 + counter)
    bits = hash32(bits ^ (counter * 0x27D4EB2F))
    return bits.double() / 2.0**32


def compact_matches(valid: torch.Tensor, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Moves each row's valid slots to the front and cuts the rows to the longest count.

    RANSAC then works on the matches alone, typically a quarter of the S x Lq slots.

    Args:
        valid: ``(B, M)`` bool; tensors: ``(B, M, ...)`` per-slot data.

    Returns:
        valid ``(B, M')`` and each tensor ``(B, M', ...)`` in the same order (valid slots first).
    """
    check_shape("valid", valid, ("B", "M"))
    check_dtype("valid", valid, "bool")
    for t in tensors:
        if t.shape[:2] != valid.shape:
            raise ShapeError("tensors", tuple(t.shape), (*valid.shape, "..."), "one slot per valid flag")
    order = torch.argsort((~valid).to(torch.uint8), dim=1, stable=True)
    keep = max(int(valid.sum(dim=1).max()), 1) if valid.numel() else 1
    order = order[:, :keep]
    out = [valid.gather(1, order)]
    for t in tensors:
        idx = order.view(*order.shape, *[1] * (t.dim() - 2)).expand(-1, -1, *t.shape[2:])
        out.append(t.gather(1, idx))
    return tuple(out)


def sample_triples(count: torch.Tensor, draws: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Draws match triples uniformly with replacement among the first ``count`` (compacted) matches.

    Triples with a repeated match are dropped, not redrawn, as in the reference.

    Args:
        count: ``(B,)`` matches of each directional score.
        draws: ``(B, K, 3)`` uniform numbers in [0, 1).

    Returns:
        idx ``(B, K, 3)`` int64, and ok ``(B, K)`` bool: the triple is usable.
    """
    dims = check_shape("count", count, ("B",))
    check_shape("draws", draws, ("B", "K", 3), dims)
    idx = (draws * count.view(-1, 1, 1)).long()
    idx = torch.minimum(idx, (count - 1).clamp(min=0).view(-1, 1, 1))
    a, b, c = idx.unbind(dim=-1)
    ok = (a != b) & (b != c) & (a != c) & (count >= 3).view(-1, 1)
    return idx, ok


def fit_affine(src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    """Least-squares affine maps from ``src`` to ``dst`` through the pseudo-inverse.

    Exact for non-collinear triples, minimum-norm otherwise; reflections and shears are allowed.

    Args:
        src: ``(..., n, 2)`` points.
        dst: ``(..., n, 2)`` points.

    Returns:
        ``(..., 3, 2)`` matrices A with [x, y, 1] @ A ≈ dst.
    """
    check_shape("src", src, ("...", "n", 2))
    if src.shape != dst.shape:
        raise ShapeError("dst", tuple(dst.shape), (*src.shape[:-2], "n", 2), f"src has shape {tuple(src.shape)}")
    x = torch.cat([src, torch.ones_like(src[..., :1])], dim=-1)
    return torch.linalg.pinv(x) @ dst


def transfer_error2(affine: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    """Squared distances between ``affine``-mapped ``src`` and ``dst``, for every hypothesis.

    Args:
        affine: ``(B, K, 3, 2)``.
        src: ``(B, M, 2)``.
        dst: ``(B, M, 2)``.

    Returns:
        ``(B, M, K)``.
    """
    dims = check_shape("affine", affine, ("B", "K", 3, 2))
    check_shape("src", src, ("B", "M", 2), dims)
    check_shape("dst", dst, ("B", "M", 2), dims)
    b, k = affine.shape[:2]
    src_h = torch.cat([src, torch.ones_like(src[..., :1])], dim=-1)  # (B, M, 3)
    mapped = torch.bmm(src_h, affine.permute(0, 2, 1, 3).reshape(b, 3, k * 2)).view(b, -1, k, 2)
    return ((mapped - dst.unsqueeze(2)) ** 2).sum(dim=-1)


def cell_scores(
    error2: torch.Tensor, sim: torch.Tensor, cell: torch.Tensor, n_cells: int, sigma2x2: float
) -> torch.Tensor:
    """Σ over query cells of the best sim · exp(−e²/sigma2x2) among that cell's matches.

    Args:
        error2: ``(B, M, K)`` squared residuals of M matches under K hypotheses.
        sim: ``(B, M)`` cosines, 0 for slots that hold no match.
        cell: ``(B, M)`` query cell of each match, in [0, n_cells) (not checked: it would cost a
            device synchronization per batch; out of range, ``scatter_reduce_`` fails).
        n_cells: query cells, at least 1.
        sigma2x2: the Gaussian's denominator, above 0.

    Returns:
        ``(B, K)``.
    """
    dims = check_shape("error2", error2, ("B", "M", "K"))
    check_shape("sim", sim, ("B", "M"), dims)
    check_shape("cell", cell, ("B", "M"), dims)
    check_dtype("cell", cell, "integer")
    check_positive_int("n_cells", n_cells)
    check_positive_float("sigma2x2", sigma2x2)
    w = sim.unsqueeze(-1) * torch.exp(error2 / -sigma2x2)  # (B, M, K), >= 0
    best = w.new_zeros((w.shape[0], n_cells, w.shape[2]))
    best.scatter_reduce_(1, cell.unsqueeze(-1).expand_as(w), w, reduce="amax")
    return best.sum(dim=1)


def select_hypothesis(
    target_pos: torch.Tensor,
    query_pos: torch.Tensor,
    sim: torch.Tensor,
    cell: torch.Tensor,
    count: torch.Tensor,
    n_cells: int,
    draws: torch.Tensor,
    *,
    tolerance: float = defaults.RANSAC_TOLERANCE,
) -> tuple[torch.Tensor, torch.Tensor]:
    """RANSAC: the affine map (target → query) whose Gaussian-weighted score is largest.

    Hypotheses are scored by the score itself, not by an inlier count (A.2), with the kernel
    exp(−e²/2tol²); there is no refinement of the winner (B.5).

    Args:
        target_pos, query_pos: ``(B, M, 2)`` positions of the compacted matches.
        sim: ``(B, M)`` their cosines (0 past ``count``); cell ``(B, M)`` their query cells.
        count: ``(B,)`` matches of each directional score.
        draws: ``(B, K, 3)`` uniform numbers choosing the hypotheses' triples.

    Returns:
        affine ``(B, 3, 2)`` and found ``(B,)`` bool: some hypothesis scored above 0.
    """
    _check_matches(target_pos, query_pos, sim, cell, count, draws)
    check_positive_float("tolerance", tolerance)
    b = target_pos.shape[0]
    idx, ok = sample_triples(count, draws)
    k = idx.shape[1]
    flat = idx.view(b, -1, 1).expand(-1, -1, 2)
    affine = fit_affine(target_pos.gather(1, flat).view(b, k, 3, 2), query_pos.gather(1, flat).view(b, k, 3, 2))
    affine = torch.nan_to_num(affine)
    score = cell_scores(transfer_error2(affine, target_pos, query_pos), sim, cell, n_cells, 2 * tolerance**2)
    score = torch.where(ok, score, -1.0)
    best = score.argmax(dim=1)  # first of equal maxima, as a strict running best would pick
    found = score.gather(1, best.view(-1, 1)).squeeze(1) > 0
    return affine[torch.arange(b, device=affine.device), best], found


def _check_matches(
    target_pos: torch.Tensor,
    query_pos: torch.Tensor,
    sim: torch.Tensor,
    cell: torch.Tensor,
    count: torch.Tensor,
    draws: torch.Tensor,
) -> None:
    dims = check_shape("target_pos", target_pos, ("B", "M", 2))
    check_shape("query_pos", query_pos, ("B", "M", 2), dims)
    check_shape("sim", sim, ("B", "M"), dims)
    check_shape("cell", cell, ("B", "M"), dims)
    check_shape("count", count, ("B",), dims)
    check_shape("draws", draws, ("B", "K", 3), dims)
    check_dtype("target_pos", target_pos, "floating")
    check_dtype("cell", cell, "integer")
    check_dtype("count", count, "integer")


def ransac_scores(
    target_pos: torch.Tensor,
    query_pos: torch.Tensor,
    sim: torch.Tensor,
    cell: torch.Tensor,
    count: torch.Tensor,
    n_cells: int,
    draws: torch.Tensor,
    *,
    kernel: str = defaults.KERNEL,
    tolerance: float = defaults.RANSAC_TOLERANCE,
    with_affine: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """The S_trans directional scores, before division by the query's cell count.

    The winner of ``select_hypothesis`` is re-scored with the final kernel: exp(−e²/tol²) for
    "reference", exp(−e²/2tol²) for "paper" (B.13 item 1). Arguments as ``select_hypothesis``.

    Returns:
        ``(B,)`` sums over query cells; 0 where no hypothesis could be formed. With ``with_affine``
        also the winning ``(B, 3, 2)`` maps (for the partial-copy normalizer, ``collation.engine.partial``).
    """
    check_option("kernel", kernel, KERNELS)
    affine, found = select_hypothesis(target_pos, query_pos, sim, cell, count, n_cells, draws, tolerance=tolerance)
    final = 2 * tolerance**2 if kernel == "paper" else tolerance**2
    error2 = transfer_error2(affine.unsqueeze(1), target_pos, query_pos)
    score = cell_scores(error2, sim, cell, n_cells, final).squeeze(1)
    score = torch.where(found, score, 0.0)
    return (score, affine) if with_affine else score

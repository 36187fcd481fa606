"""Similarity between illustrations, batched over many pairs: S_trans, S_matching, S_features.

A pair (i, j) of illustrations gets two directional scores (B.1): illustration i of the first set
as target (all scales) against j as query (the query scale), and the reverse. Each directional score
finds the mutual nearest neighbours of every query cell at every target scale (B.4), weighs them by
a Gaussian of their residual (under a RANSAC affine map for S_trans, in place for S_matching), keeps
the best match per query cell and divides by the query's cell count. S = S1 + S2 (B.6).

Batches hold pairs and both directions together; nothing loops over pairs in Python. ``score_pairs`` is
the one scoring function: every caller (the pipeline's stages, the cascade's cheap score) goes through it.

Longer than 400 lines because the batched S_trans path (one packed product per target, RANSAC per
batch) and the pair-level API that drives it are read together; the bookkeeping of mutual matches in
one product, and how large products and batches are on each device, are ``collation.engine.matching``.
"""

from __future__ import annotations

import itertools

import numpy as np
import torch

from collation.core import defaults
from collation.core.errors import InputError
from collation.core.options import KERNELS, SIMILARITIES, check_option
from collation.engine.checks import as_index_pairs, check_flag, check_integer, check_positive_int, check_shape
from collation.engine.features import MultiScaleFeatures, ProgressCallback
from collation.engine.matching import (
    PRODUCT_PRECISIONS,
    mutual_slots,
    product_dtype,
    products_in,
    query_cells_per_product,
    query_columns,
    ransac_batch,
)
from collation.engine.partial import partial_normalizer
from collation.engine.ransac import cell_scores, compact_matches, ransac_scores, uniform_draws
from collation.engine.threads import default_workers, side_by_side


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
        partial: S_trans only: divide by the query cells of the matched area (``collation.engine.partial``).

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
        total, affine = ransac_scores(
            tpos, qpos, sim, cell, valid.sum(dim=1), lq, draws, kernel=kernel, with_affine=True
        )
        return (total / partial_normalizer(affine, query_pos, query_cells)).clamp(max=1.0)
    else:
        total = ransac_scores(tpos, qpos, sim, cell, valid.sum(dim=1), lq, draws, kernel=kernel)
    return total / query_cells.clamp(min=1)


def _score_matches(
    valid: torch.Tensor,
    sim: torch.Tensor,
    tpos: torch.Tensor,
    qpos: torch.Tensor,
    lq: int,
    draws: torch.Tensor | None,
    kernel: str,
    with_affine: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Σ over query cells of the best weighted match (RANSAC for S_trans): ``(B, M)`` slots in, ``(B,)`` out
    (and the winning ``(B, 3, 2)`` affine maps with ``with_affine``, for the partial-copy normalizer)."""
    b, m = valid.shape
    cell = torch.arange(lq, device=valid.device).repeat(m // lq).expand(b, -1)
    valid, tpos, qpos, sim, cell = compact_matches(valid, tpos, qpos, sim, cell)
    sim = torch.where(valid, sim, 0.0)
    if draws is None:
        sigma2x2 = 2 * defaults.RANSAC_TOLERANCE**2 if kernel == "paper" else defaults.RANSAC_TOLERANCE**2
        error2 = ((tpos - qpos) ** 2).sum(dim=-1, keepdim=True)
        return cell_scores(error2, sim, cell, lq, sigma2x2).squeeze(1)
    return ransac_scores(tpos, qpos, sim, cell, valid.sum(dim=1), lq, draws, kernel=kernel, with_affine=with_affine)


def directional_pairs(
    targets: MultiScaleFeatures,
    queries: MultiScaleFeatures,
    pairs: torch.Tensor,
    *,
    seed: int | None,
    kernel: str = defaults.KERNEL,
    iterations: int = defaults.RANSAC_ITERATIONS,
    batch_size: int | None = None,
    progress: ProgressCallback | None = None,
    partial: bool = False,
    workers: int | None = None,
    product_precision: str = "float32",
) -> torch.Tensor:
    """Directional scores of (target t, query u) couples, one matrix product per target.

    Each target's real cells at all its scales (no padding) are multiplied with the packed real cells of
    the queries it meets, as many at a time as ``matching.query_cells_per_product`` allows (16,384 cells on
    a CPU, from the free memory on a GPU): one large product instead of many small padded ones, and no copy
    of a target per pair; ``matching.mutual_slots`` finds the mutual matches in it. RANSAC then runs on
    ``batch_size`` couples at once. The targets are shared out in tasks of about ``TASK_PAIRS`` couples, run
    side by side on a CPU (``collation.engine.threads``); each task writes the scores of its own couples only.

    Args:
        pairs: ``(P, 2)`` int64 (t, u) on the features' device.
        seed: RANSAC seed (S_trans), or None for S_matching.
        batch_size: couples per RANSAC batch; by default ``matching.ransac_batch`` (16 on a CPU).
        partial: S_trans only: divide by the query cells of the matched area (``collation.engine.partial``)
            instead of all of them.
        workers: tasks side by side (``threads.default_workers`` by default); scores do not depend on it.
        product_precision: one of ``matching.PRODUCT_PRECISIONS`` (GPU only; a CPU computes in float32).

    Returns:
        ``(P,)`` float32 scores in [0, 1], divided by each query's cell count.
    """
    device = targets.desc.device
    compute = product_dtype(device, targets.desc.dtype, product_precision)
    q = queries.query_index
    query_cells = queries.mask[:, q].sum(dim=1)  # (n_u,)
    cells_cpu = query_cells.cpu()
    lq = max(int(cells_cpu.max()), 1) if len(queries) else 1
    counts = targets.mask.sum(dim=2).cpu()  # (n_t, S)
    rows = int(counts.sum(dim=1).max()) if len(targets) else 1
    per_product = query_cells_per_product(device, rows, targets.desc.shape[3]) // lq or 1
    if batch_size is None:
        batch_size = ransac_batch(device, len(targets.scales) * lq, iterations)
    out = torch.zeros(len(pairs), dtype=torch.float32, device=device)
    pairs_cpu = pairs.cpu()
    order = torch.argsort(pairs_cpu[:, 0] * (len(queries) + 1) + pairs_cpu[:, 1], stable=True)
    t_sorted, u_sorted = pairs_cpu[order, 0], pairs_cpu[order, 1]
    starts = [*torch.searchsorted(t_sorted, torch.unique_consecutive(t_sorted)).tolist(), len(order)]

    def flush(pending: list[tuple[torch.Tensor, ...]]) -> None:
        valid, sim, tpos, qpos, index = (torch.cat(x) for x in zip(*pending, strict=True))
        draws = None
        if seed is not None:
            draws = uniform_draws(seed, pairs[index], (iterations, 3))
        u = pairs[index, 1]
        if partial and draws is not None:
            total, affine = _score_matches(valid, sim, tpos, qpos, lq, draws, kernel, with_affine=True)
            norm = partial_normalizer(affine, queries.pos[u, q, :lq], query_cells[u])
            out[index] = (total / norm).clamp(max=1.0)
        else:
            out[index] = _score_matches(valid, sim, tpos, qpos, lq, draws, kernel) / query_cells[u].clamp(min=1)

    def score_task(runs: list[tuple[int, int]]) -> int:
        """Scores the couples ``order[a:b]`` of each run (one target each); returns how many."""
        pending: list[tuple[torch.Tensor, ...]] = []
        pending_size = 0
        for a, b in runs:
            t = int(t_sorted[a])
            lengths = [int(c) for c in counts[t]]
            real = targets.mask[t]
            target = targets.desc[t][real].to(compute)  # (R, C): scale after scale, real cells only
            tpos = targets.pos[t][real]
            for c in range(a, b, per_product):
                u_cpu = u_sorted[c : min(b, c + per_product)]
                seg, cell = query_columns(cells_cpu[u_cpu])  # the packed layout, built on the host
                index = order[c : min(b, c + per_product)].to(device)
                u = pairs[index, 1]
                seg, cell = seg.to(device), cell.to(device)
                packed = queries.desc[u[seg], q, cell].to(compute)  # (Q, C), query after query
                with products_in(device, product_precision):
                    cos = (target @ packed.T).float()
                sizes = cells_cpu[u_cpu].tolist()
                valid, sim, pos = mutual_slots(cos, lengths, tpos, seg, seg * lq + cell, sizes, lq)
                qpos = queries.pos[u, q, :lq].repeat(1, len(lengths), 1)  # (J, S * lq, 2), scale-major
                pending.append((valid, sim, pos, qpos, index))
                pending_size += len(u)
                if pending_size >= batch_size:
                    flush(pending)
                    pending, pending_size = [], 0
        if pending:
            flush(pending)
        return sum(b - a for a, b in runs)

    done = 0
    workers = default_workers(device) if workers is None else check_positive_int("workers", workers)
    for count in side_by_side(score_task, _tasks(list(itertools.pairwise(starts)), TASK_PAIRS), workers):
        done += count
        if progress:
            progress(done, len(pairs))
    return out


def _tasks(runs: list[tuple[int, int]], size: int) -> list[list[tuple[int, int]]]:
    """Consecutive runs grouped into tasks of at least ``size`` couples (the last may hold fewer)."""
    tasks: list[list[tuple[int, int]]] = [[]]
    held = 0
    for a, b in runs:
        if held >= size:
            tasks.append([])
            held = 0
        tasks[-1].append((a, b))
        held += b - a
    return [task for task in tasks if task]


TASK_PAIRS = 64
"""Couples of one task of ``directional_pairs``: four RANSAC batches, a few hundred tasks at D1 x D2 (for
the balance of the cores and the progress reports), and few enough that starting them costs nothing."""


def score_pairs(
    feats0: MultiScaleFeatures,
    feats1: MultiScaleFeatures,
    pairs: torch.Tensor | np.ndarray | list,
    *,
    similarity: str = defaults.SIMILARITY,
    seed: int = defaults.SEED,
    kernel: str = defaults.KERNEL,
    partial: bool = defaults.PARTIAL,
    n_transpositions: int = 1,
    iterations: int = defaults.RANSAC_ITERATIONS,
    batch_size: int | None = None,
    workers: int | None = None,
    progress: ProgressCallback | None = None,
    product_precision: str = "float32",
) -> tuple[torch.Tensor, torch.Tensor]:
    """S of the pairs (i, j), illustration i of ``feats0`` and j of ``feats1``: the one scoring function.

    S_trans and S_matching are symmetric, S = S1 + S2 (B.6). RANSAC samples depend only on the seed and
    the (target, query) indices of each directional score, so a pair's score is the same whatever the
    batch, chunk or worker it is computed in, and ``score_pairs(feats1, feats0, pairs[:, [1, 0]])`` gives
    the same scores. With ``n_transpositions`` T > 1, ``feats1`` holds T transpositions of n1
    illustrations (transposition-major, ``extract_transposed_features``): each pair is scored under
    every one and the best is kept, the first of equal maxima (as drawn wins a tie). The cascade's
    cheap score is this function on coarse maps with fewer hypotheses (``collation.engine.cascade``).

    Args:
        feats0: n0 illustrations; feats1: T * n1 illustrations of the same backbone, scales and device.
            For s_features both are square maps (``extract_square_features``).
        pairs: ``(P, 2)`` integer indices, (i, j) with 0 <= i < n0 and 0 <= j < n1.
        similarity: "s_trans", "s_matching" or "s_features" (``SIMILARITIES``).
        kernel: final Gaussian of S_trans, one of ``KERNELS``.
        partial: S_trans divided by the matched area's query cells (``collation.engine.partial``).
        iterations: RANSAC hypotheses per directional score.
        batch_size: directional scores per RANSAC batch (default ``matching.ransac_batch``: 16 on a CPU,
            from the free memory on a GPU).
        workers: tasks side by side, each on one intra-op thread (``collation.engine.threads``; by default
            torch's threads on a CPU, 1 on a GPU). Scores depend on neither.
        product_precision: arithmetic of S_trans's large products on a GPU (``matching.PRODUCT_PRECISIONS``;
            float32 by default, and always on a CPU).

    Returns:
        scores ``(P,)`` float64 on the CPU, in [0, 2] (S_features in [-1, 1]), and winners ``(P,)`` int8,
        the index of the transposition that gave each score (0 with one transposition).
    """
    check_option("similarity", similarity, SIMILARITIES)
    check_option("kernel", kernel, KERNELS)
    check_option("product_precision", product_precision, PRODUCT_PRECISIONS)
    check_integer("seed", seed)
    check_positive_int("iterations", iterations)
    check_flag("partial", partial)
    if partial and similarity != "s_trans":
        raise InputError(f"partial needs similarity s_trans, not {similarity!r}", field="partial")
    if feats0.backbone != feats1.backbone or feats0.scales != feats1.scales:
        raise InputError("the two feature sets come from different backbones or scales")
    if feats0.desc.shape[3] != feats1.desc.shape[3] or feats0.desc.device != feats1.desc.device:
        raise InputError("the two feature sets differ in channels or device", field="features")
    t, n1 = transposition_count(feats1, n_transpositions)
    pairs = as_index_pairs("pairs", pairs, (len(feats0), n1), feats0.desc.device)
    if batch_size is not None:
        check_positive_int("batch_size", batch_size)
    if t > 1:  # every pair once per transposition of j, transposition-major like feats1
        offsets = (torch.arange(t, device=pairs.device) * n1).repeat_interleave(len(pairs))
        pairs = pairs.repeat(t, 1)
        pairs[:, 1] += offsets
    if similarity == "s_features":
        scores = _features_scores(feats0, feats1, pairs)
    else:
        scores = _symmetric_scores(
            feats0,
            feats1,
            pairs,
            seed=seed if similarity == "s_trans" else None,
            kernel=kernel,
            iterations=iterations,
            batch_size=batch_size,
            workers=workers,
            progress=progress,
            partial=partial,
            product_precision=product_precision,
        )
    scores = scores.view(t, -1)
    winners = scores.argmax(dim=0)
    return scores.gather(0, winners.view(1, -1)).squeeze(0), winners.to(torch.int8)


def _symmetric_scores(
    feats0: MultiScaleFeatures,
    feats1: MultiScaleFeatures,
    pairs: torch.Tensor,
    progress: ProgressCallback | None,
    **options,
) -> torch.Tensor:
    """``(P,)`` float64 S1 + S2 of ``pairs``: the draws of the reverse direction are keyed by (j, i)."""
    total = 2 * len(pairs)

    def stage(offset: int) -> ProgressCallback | None:
        return (lambda done, _: progress(offset + done, total)) if progress else None

    s1 = directional_pairs(feats0, feats1, pairs, progress=stage(0), **options)
    s2 = directional_pairs(feats1, feats0, pairs[:, [1, 0]], progress=stage(len(pairs)), **options)
    return (s1 + s2).double().cpu()


def _features_scores(square0: MultiScaleFeatures, square1: MultiScaleFeatures, pairs: torch.Tensor) -> torch.Tensor:
    """``(P,)`` float64 S_features (A.2): the mean over cells of the cosine of same-location features.

    A block of pairs becomes one matrix product of the distinct illustrations it holds (a row-major block
    of every pair holds a few rows and every column), so no pair's features are copied.
    """
    cells = square0.desc.shape[2]
    if square0.scales != (square0.query_scale,) or square1.desc.shape[2] != cells:
        raise InputError("s_features needs square features (extract_square_features)", field="similarity")
    flat0, flat1 = square0.desc[:, 0].flatten(1), square1.desc[:, 0].flatten(1)  # (n, N C)
    out = torch.empty(len(pairs), dtype=torch.float64)
    for start in range(0, len(pairs), FEATURES_PAIRS_PER_PRODUCT):
        block = pairs[start : start + FEATURES_PAIRS_PER_PRODUCT]
        rows, i = torch.unique(block[:, 0], return_inverse=True)
        cols, j = torch.unique(block[:, 1], return_inverse=True)
        products = flat0[rows].float() @ flat1[cols].float().T  # (r, c)
        out[start : start + len(block)] = (products[i, j] / cells).double().cpu()
    return out


FEATURES_PAIRS_PER_PRODUCT = 65536
"""Pairs of one S_features product: at most 816 x 405 distinct illustrations' products, a few MB."""


def transposition_count(feats1: MultiScaleFeatures, n_transpositions: int) -> tuple[int, int]:
    """(T, n1) of a transposition-major set of ``T * n1`` illustrations.

    Raises:
        InputError: ``n_transpositions`` is not a positive integer or does not divide the set.
    """
    t = check_positive_int("n_transpositions", n_transpositions)
    if len(feats1) % t:
        raise InputError(
            f"{len(feats1)} transposed illustrations are not {t} transpositions of a set", field="n_transpositions"
        )
    return t, len(feats1) // t


def all_pairs(n0: int, n1: int) -> torch.Tensor:
    """``(n0 * n1, 2)`` row-major indices of every pair."""
    return torch.cartesian_prod(torch.arange(n0), torch.arange(n1)).view(-1, 2)

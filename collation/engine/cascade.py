"""Candidate pairs of S_trans in a cascade: what the global descriptor loses on hard copies, a cheap
local score and the manuscripts' order find again.

S_trans costs about 6 ms a pair on a 2-core CPU, so a D1 x D2-size collation (816 x 405) scores only
a few thousand pairs. Which ones decides what the collation can find: a true pair outside the scored
set is never matched. The global descriptor (``candidates.global_descriptors``) ranks well on copies
that differ by colour and a small warp, but on copies redrawn in another style, warped, partly lost
or mirrored it puts the true partner of a third of the illustrations beyond the first 10
(docs/candidates.md). The cascade:

1. **Wide**: each illustration's ``wide`` best partners by global score, in both directions.
2. **Cheap local score** on those: S_trans itself on *coarse* maps (the query-scale map pooled 2 x 2,
   about 10 cells on the long side) with 25 RANSAC hypotheses: ``score_pairs`` itself, a local,
   geometric score like the final one, 20 to 30 times cheaper a pair (``coarse_features``, ``cheap_scores``).
3. **Order corridor**: copyists follow the text, so the pairs that are mutual best matches of the
   cheap scores mark the diagonal along which the others lie. Every pair whose propagation factor
   (A.5: Π (1 + α exp(-d²/2σ²)) over those seeds) reaches ``corridor`` gets a cheap score too, even
   when the global score never proposed it (``order_corridor``).
4. **Candidates**: each illustration's ``k`` best partners by cheap score, and its ``k`` best by the
   cheap score normalized and propagated as P_S will be: the true partner of an illustration that
   only propagation can match is among them.

Every setting of the cascade is one value, ``collation.core.defaults.CascadeConfig`` (``CASCADE`` by
default), which keys the stored candidate sets (``collation.store.records.pair_key``). S_trans then scores
those candidates exactly as before; everything after (N_S, cycles, P_S) runs on the sparse matrix
(docs/candidates.md, "Unscored pairs"). With transpositions, the cheap score of a pair is its best over the
transpositions of the second illustration, as S_trans's is.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from collation.core import defaults
from collation.core.defaults import CASCADE, CascadeConfig
from collation.core.errors import InputError
from collation.engine.candidates import UNSCORED, scattered, top_k_pairs
from collation.engine.checks import check_positive_float, check_positive_int
from collation.engine.correspondences import mutual_best, normalize, propagate
from collation.engine.features import MultiScaleFeatures, ProgressCallback, cell_positions
from collation.engine.similarity import score_pairs, transposition_count
from collation.engine.transpositions import transposed_global_scores

CHEAP_BATCH = 256
"""Directional scores per RANSAC batch on coarse maps: their temporaries are 1/24 of a full map's
(100 cells at one scale against 484 at five), so 256 weigh what S_trans's 16 do, and the per-batch
overhead, which dominates on coarse maps, is paid 16 times less often (4-5x the pairs/s of 16)."""


def coarse_features(feats: MultiScaleFeatures, factor: int = CASCADE.coarse_factor) -> MultiScaleFeatures:
    """One map per illustration: its query-scale map average-pooled ``factor`` x ``factor``, renormalized.

    A map of r x c cells becomes ceil(r / factor) x ceil(c / factor) (edge windows average what they
    hold); illustrations of one frame shape are pooled together.

    Returns:
        ``(n, 1, L', C)`` features at the one scale ceil(query_scale / factor), real cells first.
    """
    check_positive_int("factor", factor)
    q, n = feats.query_index, len(feats)
    count = feats.mask[:, q].sum(dim=1)  # (n,)
    first_row = feats.pos[:, q, :, 1] == feats.pos[:, q, :1, 1]  # (n, L) cells of the first row
    cols = (first_row & feats.mask[:, q]).sum(dim=1).clamp(min=1)
    shapes = torch.stack([count // cols, cols], dim=1)  # (n, 2) rows, cols
    scale = -(-feats.query_scale // factor)
    length = scale * scale
    channels = feats.desc.shape[3]
    desc = feats.desc.new_zeros((n, 1, length, channels))
    pos = feats.pos.new_zeros((n, 1, length, 2))
    mask = torch.zeros((n, 1, length), dtype=torch.bool, device=feats.mask.device)
    for shape in torch.unique(shapes, dim=0).tolist():
        rows, cols_ = shape
        index = (shapes == torch.tensor(shape, device=shapes.device)).all(dim=1).nonzero().squeeze(1)
        if rows * cols_ == 0:
            continue
        grid = feats.desc[index, q, : rows * cols_].float().view(len(index), rows, cols_, channels)
        pooled = torch.nn.functional.avg_pool2d(grid.permute(0, 3, 1, 2), factor, ceil_mode=True)  # (g, C, r, c)
        r, c = pooled.shape[2:]
        cells = torch.nn.functional.normalize(pooled.flatten(2).transpose(1, 2), dim=-1)  # (g, r c, C)
        desc[index, 0, : r * c] = cells.to(desc.dtype)
        pos[index, 0, : r * c] = cell_positions(r, c).to(pos)
        mask[index, 0, : r * c] = True
    return dataclasses.replace(feats, desc=desc, pos=pos, mask=mask, scales=(scale,), query_scale=scale)


def cheap_scores(
    coarse0: MultiScaleFeatures,
    coarse1: MultiScaleFeatures,
    pairs: np.ndarray,
    n_transpositions: int,
    *,
    seed: int,
    partial: bool,
    iterations: int = CASCADE.cheap_iterations,
    progress: ProgressCallback | None = None,
) -> np.ndarray:
    """``(P,)`` float64: ``score_pairs`` (S_trans) on coarse maps with ``iterations`` RANSAC hypotheses,
    each the best over the ``n_transpositions`` transpositions of ``coarse1``."""
    if len(pairs) == 0:
        return np.zeros(0)
    scores, _ = score_pairs(
        coarse0,
        coarse1,
        pairs,
        seed=seed,
        partial=partial,
        n_transpositions=n_transpositions,
        iterations=iterations,
        batch_size=CHEAP_BATCH,
        progress=progress,
    )
    return scores.numpy()


@dataclasses.dataclass(frozen=True)
class Suspects:
    """What the cheap score says of a pair list as drawn: which second illustrations may be transposed.

    Attributes:
        columns: ``(n1,)`` bool: illustration j has no mutual best partner by cheap score as drawn, or one
            scoring under ``defaults.TRANSPOSE_SUSPECT_BELOW`` of the upper quartile of the pairs' mutual best
            cheap scores: its copy may be mirrored or turned.
        cheap: ``(P,)`` float64 the cheap score of each pair as drawn.
    """

    columns: np.ndarray
    cheap: np.ndarray


def suspect_transposed(
    pairs: np.ndarray,
    cheap: np.ndarray,
    shape: tuple[int, int],
    *,
    below: float = defaults.TRANSPOSE_SUSPECT_BELOW,
) -> Suspects:
    """The second illustrations whose copy the pairs ``(P, 2)`` do not match well as drawn (``Suspects``).

    A copy as drawn has a mutual best partner by cheap score (a corridor seed, ``order_corridor``) that
    scores like the collation's good matches; a mirrored or turned one scores like chance as drawn
    (docs/transpositions.md), so its illustration has no such partner, or a weak one: under ``below`` times
    the upper quartile of the mutual best pairs' cheap scores, a level each collation sets from its own
    scores (copies and backbones differ in how high they score). Only these are described transposed.

    Args:
        cheap: ``(P,)`` the cheap score of each pair as drawn: the cascade's own (``cascade_scores``, which
            computed it to choose the pairs), not computed again.
        shape: ``(n0, n1)`` illustrations of the two manuscripts.
    """
    check_positive_float("below", below)
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    cheap = np.asarray(cheap, dtype=np.float64)
    if cheap.shape != (len(pairs),):
        raise InputError(f"{cheap.shape} cheap scores for {len(pairs)} pairs", field="cheap")
    matrix = scattered(shape, pairs, cheap)
    seeds = mutual_best(normalize(matrix, CASCADE.normalization))
    seeds = seeds[np.isfinite(matrix[seeds[:, 0], seeds[:, 1]])]
    best = np.full(shape[1], -np.inf)
    best[seeds[:, 1]] = matrix[seeds[:, 0], seeds[:, 1]]
    level = below * np.quantile(best[seeds[:, 1]], 0.75) if len(seeds) else np.inf
    return Suspects(best < level, cheap)


def likely_transpositions(
    feats0: MultiScaleFeatures,
    turned1: MultiScaleFeatures,
    pairs: np.ndarray,
    suspects: Suspects,
    n_transpositions: int,
    *,
    seed: int,
    partial: bool,
    margin: float = defaults.TRANSPOSE_CHEAP_MARGIN,
    pick_from: int = defaults.TRANSPOSE_PICK_FROM,
) -> tuple[np.ndarray, np.ndarray]:
    """Which transposition of each suspected second illustration S_trans also scores, and for which pairs.

    A copy is one transposition of its original, whatever it is compared with: the transposition of a
    suspected illustration j is the one of highest cheap score over its ``pick_from`` pairs that the
    manuscripts' order makes likeliest (``by_order``) and every transposition. Only those: over all its
    pairs (about 40), the best of T - 1 turns of each can be a distractor that a wrong turn happens to fit,
    and every pair costs T - 1 cheap scores. Each pair of j is then scored under it too when its cheap score
    there beats the cheap score as drawn ``margin`` times; the other pairs are scored as drawn only.

    Args:
        turned1: ``((T - 1) * n1)`` query-scale maps of the suspected illustrations, transposition-major
            (``transpositions.cheap_turned_features``).
        suspects: ``suspect_transposed`` of ``pairs``.
        pick_from: pairs per suspected illustration the transposition is picked from.

    Returns:
        turns ``(n1,)`` int64, each illustration's transposition (0: none of its pairs is scored transposed),
        and ``(P,)`` int64 the transposition each pair is also scored under (its illustration's, or 0).
    """
    check_positive_float("margin", margin)
    check_positive_int("pick_from", pick_from)
    t = check_positive_int("n_transpositions", n_transpositions)
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    n1 = len(suspects.columns)
    if len(turned1) != (t - 1) * n1:
        raise InputError(f"{len(turned1)} turned illustrations are not {t - 1} transpositions of {n1}", field="turned")
    turns, chosen = np.zeros(n1, dtype=np.int64), np.zeros(len(pairs), dtype=np.int64)
    rows = np.flatnonzero(suspects.columns[pairs[:, 1]])
    if not len(rows) or t == 1:
        return turns, chosen
    coarse0, coarse1 = coarse_features(feats0), coarse_features(turned1)
    drawn = scattered((len(feats0), n1), pairs, suspects.cheap)
    few = rows[by_order(pairs[rows], drawn, pick_from)]  # each suspect's pairs the pick reads
    i, j = pairs[few, 0], pairs[few, 1]
    asked = np.stack([np.repeat(i, t - 1), ((np.arange(t - 1) * n1)[None, :] + j[:, None]).reshape(-1)], 1)
    cheap = cheap_scores(coarse0, coarse1, asked, 1, seed=seed, partial=partial).reshape(len(few), t - 1)
    best = np.full((n1, t - 1), -np.inf)
    np.maximum.at(best, j, cheap)  # each column's best cheap score per transposition, over those pairs
    suspected = np.flatnonzero(np.isfinite(best).any(axis=1))
    turns[suspected] = best[suspected].argmax(axis=1) + 1  # the first of equal maxima: the option's order
    under = np.empty(len(rows))  # every pair of a suspect, under its illustration's transposition
    read = np.isin(rows, few)  # the pick scored these under every transposition (the same draws): not again
    under[read] = cheap[np.arange(len(few)), turns[j] - 1]
    rest = rows[~read]
    asked = np.stack([pairs[rest, 0], (turns[pairs[rest, 1]] - 1) * n1 + pairs[rest, 1]], axis=1)
    under[~read] = cheap_scores(coarse0, coarse1, asked, 1, seed=seed, partial=partial)
    j = pairs[rows, 1]
    wins = under > margin * suspects.cheap[rows]
    chosen[rows[wins]] = turns[j[wins]]
    turns[~np.isin(np.arange(n1), pairs[chosen > 0, 1])] = 0  # described only where a pair scores it
    return turns, chosen


def by_order(pairs: np.ndarray, cheap: np.ndarray, k: int, config: CascadeConfig = CASCADE) -> np.ndarray:
    """``(R,)`` bool: each second illustration's ``k`` pairs of ``pairs`` ``(R, 2)`` that the manuscripts' order
    makes likeliest: highest by ``cheap`` normalized and propagated (``propagated``, as ``select_candidates``
    ranks) (equal values: the earlier row), so the partner a turned copy's own score cannot find is among them when its
    neighbours in both manuscripts are matched.

    Args:
        cheap: ``(n0, n1)`` cheap scores as drawn, ``UNSCORED`` where not computed.
    """
    check_positive_int("k", k)
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    value = propagated(cheap, config)[pairs[:, 0], pairs[:, 1]]
    order = np.lexsort((pairs[:, 0], -value, pairs[:, 1]))  # by column, then likeliest first
    column = pairs[order, 1]
    rank = np.arange(len(order)) - np.searchsorted(column, column, side="left")  # place within its column
    chosen = np.zeros(len(pairs), dtype=bool)
    chosen[order[rank < k]] = True
    return chosen


def propagated(cheap: np.ndarray, config: CascadeConfig = CASCADE) -> np.ndarray:
    """``(n0, n1)`` the cheap scores normalized as N_S and propagated from their mutual best matches along the
    manuscripts' order (A.5), as P_S will be: what ``select_candidates`` and ``by_order`` rank by."""
    normalized = normalize(cheap, config.normalization)
    return propagate(
        normalized, mutual_best(normalized), sigma=config.propagation_sigma, alpha=config.propagation_alpha
    )


def order_corridor(scores: np.ndarray, config: CascadeConfig = CASCADE) -> np.ndarray:
    """``(P, 2)`` pairs whose propagation factor from the mutual best matches of ``scores`` (normalized
    as N_S) reaches ``config.corridor``: the band along the manuscripts' order where true pairs lie.

    Args:
        scores: ``(n0, n1)`` scores, ``UNSCORED`` where not computed.
        config: its ``corridor``, above 1: the factor of a pair at distance d of one seed is
            1 + α exp(-d²/2σ²) (1.1 reaches about 6 illustrations from it), and seeds along a diagonal multiply.
    """
    check_positive_float("corridor", config.corridor)
    seeds = mutual_best(normalize(scores, config.normalization))
    factor = propagate(np.ones(scores.shape), seeds, sigma=config.propagation_sigma, alpha=config.propagation_alpha)
    return np.argwhere(factor >= config.corridor)


def _best(scores: np.ndarray, k: int) -> np.ndarray:
    """``top_k_pairs`` over the scored entries only (an unscored pair is never a candidate)."""
    pairs = top_k_pairs(np.where(np.isfinite(scores), scores, -np.finfo(np.float64).max), k)
    return pairs[np.isfinite(scores[pairs[:, 0], pairs[:, 1]])]


def cascade_scores(
    feats0: MultiScaleFeatures,
    transposed1: MultiScaleFeatures,
    k: int,
    n_transpositions: int = 1,
    *,
    config: CascadeConfig = CASCADE,
    seed: int = defaults.SEED,
    partial: bool = defaults.PARTIAL,
    progress: ProgressCallback | None = None,
) -> np.ndarray:
    """The cheap scores the cascade computes (steps 1-3 of the module docstring), from which
    ``select_candidates`` takes the candidates (step 4), and ``suspect_transposed`` the suspects.

    Args:
        feats0: n0 illustrations; transposed1: ``T * n1`` (``extract_transposed_features``; the plain
            features when T is 1).
        k: final candidates per illustration and direction, by cheap score and by its propagation.
        config: the cascade's settings: ``wide`` candidates per illustration and direction by global score
            get a cheap score; ``corridor``, least propagation factor of the pairs added along the order.

    Returns:
        ``(n0, n1)`` float64 cheap scores (each the best over the T transpositions), ``UNSCORED`` where
        the cascade computed none.
    """
    check_positive_int("candidates", k)
    check_positive_int("wide", config.wide)
    t, n1 = transposition_count(transposed1, n_transpositions)
    n0 = len(feats0)
    coarse0, coarse1 = (coarse_features(f, config.coarse_factor) for f in (feats0, transposed1))
    glob = transposed_global_scores(
        feats0, transposed1, t, grid=config.grid, power=config.gem_power, whitening=config.whitening
    )
    cheap = np.full((n0, n1), UNSCORED)
    options = {"seed": seed, "partial": partial, "iterations": config.cheap_iterations}
    wide_pairs = top_k_pairs(glob, max(config.wide, k))
    held = 0  # the wide step's total of work, once it is done

    def wide_progress(done: int, total: int) -> None:  # the corridor's pairs come after: never complete here
        nonlocal held
        held = total
        progress(done, total + 1)

    def along_progress(done: int, total: int) -> None:  # the stage's total is known once the corridor is
        progress(held + done, held + total)

    cheap[wide_pairs[:, 0], wide_pairs[:, 1]] = cheap_scores(
        coarse0, coarse1, wide_pairs, t, **options, progress=wide_progress if progress else None
    )
    along = order_corridor(cheap, config)
    along = along[~np.isfinite(cheap[along[:, 0], along[:, 1]])]
    cheap[along[:, 0], along[:, 1]] = cheap_scores(
        coarse0, coarse1, along, t, **options, progress=along_progress if progress else None
    )
    if progress and not len(along):
        progress(held, held)
    return cheap


def select_candidates(cheap: np.ndarray, k: int, config: CascadeConfig = CASCADE) -> np.ndarray:
    """``(P, 2)`` row-major: each illustration's ``k`` best partners by cheap score, and its ``k`` best
    by the cheap score normalized and propagated as P_S will be (so the partner that only the order
    can match is scored), in both directions; unscored pairs are never chosen.

    Args:
        cheap: ``(n0, n1)`` cheap scores, ``UNSCORED`` where not computed.
    """
    check_positive_int("candidates", k)
    return np.unique(np.concatenate([_best(cheap, k), _best(propagated(cheap, config), k)]), axis=0).astype(np.int64)

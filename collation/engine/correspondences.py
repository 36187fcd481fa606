"""From score matrices to correspondences: normalization, cycle consistency, propagation (A.3-A.5).

Matrices are NumPy float64 ``(n0, n1)`` arrays, rows indexing the first manuscript of a pair.
``collate`` runs the whole step for any number of manuscripts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from collation.core import defaults
from collation.core.errors import InputError, ShapeError
from collation.core.options import (
    NORMALIZATIONS,
    ORIENTATIONS,
    PROPAGATIONS,
    THREE_CYCLES_MIN_MANUSCRIPTS,
    check_option,
)
from collation.engine.checks import as_index_pairs, check_positive_float, check_shape


def _matrix(name: str, matrix: np.ndarray) -> np.ndarray:
    """``matrix`` as a float64 ``(n0, n1)`` array; raises ``ShapeError`` for another number of dimensions."""
    array = np.asarray(matrix)
    check_shape(name, array, ("n0", "n1"))
    if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise InputError(f"{name} must hold numbers, not {array.dtype}", field=name)
    return array.astype(np.float64, copy=False)


def _index_pairs(name: str, pairs: np.ndarray | None, shape: tuple[int, int]) -> np.ndarray:
    """``(K, 2)`` int64 pairs inside a matrix of ``shape``; None is no pair."""
    return as_index_pairs(name, [] if pairs is None else pairs, shape).numpy()


def _safe(denominator: np.ndarray) -> np.ndarray:
    """Denominators of 0 (an all-zero row or column) or of an unscored row become 1: no NaN."""
    return np.where((denominator == 0) | ~np.isfinite(denominator), 1.0, denominator)


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """Softmax over the scored entries; unscored ones (-inf) get exactly 0 and add nothing to the sum."""
    top = x.max(axis=axis, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(top), top, 0.0))
    return e / _safe(e.sum(axis=axis, keepdims=True))


def _mean(s: np.ndarray, axis: int) -> np.ndarray:
    """Mean over the scored (finite) entries only: unscored pairs never pull an average down."""
    scored = np.isfinite(s)
    return np.where(scored, s, 0.0).sum(axis=axis, keepdims=True) / np.maximum(scored.sum(axis=axis, keepdims=True), 1)


def normalize(
    scores: np.ndarray, method: str = defaults.NORMALIZATION, temperature: float = defaults.SOFTMAX_TEMPERATURE
) -> np.ndarray:
    """One of the normalizations of the paper's Table 3, row term plus column term (A.3).

    "max" is N_S = S / rowmax + S / colmax; "avg" divides by the means; "softmax" is sm(λS);
    "softmax-avg" and "softmax-max" are sm(λ S/avg) and sm(λ S/max); "none" returns S.

    On a pruned matrix (``collation.engine.candidates``), unscored pairs hold -inf: maxima, averages and
    softmax sums run over the scored pairs of each row or column only, and unscored pairs stay -inf
    (softmax: 0) in the result, so they are never a best match (docs/candidates.md).

    Args:
        scores: ``(n0, n1)`` S.
        method: one of ``NORMALIZATIONS``.
        temperature: λ of the softmax normalizations, above 0.

    Returns:
        ``(n0, n1)`` float64.
    """
    check_option("normalization", method, NORMALIZATIONS)
    check_positive_float("temperature", temperature)
    s = _matrix("scores", scores)
    if method == "none" or s.size == 0:
        return s.copy()
    row_max, col_max = s.max(axis=1, keepdims=True), s.max(axis=0, keepdims=True)
    row_avg, col_avg = _mean(s, 1), _mean(s, 0)
    if method == "max":
        return s / _safe(row_max) + s / _safe(col_max)
    if method == "avg":
        return s / _safe(row_avg) + s / _safe(col_avg)
    if method == "softmax":
        return _softmax(temperature * s, 1) + _softmax(temperature * s, 0)
    if method == "softmax-avg":
        return _softmax(temperature * s / _safe(row_avg), 1) + _softmax(temperature * s / _safe(col_avg), 0)
    return _softmax(temperature * s / _safe(row_max), 1) + _softmax(temperature * s / _safe(col_max), 0)


def mutual_best(matrix: np.ndarray) -> np.ndarray:
    """2-cycle consistent pairs: j is i's best column and i is j's best row (A.4).

    Ties go to the first index, as ``argmax``.

    Args:
        matrix: ``(n0, n1)`` scores.

    Returns:
        ``(K, 2)`` int64 pairs (i, j), sorted by i.
    """
    matrix = _matrix("matrix", matrix)
    if matrix.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    best_col = matrix.argmax(axis=1)
    best_row = matrix.argmax(axis=0)
    rows = np.flatnonzero(
        (best_row[best_col] == np.arange(matrix.shape[0])) & np.isfinite(matrix[np.arange(matrix.shape[0]), best_col])
    )  # never an unscored pair
    return np.stack([rows, best_col[rows]], axis=1).astype(np.int64)


def three_cycles(n01: np.ndarray, n12: np.ndarray, n02: np.ndarray, orientation: str = "forward") -> np.ndarray:
    """3-cycle consistent triplets of three manuscripts (A.4).

    "forward" follows best matches M0 → M1 → M2 → M0: a's best b, b's best c, and c's best in M0 must
    be a again. "backward" follows M0 → M2 → M1 → M0. "both" keeps triplets consistent both ways.

    Args:
        n01: ``(n0, n1)``, n12 ``(n1, n2)`` and n02 ``(n0, n2)`` normalized matrices of the pairs
            (M0, M1), (M1, M2), (M0, M2).
        orientation: one of ``ORIENTATIONS``.

    Returns:
        ``(T, 3)`` int64 triplets (a, b, c), sorted by a.
    """
    check_option("orientation", orientation, ORIENTATIONS)
    dims = check_shape("n01", np.asarray(n01), ("n0", "n1"))
    dims = check_shape("n12", np.asarray(n12), ("n1", "n2"), dims)
    check_shape("n02", np.asarray(n02), ("n0", "n2"), dims)
    n01, n12, n02 = _matrix("n01", n01), _matrix("n12", n12), _matrix("n02", n02)
    if min(n01.size, n12.size, n02.size) == 0:
        return np.zeros((0, 3), dtype=np.int64)
    a = np.arange(n01.shape[0])
    fb = n01.argmax(axis=1)  # a -> b
    fc = n12.argmax(axis=1)[fb]  # b -> c
    forward = n02.argmax(axis=0)[fc] == a  # c -> a
    bc = n02.argmax(axis=1)  # a -> c
    bb = n12.argmax(axis=0)[bc]  # c -> b
    backward = n01.argmax(axis=0)[bb] == a  # b -> a
    if orientation == "forward":
        keep, b, c = forward, fb, fc
    elif orientation == "backward":
        keep, b, c = backward, bb, bc
    else:
        keep, b, c = forward & backward & (fb == bb) & (fc == bc), fb, fc
    return np.stack([a[keep], b[keep], c[keep]], axis=1).astype(np.int64)


def propagate(
    matrix: np.ndarray,
    seeds: np.ndarray,
    *,
    sigma: float = defaults.PROPAGATION_SIGMA,
    alpha: float = defaults.PROPAGATION_ALPHA,
) -> np.ndarray:
    """P_S = N_S · Π over seeds (k, l) of (1 + α exp(−‖(i, j) − (k, l)‖² / 2σ²)) (A.5).

    The product is a sum of logarithms added in a window of ±6σ around each seed, all seeds at
    once: beyond it a factor differs from 1 by less than α·e⁻¹⁸ ≈ 4e-9.

    Args:
        matrix: ``(n0, n1)`` normalized scores.
        seeds: ``(K, 2)`` integer index pairs inside the matrix.
        sigma: σ_p, above 0; alpha: α, 0 or more.

    Returns:
        ``(n0, n1)`` float64.
    """
    out = _matrix("matrix", matrix).copy()
    seeds = _index_pairs("seeds", seeds, out.shape)
    check_positive_float("sigma", sigma)
    if alpha != 0:
        check_positive_float("alpha", alpha)
    if len(seeds) == 0 or out.size == 0:
        return out
    n0, n1 = out.shape
    radius = math.ceil(6 * sigma)
    offsets = np.arange(-radius, radius + 1)
    di, dj = np.meshgrid(offsets, offsets, indexing="ij")
    log_factor = np.log1p(alpha * np.exp(-(di**2 + dj**2) / (2 * sigma**2)))  # (W, W)
    rows = seeds[:, 0, None, None] + di  # (K, W, W)
    cols = seeds[:, 1, None, None] + dj
    inside = (rows >= 0) & (rows < n0) & (cols >= 0) & (cols < n1)
    log_total = np.zeros(out.size)
    np.add.at(log_total, (rows * n1 + cols)[inside], np.broadcast_to(log_factor, rows.shape)[inside])
    return out * np.exp(log_total.reshape(n0, n1))


def adjust_seeds(
    seeds: np.ndarray, confirmed: np.ndarray | None = None, rejected: np.ndarray | None = None
) -> np.ndarray:
    """Propagation seeds after expert verdicts: confirmed pairs added, rejected ones removed.

    Args:
        seeds, confirmed, rejected: ``(K, 2)`` integer index pairs (None: none). Their range is
            checked where they meet a matrix (``propagate``, ``collate``).

    Returns:
        ``(K, 2)`` int64 unique pairs, sorted.
    """
    unbounded = (np.iinfo(np.int64).max, np.iinfo(np.int64).max)
    keep = {tuple(p) for p in _index_pairs("seeds", seeds, unbounded).tolist()}
    keep |= {tuple(p) for p in _index_pairs("confirmed", confirmed, unbounded).tolist()}
    keep -= {tuple(p) for p in _index_pairs("rejected", rejected, unbounded).tolist()}
    return np.array(sorted(keep), dtype=np.int64).reshape(-1, 2)


@dataclass
class PairResult:
    """Everything computed for one manuscript pair (a, b); rows index a, columns b."""

    S: np.ndarray
    N_S: np.ndarray
    P_S: np.ndarray
    two_cycles: np.ndarray
    three_cycles: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    seeds: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))


def _oriented(scores: Mapping[tuple[int, int], np.ndarray], a: int, b: int) -> np.ndarray:
    return scores[(a, b)] if (a, b) in scores else scores[(b, a)].T


def collate(
    scores: Mapping[tuple[int, int], np.ndarray],
    *,
    normalization: str = defaults.NORMALIZATION,
    propagation: str = defaults.PROPAGATION,
    orientation: str = "forward",
    temperature: float = defaults.SOFTMAX_TEMPERATURE,
    confirmed: Mapping[tuple[int, int], np.ndarray] | None = None,
    rejected: Mapping[tuple[int, int], np.ndarray] | None = None,
) -> dict[tuple[int, int], PairResult]:
    """Normalizes, finds cycles and propagates for every manuscript pair (a, b), a < b.

    Every option and every matrix is checked before any work: a manuscript's illustration count must
    be the same in all its pairs.

    Args:
        scores: S of each pair (a, b) with a < b, shape ``(n_a, n_b)``.
        normalization: one of ``NORMALIZATIONS``.
        propagation: seeds of P_S, one of ``PROPAGATIONS``: "2-cycles", "3-cycles" (needs three or
            more manuscripts; a pair's seeds are the pairs of every consistent triplet through a third
            manuscript) or "none".
        orientation: direction of 3-cycles, one of ``ORIENTATIONS``.
        confirmed: pairs an expert confirmed, ``(K, 2)`` per manuscript pair; always seeds.
        rejected: pairs an expert rejected; never seeds.
    """
    check_option("normalization", normalization, NORMALIZATIONS)
    check_option("propagation", propagation, PROPAGATIONS)
    check_option("orientation", orientation, ORIENTATIONS)
    check_positive_float("temperature", temperature)
    sizes = _manuscript_sizes(scores)
    manuscripts = sorted(sizes)
    if propagation == "3-cycles" and len(manuscripts) < THREE_CYCLES_MIN_MANUSCRIPTS:
        raise InputError("3-cycle propagation needs three or more manuscripts", field="propagation")
    for name, verdicts in (("confirmed", confirmed), ("rejected", rejected)):
        for pair, pairs in (verdicts or {}).items():
            if pair not in scores:
                raise InputError(f"{name} pairs given for the manuscript pair {pair}, which has no scores", field=name)
            _index_pairs(name, pairs, np.shape(scores[pair]))
    normalized = {pair: normalize(s, normalization, temperature) for pair, s in scores.items()}

    cycles3: dict[tuple[int, int], list[np.ndarray]] = {pair: [] for pair in scores}
    for x, y, z in ((x, y, z) for x in manuscripts for y in manuscripts for z in manuscripts if x < y < z):
        t = three_cycles(
            _oriented(normalized, x, y), _oriented(normalized, y, z), _oriented(normalized, x, z), orientation
        )
        for (p, q), (u, v) in (((x, y), (0, 1)), ((y, z), (1, 2)), ((x, z), (0, 2))):
            if (p, q) in cycles3:
                cycles3[(p, q)].append(t[:, [u, v]])

    results = {}
    for pair, n in normalized.items():
        two = mutual_best(n)
        three = np.unique(np.concatenate(cycles3[pair] or [np.zeros((0, 2), np.int64)]), axis=0)
        seeds = {"none": np.zeros((0, 2), np.int64), "2-cycles": two, "3-cycles": three}[propagation]
        seeds = adjust_seeds(seeds, (confirmed or {}).get(pair), (rejected or {}).get(pair))
        results[pair] = PairResult(scores[pair], n, propagate(n, seeds), two, three, seeds)
    return results


def _manuscript_sizes(scores: Mapping[tuple[int, int], np.ndarray]) -> dict[int, int]:
    """Illustrations of each manuscript, checked to agree across its pairs; keys must be (a, b), a < b."""
    if not scores:
        raise InputError("no score matrices to collate", field="scores")
    sizes: dict[int, int] = {}
    for pair, matrix in scores.items():
        ok = isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(m, int | np.integer) for m in pair)
        if not ok or not 0 <= pair[0] < pair[1]:
            raise InputError(
                f"score matrices are keyed by manuscript pairs (a, b) with 0 <= a < b, not {pair!r}", field="scores"
            )
        shape = np.shape(matrix)
        if len(shape) != 2:
            raise ShapeError(f"scores{pair}", shape, (f"n{pair[0]}", f"n{pair[1]}"))
        for m, n in zip(pair, shape, strict=True):
            if sizes.setdefault(int(m), n) != n:
                raise ShapeError(
                    f"scores{pair}",
                    shape,
                    (f"n{pair[0]}", f"n{pair[1]}"),
                    f"manuscript {m} has {sizes[int(m)]} illustrations in another pair",
                )
    return sizes

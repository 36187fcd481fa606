"""Weak matches: scores not clearly above what unrelated illustrations score, and regions with nothing drawn.

N_S, P_S and the concordance's confidence are relative by design (A.3): an illustration's best candidate
scores high whatever its raw S, so all-different random images still close 2-cycles and form groups of
high confidence. So a match is *weak* when its raw S is not clearly above its collation's own null, or
when one of its two regions is blank:

- **Learned floor** (the default, ``learned_floor``): the null of a pair (i, j) is the raw S of the pairs of
  row i and of column j that close no cycle (not mutual best, in no 3-cycle): what illustration i scores
  against illustrations that are not its copy, and likewise j. The match is weak unless its S is above
  the highest of that null by ``defaults.WEAK_NULL_MARGIN`` robust spreads of the matrix's null (1.4826 x
  its median absolute deviation). A row or column with fewer than ``defaults.WEAK_NULL_MIN`` null pairs
  has no null to learn from: there the calibrated fixed floor holds. A cycle-consistent pair under it is
  a match all the same when it lies among clear matches (above their own nulls) in the order of both
  manuscripts (``anchored``): copyists keep the text's order, which is the evidence of the propagation.
  Both run twice: an illustration the first pass matched is no alternative for the other rows and columns
  (a concordance row holds one illustration of each witness), so the second leaves it out of their highest.
  A fixed floor cannot tell "weak because unrelated" from "weak because the copy is hard": hard copies'
  true matches score 0.1-0.6, as unrelated images do elsewhere, but far above their own rows' others.
- **Fixed floor** (``weak_below`` set): raw S under it (``CollationOptions.floor``, ``defaults.WEAK_BELOW``).
- **Blank regions**: against each other they score as high as copies (a uniform page 1.99, a noisy one
  0.6-0.9), so no rule on S can tell them apart.

The figures are in docs/concordance.md ("Weak matches"). Weak matches change no score: they are flagged
where results are read, and never join a concordance group; so no cache key holds them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image

from collation.core import defaults


def is_blank(image: Image.Image) -> bool:
    """Whether nothing is drawn in ``image``: the grey levels of its thumbnail (``defaults.BLANK_THUMBNAIL``
    pixels on the long side, each the mean of its block, which averages scanner noise and JPEG away) spread
    less than ``defaults.BLANK_SPREAD`` (standard deviation). Every real illustration of the Physiologus data
    spreads 19 or more; a uniform page 0, one with noise of 15 grey levels about 1."""
    thumbnail = image.convert("L")
    thumbnail.thumbnail((defaults.BLANK_THUMBNAIL, defaults.BLANK_THUMBNAIL), Image.Resampling.BOX)
    return bool(np.asarray(thumbnail, dtype=np.float64).std() < defaults.BLANK_SPREAD)


def weak_matches(
    scores: np.ndarray,
    floor: float,
    blank0: Sequence[bool] | np.ndarray | None = None,
    blank1: Sequence[bool] | np.ndarray | None = None,
    *,
    cycles: np.ndarray | None = None,
) -> np.ndarray:
    """Which pairs of a manuscript pair are weak matches.

    Args:
        scores: ``(n0, n1)`` raw S (-inf where unscored: weak, but such a pair is never a match).
        floor: the fixed floor: raw S under it is weak (0 makes no score weak); with ``cycles``, the
            floor of the rows and columns too small to learn one (``learned_floor``).
        blank0, blank1: ``(n0,)`` and ``(n1,)`` whether each region is blank (``is_blank``); None: none is.
        cycles: ``(K, 2)`` the cycle-consistent pairs (2-cycles and pairs of 3-cycles): the learned floor,
            from the null of the other pairs; None: the fixed floor.

    Returns:
        ``(n0, n1)`` bool.
    """
    s = np.asarray(scores, dtype=np.float64)
    blank = np.zeros(s.shape, dtype=bool)
    if blank0 is not None and len(blank0):
        blank |= np.asarray(blank0, dtype=bool)[:, None]
    if blank1 is not None and len(blank1):
        blank |= np.asarray(blank1, dtype=bool)[None, :]
    if cycles is None:
        return ~(s >= floor) | blank
    pairs = np.asarray(cycles, dtype=np.int64).reshape(-1, 2)
    # Twice: the matches of the first pass are taken, and a second illustration's resemblance to another's clear
    # copy is then no alternative to its own match (``learned_floor``'s ``matched``). The floors can only fall, so
    # the second pass keeps every match of the first.
    first = learned_weak(s, pairs, floor, blank)
    return learned_weak(s, pairs, floor, blank, matched=pairs[~first[pairs[:, 0], pairs[:, 1]]])


def learned_weak(
    s: np.ndarray, pairs: np.ndarray, floor: float, blank: np.ndarray, matched: np.ndarray | None = None
) -> np.ndarray:
    """``(n0, n1)`` bool: the weak matches by the learned floor, then the order's evidence.

    Args:
        s: ``(n0, n1)`` raw S, -inf where unscored.
        pairs: ``(K, 2)`` the cycle-consistent pairs.
        floor: the fixed floor of the rows and columns too small to learn one.
        blank: ``(n0, n1)`` whether either region of the pair is blank.
        matched: ``(M, 2)`` the pairs already known to be matches, or None (``learned_floor``).
    """
    weak = ~(s >= learned_floor(s, pairs, floor, matched=matched)) | blank
    held = pairs[anchored(weak, pairs)]  # the order's evidence: a pair between clear matches in both manuscripts
    held = held[np.isfinite(s[held[:, 0], held[:, 1]])]  # an unscored pair is never a match
    weak[held[:, 0], held[:, 1]] &= blank[held[:, 0], held[:, 1]]
    return weak


def anchored(
    weak: np.ndarray,
    cycles: np.ndarray,
    window: float = defaults.PROPAGATION_SIGMA,
    anchors: int = defaults.WEAK_ANCHORS,
) -> np.ndarray:
    """``(K,)`` bool: which cycle-consistent pairs lie among matches that are not weak, in both orders.

    Copyists keep the text's order (the propagation of A.5 rests on it), so a hard copy between clear
    matches is itself evidence: pair (i, j) is *anchored* when at least ``anchors`` other pairs of ``cycles``
    that are not weak lie within ``window`` illustrations of it in both manuscripts, on the same side in
    both (k - i and l - j of one sign: before it in both, or after it in both). Unrelated witnesses have
    almost no pair clearly above the null, and none in order, so nothing of theirs is anchored.

    Args:
        weak: ``(n0, n1)`` bool, the pairs weak by their raw S (and blank regions).
        cycles: ``(K, 2)`` the cycle-consistent pairs.
        window: how far a neighbour may be, in illustrations of each manuscript (the propagation's σ_p).
        anchors: how many neighbours that are not weak a pair needs.
    """
    weak = np.asarray(weak, dtype=bool)
    n0, n1 = weak.shape
    pairs = np.asarray(cycles, dtype=np.int64).reshape(-1, 2)
    clear = np.unique(pairs[~weak[pairs[:, 0], pairs[:, 1]]], axis=0)
    grid = np.zeros((n0 + 1, n1 + 1), dtype=np.int64)  # a summed-area table of the clear pairs:
    np.add.at(grid, (clear[:, 0] + 1, clear[:, 1] + 1), 1)
    table = grid.cumsum(axis=0).cumsum(axis=1)  # table[a, b]: clear pairs in rows < a and columns < b
    w, i, j = int(window), pairs[:, 0], pairs[:, 1]

    def count(r0: np.ndarray, r1: np.ndarray, c0: np.ndarray, c1: np.ndarray) -> np.ndarray:
        """Clear pairs in rows [r0, r1) and columns [c0, c1), each clipped to the matrix."""
        r0, r1 = np.clip(r0, 0, n0), np.clip(r1, 0, n0)
        c0, c1 = np.clip(c0, 0, n1), np.clip(c1, 0, n1)
        return table[r1, c1] - table[r0, c1] - table[r1, c0] + table[r0, c0]

    after = count(i + 1, i + w + 1, j + 1, j + w + 1)
    before = count(i - w, i, j - w, j)
    return before + after >= anchors


def learned_floor(
    scores: np.ndarray,
    cycles: np.ndarray,
    floor: float,
    margin: float = defaults.WEAK_NULL_MARGIN,
    min_null: int = defaults.WEAK_NULL_MIN,
    *,
    matched: np.ndarray | None = None,
) -> np.ndarray:
    """``(n0, n1)`` float64: the raw S each pair must reach not to be weak, learned from the pair's null.

    The null of row i is the scored S(i, ·) of the pairs in no cycle (what illustration i scores against
    illustrations that are not its copy), likewise column j's. A pair must score above the highest of its
    row's and its column's null by ``margin`` robust spreads of the whole matrix's null (1.4826 x its median
    absolute deviation): clearly above every pair that is not a match around it. A row or column with fewer
    than ``min_null`` null pairs has none to learn from: its side of the floor is the fixed ``floor``.

    ``matched`` pairs take their illustrations out of the other rows' and columns' highest: an illustration that
    is clearly another's copy is no alternative to a row's own match, since a concordance row holds one
    illustration of each witness. Copies by one hand, or quarters of one drawing, resemble each other more than
    unrelated images do, and their pairs raised each other's floors over the right matches of hard copies. The
    whole null still gives the spread, and the highest where fewer than ``min_null`` null pairs are left.

    Args:
        scores: ``(n0, n1)`` raw S, -inf where unscored.
        cycles: ``(K, 2)`` cycle-consistent pairs, left out of the null.
        floor: the fixed floor of the rows and columns too small to learn from.
        matched: ``(M, 2)`` pairs known to be matches (``weak_matches``' first pass), or None.
    """
    s = np.asarray(scores, dtype=np.float64)
    cycle = np.zeros(s.shape, dtype=bool)
    pairs = np.asarray(cycles, dtype=np.int64).reshape(-1, 2)
    cycle[pairs[:, 0], pairs[:, 1]] = True
    null = np.where(np.isfinite(s) & ~cycle, s, -np.inf)
    pooled = null[np.isfinite(null)]
    spread = 1.4826 * float(np.median(np.abs(pooled - np.median(pooled)))) if len(pooled) else 0.0
    taken0, taken1 = np.zeros(s.shape[0], dtype=bool), np.zeros(s.shape[1], dtype=bool)
    if matched is not None:
        known = np.asarray(matched, dtype=np.int64).reshape(-1, 2)
        taken0[known[:, 0]], taken1[known[:, 1]] = True, True
    sides = []
    for axis, taken in ((1, taken1[None, :]), (0, taken0[:, None])):  # rows, then columns
        free = np.where(taken, -np.inf, null)
        enough = np.isfinite(free).sum(axis=axis) >= min_null
        highest = np.where(enough, free.max(axis=axis), null.max(axis=axis))
        learned = highest + margin * spread
        sides.append(np.where(np.isfinite(null).sum(axis=axis) >= min_null, learned, float(floor)))
    return np.maximum(sides[0][:, None], sides[1][None, :])

"""The weak floor each collation learns from its own scores (collation.engine.weak.learned_floor,
docs/concordance.md "Weak matches"): right matches of hard copies, which score under the fixed floor of 0.5,
are grouped; random witnesses and blank pages still are not."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from synthetic import PAPER, drawing, restyled_copy
from test_weak import blank_page, groups, witnesses

from collation.core import defaults
from collation.core.options import CollationOptions
from collation.engine.concordance import PairEvidence, build_groups
from collation.engine.correspondences import collate
from collation.engine.outputs import concordance_rows, correspondences
from collation.engine.pipeline import CollationResult, run_collation
from collation.engine.weak import anchored, learned_floor, learned_weak, weak_matches

OPTIONS = CollationOptions(candidates=None, transpositions="none")
"""As drawn: the turned copies are the hard copies here (with the default turns they score as copies do)."""
N = 8


def turned_copy(k: int) -> Image.Image:
    """A restyled copy turned by 30° one way or the other, in a larger frame: its right match scores 0.3-0.5
    as drawn, what unrelated images reach elsewhere, yet far above its own row's other pairs."""
    angle = 30 if k % 2 else -30
    return restyled_copy(drawing(k)).rotate(angle, Image.Resampling.BICUBIC, expand=True, fillcolor=PAPER)


@pytest.fixture(scope="module")
def hard() -> CollationResult:
    return run_collation(witnesses([[drawing(k) for k in range(N)], [turned_copy(k) for k in range(N)]]), OPTIONS)


@pytest.mark.heavy
def test_right_hard_matches_are_grouped(hard: CollationResult) -> None:
    pr = hard.pairs[(0, 1)]
    right = np.arange(N)
    assert (pr.P_S.argmax(axis=1) == right).all()  # the method finds every copy
    assert (pr.S[right, right] < defaults.WEAK_BELOW[("efficientnet-lite0", "s_trans", False)]).sum() >= N // 2
    rows = concordance_rows(hard)
    assert sorted([c["index"] for c in row["cells"]] for row in rows if row["size"] == 2) == [[k, k] for k in right]
    assert not any(row["weak"] for row in rows)
    assert [(m["match"]["index"], m["weak"]) for m in correspondences(hard, 0, 1)] == [(k, False) for k in right]
    # The fixed floor of 0.5 (weak_below set) left most of them out: the fault the learned floor mends.
    fixed = CollationResult(hard.manuscripts, OPTIONS.replace(weak_below=0.5), hard.pairs)
    assert len(groups(concordance_rows(fixed))) <= N // 2


def noise(rng: np.random.Generator) -> Image.Image:
    w, h = (int(v) for v in rng.integers(48, 160, 2))
    return Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))


@pytest.mark.heavy
def test_random_witnesses_and_blank_pages_are_not_grouped() -> None:
    """40 noise images of 48-160 px per witness (the random set of benchmarks/bench_concordance.py, seed 0),
    and two blank pages each, collated with the default options: noise's best matches reach 0.5-0.55, over
    the fixed floor, which grouped five of them; none is clearly above its own row's and column's others.
    The blank pages stay out by the blank rule."""
    rng = np.random.default_rng(0)
    images = [[noise(rng) for _ in range(40)] for _ in range(2)]
    images = [ims + [blank_page(10 * m + k, sigma=5) for k in range(2)] for m, ims in enumerate(images)]
    result = run_collation(witnesses(images), CollationOptions())
    assert groups(concordance_rows(result)) == []
    fixed = CollationResult(result.manuscripts, CollationOptions(weak_below=0.5), result.pairs, blank=result.blank)
    assert len(groups(concordance_rows(fixed))) >= 3


def test_the_learned_floor_is_the_null_of_rows_and_columns() -> None:
    rng = np.random.default_rng(0)
    s = rng.normal(0.12, 0.02, (10, 10))
    np.fill_diagonal(s, 0.3)  # hard copies: under 0.5, far above their rows' and columns' others
    s[9, 9] = 0.14  # a mutual best that is not clearly above its row's others
    s[9, :9] = s[:9, 9] = 0.13
    cycles = collate({(0, 1): s})[(0, 1)].two_cycles
    assert [9, 9] in cycles.tolist()
    floor = learned_floor(s, cycles, 0.5)
    null = s[~np.eye(10, dtype=bool)]
    spread = 1.4826 * np.median(np.abs(null - np.median(null)))
    expected_cols = np.array([np.delete(s[:, j], j).max() for j in range(10)])
    expected = np.maximum(np.array([np.delete(s[i], i).max() for i in range(10)])[:, None], expected_cols[None, :])
    assert np.allclose(floor, expected + defaults.WEAK_NULL_MARGIN * spread)
    assert (s[np.arange(9), np.arange(9)] >= floor[np.arange(9), np.arange(9)]).all() and s[9, 9] < floor[9, 9]
    # The copies in the opposite order (the second manuscript reversed): no pair has a neighbour in both
    # orders, so the floor alone decides.
    reversed_ = s[:, ::-1]
    weak = weak_matches(reversed_, 0.5, cycles=collate({(0, 1): reversed_})[(0, 1)].two_cycles)
    assert not weak[np.arange(9), 9 - np.arange(9)].any() and weak[9, 0]
    assert weak_matches(s, 0.5)[np.arange(10), np.arange(10)].all()  # the fixed floor: every one weak
    # Too few pairs to learn from (a 3 x 3 pair of witnesses): the fixed floor holds there.
    small = s[:3, :3]
    assert (learned_floor(small, collate({(0, 1): small})[(0, 1)].two_cycles, 0.5) == 0.5).all()
    # Unscored pairs are never in a null.
    sparse = np.where(rng.random((10, 10)) < 0.3, -np.inf, s)
    np.fill_diagonal(sparse, 0.3)
    assert np.isfinite(learned_floor(sparse, cycles, 0.5)).all()


def test_a_weak_pair_between_clear_matches_in_order_is_a_match() -> None:
    """Copies 5 and 6 score like their rows' others (hard copies), but lie between clear matches in the order of
    both manuscripts: they are matches (``anchored``), unless a region is blank or the order is lost."""
    rng = np.random.default_rng(1)
    s = rng.normal(0.12, 0.02, (12, 12))
    np.fill_diagonal(s, 0.3)
    for k in (5, 6):
        s[k, :] = s[:, k] = 0.13
        s[k, k] = 0.14
    cycles = collate({(0, 1): s})[(0, 1)].two_cycles
    assert {(k, k) for k in range(12)} <= {tuple(c) for c in cycles.tolist()}
    floor = learned_floor(s, cycles, 0.5)
    assert s[5, 5] < floor[5, 5] and s[6, 6] < floor[6, 6]  # weak by S alone
    assert not weak_matches(s, 0.5, cycles=cycles)[np.arange(12), np.arange(12)].any()
    # A blank region is weak whatever its neighbours, and never anchors another pair.
    blank = np.zeros(12, dtype=bool)
    blank[5] = True
    assert weak_matches(s, 0.5, blank, None, cycles=cycles)[5, 5]
    unscored = s.copy()
    unscored[5, 5] = -np.inf  # a cycle given for a pair outside the candidates: never a match
    assert weak_matches(unscored, 0.5, cycles=cycles)[5, 5]
    # anchored counts clear neighbours before or after in both orders, within σ_p = 5 illustrations.
    weak = np.ones((12, 12), dtype=bool)
    weak[[0, 1, 3, 9], [0, 1, 3, 9]] = False
    diagonal = np.stack([np.arange(12)] * 2, axis=1)
    # The clear pairs other than 9 are more than 5 from it (3 is 6 away); 10 and 11 have 9 alone.
    assert anchored(weak, diagonal).tolist() == [True] * 9 + [False] * 3
    assert anchored(weak, diagonal, anchors=3)[[2, 3]].tolist() == [True, False]  # 0, 1, 3 against 0, 1
    assert anchored(weak, diagonal, window=1)[[2, 4]].tolist() == [True, False]  # 1 and 3 against 3 alone
    # In opposite orders (a neighbour before in one manuscript is after in the other): no anchor.
    turned = np.stack([np.arange(12), 11 - np.arange(12)], axis=1)
    weak = np.ones((12, 12), dtype=bool)
    weak[[0, 1, 3, 9], [11, 10, 8, 2]] = False
    assert not anchored(weak, turned).any()


def test_the_floor_is_learned_unless_weak_below_is_set() -> None:
    assert CollationOptions().learns_floor and not CollationOptions(weak_below=0.5).learns_floor
    assert "weak_below" not in CollationOptions().to_record()


def reversed_copies(seed: int) -> np.ndarray:
    """``(12, 24)`` S of 12 illustrations against their copies in the opposite order (the copy of k at 11 - k, so
    that the order holds nothing) and 12 illustrations with no copy: 11 clear copies, and a hard one, (5, 6),
    whose row resembles the copy of its neighbour 6 at column 5 almost as much as its own (a quarter of the same
    drawing, a copy by the same hand)."""
    s = np.random.default_rng(seed).normal(0.12, 0.015, (12, 24))
    s[np.arange(12), 11 - np.arange(12)] = 0.3
    s[5, 6], s[5, 5] = 0.2, 0.19
    return s


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_hard_copy_is_not_weak_for_resembling_another_illustrations_clear_copy(seed: int) -> None:
    """Row 5's highest pair that is no match is column 5, the clear copy of row 6: one illustration per witness
    in a row, so it is no alternative to row 5's own match, which is clearly above everything else around it.
    The whole null counted it (weak: left out of the concordance); the floor leaves it out once (6, 5) is known."""
    s = reversed_copies(seed)
    right = np.stack([np.arange(12), 11 - np.arange(12)], axis=1)
    pr = collate({(0, 1): s})[(0, 1)]
    cycles = pr.two_cycles
    assert {tuple(p) for p in right.tolist()} <= {tuple(c) for c in cycles.tolist()}
    whole = learned_floor(s, cycles, 0.5)
    taken = learned_floor(s, cycles, 0.5, matched=right[right[:, 0] != 5])
    assert taken[5, 6] <= s[5, 6] < whole[5, 6]
    weak = weak_matches(s, 0.5, cycles=cycles)
    assert not weak[right[:, 0], right[:, 1]].any()
    first = learned_weak(s, cycles, 0.5, np.zeros(s.shape, dtype=bool))  # the first pass: (5, 6) weak
    assert first[5, 6] and not (weak & ~first).any()  # the second keeps every match of the first
    rows = build_groups({0: 12, 1: 24}, {(0, 1): PairEvidence(pr.P_S, cycles, {}, weak)})
    assert sorted((g.members[0].position, g.members[1].position) for g in rows if len(g.members) == 2) == [
        tuple(p) for p in right.tolist()
    ]
    # When the copy of row 6 is lost (row 6 scores like chance), nothing is known of column 5: (5, 6) stays weak.
    lost = s.copy()
    lost[6, 5] = 0.13
    assert weak_matches(lost, 0.5, cycles=collate({(0, 1): lost})[(0, 1)].two_cycles)[5, 6]

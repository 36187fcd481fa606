"""Normalization, cycle consistency and propagation against hand-computed values."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from collation.core.errors import DTypeError, IndexRangeError, InputError, OptionError, ShapeError
from collation.engine.correspondences import (
    NORMALIZATIONS,
    ORIENTATIONS,
    PROPAGATIONS,
    adjust_seeds,
    collate,
    mutual_best,
    normalize,
    propagate,
    three_cycles,
)

S = np.array([[4.0, 2.0, 1.0], [1.0, 1.0, 2.0]])


def test_max_normalization_by_hand():
    # rows maxima 4, 2; column maxima 4, 2, 2
    expected = np.array([[1 + 1, 0.5 + 1, 0.25 + 0.5], [0.5 + 0.25, 0.5 + 0.5, 1 + 1]])
    assert np.allclose(normalize(S, "max"), expected)


def test_avg_normalization_by_hand():
    # rows means 7/3, 4/3; column means 2.5, 1.5, 1.5
    expected = S / np.array([[7 / 3], [4 / 3]]) + S / np.array([[2.5, 1.5, 1.5]])
    assert np.allclose(normalize(S, "avg"), expected)


def test_softmax_normalizations_by_hand():
    lam = 2.0
    e = np.exp(lam * S)
    expected = e / e.sum(1, keepdims=True) + e / e.sum(0, keepdims=True)
    assert np.allclose(normalize(S, "softmax", lam), expected)
    x = lam * S / S.max(1, keepdims=True)
    y = lam * S / S.max(0, keepdims=True)
    expected = np.exp(x) / np.exp(x).sum(1, keepdims=True) + np.exp(y) / np.exp(y).sum(0, keepdims=True)
    assert np.allclose(normalize(S, "softmax-max", lam), expected)
    assert np.allclose(normalize(S, "softmax-avg", lam).sum(), 2 + 3)  # each row and each column sums to 1
    assert np.array_equal(normalize(S, "none"), S)


def test_all_zero_rows_and_columns_do_not_divide_by_zero():
    z = np.array([[0.0, 0.0], [0.0, 3.0]])
    out = normalize(z, "max")
    assert np.isfinite(out).all() and out[1, 1] == 2.0 and out[0].sum() == 0


def test_unknown_normalization_names_the_field():
    with pytest.raises(InputError) as e:
        normalize(S, "median")
    assert e.value.field == "normalization"


def test_mutual_best_by_hand():
    n = np.array([[0.9, 0.1, 0.3], [0.8, 0.2, 0.7], [0.1, 0.6, 0.5]])
    # row bests: 0, 0, 1; column bests: 0, 2, 1 -> mutual (0, 0) and (2, 1)
    assert mutual_best(n).tolist() == [[0, 0], [2, 1]]


def test_three_cycles_by_hand():
    n01 = np.eye(3)[[0, 1, 2]]  # a -> b: identity
    n12 = np.eye(3)[[1, 0, 2]]  # b -> c: 0->1, 1->0, 2->2
    n02 = np.eye(3)[[1, 0, 0]] + 0.1 * np.eye(3)[[0, 1, 2]]  # c -> a: best rows per column: c0->a1, c1->a0, c2->a2
    # forward: a0 -> b0 -> c1 -> a0 (ok); a1 -> b1 -> c0 -> a1 (ok); a2 -> b2 -> c2 -> a2 (ok)
    assert three_cycles(n01, n12, n02, "forward").tolist() == [[0, 0, 1], [1, 1, 0], [2, 2, 2]]
    broken = n02.copy()
    broken[2, 2] = 0.0  # column 2 now prefers a0 or a1
    assert [t[0] for t in three_cycles(n01, n12, broken, "forward").tolist()] == [0, 1]
    assert three_cycles(n01, n12, n02, "both").tolist() == three_cycles(n01, n12, n02, "backward").tolist()


def test_propagation_equals_the_dense_formula():
    rng = np.random.default_rng(0)
    n = rng.random((70, 50))
    seeds = np.array([[0, 0], [10, 12], [40, 35], [69, 49], [35, 2]])
    dense = n.copy()
    for k, m in seeds:
        i, j = np.meshgrid(np.arange(70), np.arange(50), indexing="ij")
        dense *= 1 + 0.25 * np.exp(-((i - k) ** 2 + (j - m) ** 2) / (2 * 5.0**2))
    assert np.allclose(propagate(n, seeds), dense, rtol=1e-8, atol=0)
    assert np.isclose(propagate(n, seeds[:1])[0, 0], n[0, 0] * 1.25)  # a seed boosts itself
    assert np.array_equal(propagate(n, np.zeros((0, 2))), n)


def test_collate_two_manuscripts_uses_mutual_best_of_n_s():
    s = np.array([[0.9, 0.2, 0.1], [0.3, 0.8, 0.2], [0.1, 0.2, 0.7]])
    result = collate({(0, 1): s})
    pr = result[(0, 1)]
    assert pr.two_cycles.tolist() == [[0, 0], [1, 1], [2, 2]]
    assert np.array_equal(pr.seeds, pr.two_cycles)
    assert np.allclose(pr.N_S, normalize(s))
    assert np.allclose(pr.P_S, propagate(pr.N_S, pr.two_cycles))
    with pytest.raises(InputError, match="three or more"):
        collate({(0, 1): s}, propagation="3-cycles")


def test_collate_three_manuscripts_three_cycles_give_one_pair_per_manuscript_pair():
    rng = np.random.default_rng(1)
    n = 6
    scores = {(a, b): rng.random((n, n)) * 0.5 + np.eye(n) for a, b in itertools.combinations(range(3), 2)}
    result = collate(scores, propagation="3-cycles")
    for pair in scores:
        assert result[pair].three_cycles.tolist() == [[k, k] for k in range(n)]
        assert np.array_equal(result[pair].seeds, result[pair].three_cycles)


def test_confirmed_pairs_become_seeds_and_rejected_ones_do_not():
    s = np.array([[0.9, 0.2], [0.3, 0.8]])
    result = collate({(0, 1): s}, confirmed={(0, 1): [[0, 1]]}, rejected={(0, 1): [[1, 1]]})
    assert result[(0, 1)].seeds.tolist() == [[0, 0], [0, 1]]


# -- boundary checks -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "allowed"),
    [
        ("normalization", "median", NORMALIZATIONS),
        ("propagation", "4-cycles", PROPAGATIONS),
        ("orientation", "sideways", ORIENTATIONS),
    ],
)
def test_unknown_options_of_collate_name_the_allowed_values(option, value, allowed):
    s = np.eye(3)
    with pytest.raises(OptionError) as e:
        collate({(0, 1): s}, **{option: value})  # two manuscripts: checked although no 3-cycle is computed
    assert e.value.option == option and e.value.allowed == allowed
    assert str(e.value) == f"unknown {option} {value!r}: choose one of {', '.join(allowed)}"


def test_unknown_options_of_the_single_steps():
    with pytest.raises(OptionError, match="choose one of none, softmax, avg, max, softmax-avg, softmax-max"):
        normalize(S, "Max")
    with pytest.raises(OptionError, match="choose one of forward, backward, both"):
        three_cycles(np.eye(2), np.eye(2), np.eye(2), "clockwise")
    with pytest.raises(InputError, match="temperature"):
        normalize(S, "softmax", 0.0)


def test_matrices_must_be_two_dimensional_and_agree():
    with pytest.raises(ShapeError) as e:
        normalize(np.ones(3))
    assert e.value.actual == (3,) and e.value.expected == ("n0", "n1")
    with pytest.raises(ShapeError):
        mutual_best(np.ones((2, 2, 2)))
    with pytest.raises(ShapeError, match="n1 is 3 elsewhere"):
        three_cycles(np.ones((2, 3)), np.ones((4, 2)), np.ones((2, 2)))
    with pytest.raises(ShapeError, match="manuscript 1 has 3 illustrations in another pair"):
        collate({(0, 1): np.ones((2, 3)), (1, 2): np.ones((4, 2)), (0, 2): np.ones((2, 2))})
    with pytest.raises(InputError, match="a < b"):
        collate({(1, 0): np.ones((2, 2))})
    with pytest.raises(InputError, match="no score matrices"):
        collate({})
    with pytest.raises(InputError, match="numbers"):
        normalize(np.array([["a", "b"]]))


def test_seeds_and_verdicts_must_lie_inside_the_matrix():
    n = np.ones((3, 4))
    with pytest.raises(IndexRangeError, match="seeds indices out of range for 3 x 4"):
        propagate(n, [[3, 0]])
    with pytest.raises(IndexRangeError):
        propagate(n, [[0, -1]])
    with pytest.raises(ShapeError):
        propagate(n, [[0, 1, 2]])
    with pytest.raises(DTypeError):
        propagate(n, [[0.5, 1.0]])
    with pytest.raises(IndexRangeError, match="confirmed"):
        collate({(0, 1): n}, confirmed={(0, 1): [[0, 4]]})
    with pytest.raises(InputError, match="no scores"):
        collate({(0, 1): n}, rejected={(0, 2): [[0, 0]]})
    assert adjust_seeds(np.zeros((0, 2)), [[1, 2]], None).tolist() == [[1, 2]]
    with pytest.raises(InputError, match="sigma"):
        propagate(n, [[0, 0]], sigma=0)

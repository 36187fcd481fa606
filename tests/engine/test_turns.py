"""Turns of any angle (``transpositions: turns``, docs/transpositions.md): a copy turned by 30° is matched
under the turn that undoes it, and S_trans scores each pair under as drawn and its likeliest turn only."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from synthetic import PAPER, drawing, restyled_copy

from collation.core import defaults
from collation.core.options import CollationOptions
from collation.core.vocabulary import INVERSES, TURNS
from collation.engine.cascade import likely_transpositions
from collation.engine.pipeline import describe, describe_transposed, score_candidates
from collation.engine.similarity import all_pairs, score_pairs
from collation.engine.transpositions import transpose_image, winner_names
from collation.store.records import pair_key, transposed_features_key

ANGLES = (30, -30, 30, -30)
N = len(ANGLES)


@pytest.fixture(scope="module")
def turned(backbone):
    """Four drawings, and restyled copies of them turned by ±30° in a larger frame, as a copyist slants them."""
    originals = [drawing(k) for k in range(N)]
    copies = [
        restyled_copy(drawing(k)).rotate(a, Image.Resampling.BICUBIC, expand=True, fillcolor=PAPER)
        for k, a in enumerate(ANGLES)
    ]
    options = CollationOptions(candidates=None, transpositions="turns")
    feats0 = describe(originals, backbone, options)
    plain1 = describe(copies, backbone, options)
    return options, feats0, plain1, describe_transposed(copies, backbone, options, plain1)


@pytest.mark.heavy
def test_a_copy_turned_by_30_degrees_is_matched_under_the_turn_that_undoes_it(turned):
    options, feats0, plain1, transposed1 = turned
    pairs = all_pairs(N, N).numpy()
    s, winners = (x.reshape(N, N) for x in score_candidates(feats0, transposed1, pairs, options))
    s_none = score_pairs(feats0, plain1, pairs)[0].numpy().reshape(N, N)
    right = np.arange(N)
    assert (s.argmax(axis=1) == right).all() and (s.argmax(axis=0) == right).all()
    names = winner_names(winners, "turns")
    # Each is turned back the other way (30° here; a neighbouring angle may fit a warped copy as well).
    back = {30: {"rot345", "rot330", "rot315"}, -30: {"rot15", "rot30", "rot45"}}
    assert all(names[k, k] in back[a] for k, a in enumerate(ANGLES)) and names[0, 0] == "rot330"
    # As drawn they score what unrelated images score (under the fixed floor); turned back, as copies do.
    assert (s_none[right, right] < 0.5).all() and (s[right, right] > 0.65).all()
    assert (s[right, right] > s_none[right, right] + 0.25).all()
    others = ~np.eye(N, dtype=bool)
    assert s[others].max() < 0.3


@pytest.mark.heavy
def test_s_trans_scores_as_drawn_and_the_likeliest_turn_only(turned):
    options, feats0, _, transposed1 = turned
    pairs = all_pairs(N, N).numpy()
    chosen = likely_transpositions(feats0, transposed1, pairs, options.n_transpositions, seed=0, partial=False)
    assert chosen.shape == (N * N, defaults.TRANSPOSITIONS_SCORED) and (chosen[:, 0] == 0).all()
    # Each chosen turn is scored exactly as scoring all of them would (its RANSAC draws are keyed by t * n1 + j),
    # so S is at most the best of all; the cheap pick may be a neighbouring angle of the best (within 0.1 here).
    t, n1 = options.n_transpositions, N
    every = score_pairs(feats0, transposed1, pairs, n_transpositions=t)[0].numpy()
    s, winners = score_candidates(feats0, transposed1, pairs, options)
    expanded = np.stack([pairs[:, 0], winners.astype(np.int64) * n1 + pairs[:, 1]], axis=1)
    assert np.array_equal(s, score_pairs(feats0, transposed1, expanded)[0].numpy())
    assert (s <= every + 1e-12).all()
    diagonal = np.arange(N) * (N + 1)
    assert (s[diagonal] > every[diagonal] - 0.1).all()


def test_turns_are_named_keyed_and_inverted():
    assert CollationOptions(transpositions="turns").transposition_names == ("identity", "mirror", *TURNS)
    assert {INVERSES[INVERSES[name]] == name for name in TURNS} == {True}
    image = drawing(0, (64, 48))
    turned = transpose_image(image, "rot30")
    assert turned.size == image.size and not np.array_equal(np.asarray(turned), np.asarray(image))
    assert transposed_features_key("k", "turns") != "k.turns" and transposed_features_key("k", "all") == "k.all"
    keys = {pair_key(CollationOptions(transpositions=v), "a", "b") for v in ("none", "mirror", "all", "turns")}
    assert len(keys) == 4

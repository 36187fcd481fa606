"""Turns of any angle (``transpositions: turns``, docs/transpositions.md): a copy turned by 30° is matched
under the turn that undoes it, and S_trans scores each pair under as drawn and its likeliest turn only."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image
from synthetic import PAPER, drawing, restyled_copy

from collation.core import defaults
from collation.core.options import CollationOptions
from collation.core.vocabulary import INVERSES, TRANSPOSITION_NAMES, TURNS
from collation.engine import transpositions
from collation.engine.pipeline import (
    choose_transpositions,
    describe,
    describe_transposed,
    find_candidates,
    score_candidates,
    suspects,
)
from collation.engine.similarity import score_pairs
from collation.engine.transpositions import (
    TransposedImages,
    _Subset,
    paper_colour,
    transpose_image,
    winner_names,
)
from collation.store.records import pair_key, transposed_features_key, turned_features_key

ANGLES = (30, -30, 30, -30, 0, 0)
N = len(ANGLES)
TURNED = np.array([a != 0 for a in ANGLES])


@pytest.fixture(scope="module")
def turned(backbone):
    """Six drawings, and restyled copies of them: four turned by ±30° in a larger frame, as a copyist slants
    them, and two as drawn; each pair's transposition chosen as ``run_collation`` does (every pair a candidate)."""
    originals = [drawing(k) for k in range(N)]
    copies = [
        restyled_copy(drawing(k)).rotate(a, Image.Resampling.BICUBIC, expand=True, fillcolor=PAPER)
        for k, a in enumerate(ANGLES)
    ]
    options = CollationOptions(candidates=None, transpositions="turns")
    feats0 = describe(originals, backbone, options)
    plain1 = describe(copies, backbone, options)
    found = find_candidates(feats0, plain1, options)
    suspected = suspects(found)
    chosen, turns = choose_transpositions(feats0, copies, backbone, found.pairs, suspected, options)
    turned1 = describe_transposed(copies, backbone, options, plain1, turns=turns)
    return options, feats0, plain1, turned1, suspected, chosen, copies, turns


@pytest.mark.heavy
def test_a_copy_turned_by_30_degrees_is_matched_under_the_turn_that_undoes_it(turned):
    options, feats0, plain1, turned1, _, chosen, _, _ = turned
    s, winners = (x.reshape(N, N) for x in score_candidates(feats0, plain1, chosen, options, turned=turned1))
    s_none = score_pairs(feats0, plain1, chosen[:, :2])[0].numpy().reshape(N, N)
    right = np.arange(N)
    assert (s.argmax(axis=1) == right).all() and (s.argmax(axis=0) == right).all()
    names = winner_names(winners, "turns")
    # Each turned copy is turned back the other way (30° here; a neighbouring angle may fit a warped copy as
    # well); the copies as drawn stay as drawn.
    back = {30: {"rot345", "rot330", "rot315"}, -30: {"rot15", "rot30", "rot45"}, 0: {"identity"}}
    assert all(names[k, k] in back[a] for k, a in enumerate(ANGLES))
    # As drawn the turned ones score under the fixed floor of 0.5; turned back, as copies do. S counts the drawn
    # cells' matches only (bare paper matches nothing, features.uniform_cells): a copy as drawn scores about 0.9,
    # unrelated ones 0.1.
    t = right[TURNED]
    assert (s_none[t, t] < 0.5).all() and (s[t, t] > 0.5).all() and (s[t, t] > s_none[t, t] + 0.1).all()
    others = ~np.eye(N, dtype=bool)
    assert s[others].max() < 0.2 and (s[~TURNED, ~TURNED] > 0.6).all()


@pytest.mark.heavy
def test_only_the_copies_not_matched_as_drawn_are_described_and_scored_transposed(turned, backbone):
    options, feats0, plain1, turned1, suspected, chosen, copies, turns = turned
    # The turned copies have no good partner as drawn; the copies as drawn have one (cheap score about 1).
    assert np.array_equal(suspected.columns, TURNED)
    # Each suspected copy is described under one transposition, its likeliest, at every scale; the others not.
    assert len(turned1) == N and turned1.scales == defaults.SCALES
    assert np.array_equal(turned1.mask.any(dim=(1, 2)).numpy(), turns > 0) and np.array_equal(turns > 0, TURNED)
    names = options.transposition_names
    again = describe(
        [transpose_image(copies[k], names[turns[k]]) for k in np.flatnonzero(TURNED)], backbone, options
    )  # the same maps as describing them alone
    assert torch.allclose(
        again.desc, turned1.select(np.flatnonzero(TURNED)).desc[:, :, : again.desc.shape[2]], atol=1e-4
    )
    # Pairs of a copy as drawn are scored as drawn only; a suspected pair under its likeliest transposition
    # when its cheap score beats the one as drawn, and S is exactly score_pairs' on the turned features there.
    assert not chosen[~TURNED[chosen[:, 1]], 2].any() and chosen[TURNED[chosen[:, 1]], 2].any()
    s, winners = score_candidates(feats0, plain1, chosen, options, turned=turned1)
    as_drawn = score_pairs(feats0, plain1, chosen[:, :2])[0].numpy()
    asked = chosen[:, 2] > 0
    turned_s = score_pairs(feats0, turned1, chosen[asked, :2])[0].numpy()
    assert np.array_equal(chosen[asked, 2], turns[chosen[asked, 1]])
    assert np.array_equal(s[~asked], as_drawn[~asked]) and not winners[~asked].any()
    assert np.array_equal(s[asked], np.maximum(as_drawn[asked], turned_s))
    assert np.array_equal(winners[asked] > 0, turned_s > as_drawn[asked])


def test_turns_are_named_keyed_and_inverted():
    assert CollationOptions(transpositions="turns").transposition_names == ("identity", "mirror", *TURNS)
    assert {INVERSES[INVERSES[name]] == name for name in TURNS} == {True}
    image = drawing(0, (64, 48))
    turned = transpose_image(image, "rot30")
    assert turned.size == image.size and not np.array_equal(np.asarray(turned), np.asarray(image))
    # Only mirror describes a manuscript transposed; all and turns describe what a pair chose, under its key,
    # which names the angles too.
    assert transposed_features_key("k", "mirror") == "k.mirror" and turned_features_key("p").startswith("p.turned-")
    keys = {pair_key(CollationOptions(transpositions=v), "a", "b") for v in ("none", "mirror", "all", "turns")}
    assert len(keys) == 4


def test_transposed_images_know_their_sizes_and_paper_without_turning_twice(monkeypatch):
    images = [drawing(0, (64, 48)), drawing(1, (48, 96)).convert("L")]
    names = TRANSPOSITION_NAMES  # mirrors, quarter turns and small turns
    view = TransposedImages(images, names)
    made = [transpose_image(images[k % 2], names[k // 2]) for k in range(len(view))]
    # The sizes come from the images' own, none turned (extract_features reads them before any item).
    calls = []
    monkeypatch.setattr(transpositions, "transpose_image", lambda *a: calls.append(a) or transpose_image(*a))
    assert view.sizes() == [im.size for im in made] and not calls
    subset = _Subset(view, np.array([3, 7, 8]))
    assert subset.sizes() == [made[3].size, made[7].size, made[8].size] and not calls
    monkeypatch.undo()
    # Each image's small turns share its paper colour, taken once: the items are the images transpose_image makes.
    assert all(np.array_equal(np.asarray(view[k]), np.asarray(im)) for k, im in enumerate(made))
    assert view.papers == {0: paper_colour(images[0]), 1: paper_colour(images[1])}

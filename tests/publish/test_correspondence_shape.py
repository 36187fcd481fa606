"""One correspondence shape (``collation.core.correspondence``) and the external formats written from
it, unchanged: the command line's ``correspondences.json`` rows, the published annotations, and the
API's correspondences document, with region positions (rows and columns of the scores) and stable
region indices named apart."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import finished_collation, prepared_manuscript, stored_region, v3_canvas, v3_image_body, v3_manifest
from PIL import Image

from collation.core.correspondence import Correspondence, Side
from collation.core.options import CollationOptions
from collation.engine.correspondences import PairResult
from collation.engine.illustrations import Illustration
from collation.engine.outputs import best_matches, correspondences
from collation.engine.pipeline import CollationResult, Manuscript
from collation.iiif.manifests import parse_manifest
from collation.iiif.regions import Region
from collation.publish.canonical import build_link_collection
from collation.publish.parts import UrlScheme
from collation.publish.viewer_layer import build_annotation_pages
from collation.service import collations
from collation.service.annotations import correspondence_list
from collation.store.folder import FolderStore
from collation.store.stored import Assessment


def same_json(got: Any, expected: Any) -> None:
    """Equal as written: the same keys in the same order, the same values."""
    assert json.dumps(got) == json.dumps(expected)


def test_the_shape() -> None:
    c = Correspondence(Side(0, 2, region=7), Side(1, 0))
    assert (c.source.position, c.source.region, c.target.region) == (2, 7, None)
    assert math.isnan(c.S) and c.rank is None and c.status == "proposed" and c.cycles == frozenset()
    assert c.key == (0, 2, 1, 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.S = 1.0  # type: ignore[misc]
    with pytest.raises(ValueError, match="cycles"):
        Correspondence(Side(0, 0), Side(1, 0), cycles=frozenset({4}), cycle_consistent=True)
    with pytest.raises(ValueError, match="cycle consistent"):
        Correspondence(Side(0, 0), Side(1, 0), cycles=frozenset({2}))


# -- the command line -------------------------------------------------------------------------------


def test_command_line_rows() -> None:
    """``correspondences.json``: ``index`` is the illustration's position, cycles by length."""
    image = Image.new("RGB", (2, 2))
    manuscripts = [
        Manuscript(name, [Illustration(f"{name}{k}.png", str(k), image) for k in range(n)])
        for name, n in (("A", 2), ("B", 3))
    ]
    p_s = np.array([[0.1, 0.2, 0.9], [0.8, 0.1, 0.1]])
    pair = PairResult(
        S=p_s / 2, N_S=p_s + 1, P_S=p_s, two_cycles=np.array([[0, 2], [1, 0]]), three_cycles=np.array([[0, 2]])
    )
    result = CollationResult(manuscripts, CollationOptions.parse({"transpositions": "mirror"}), pairs={(0, 1): pair})
    result.transposed = {(0, 1): np.array([[0, 0, 1], [0, 1, 1]], dtype=np.int8)}
    matches = best_matches(result, 0, 1)
    assert [(c.source, c.target) for c in matches] == [(Side(0, 0, 0), Side(1, 2, 2)), (Side(0, 1, 1), Side(1, 0, 0))]
    assert [c.cycles for c in matches] == [frozenset({2, 3}), frozenset({2})]
    same_json(
        correspondences(result, 0, 1),
        [
            {
                "source": {"index": 0, "id": "A0.png"},
                "match": {"index": 2, "id": "B2.png"},
                "S": 0.45,
                "N_S": 1.9,
                "P_S": 0.9,
                "two_cycle": True,
                "three_cycle": True,
                "weak": True,  # S under the floor 0.5
                "transposition": "mirror",
            },
            {
                "source": {"index": 1, "id": "A1.png"},
                "match": {"index": 0, "id": "B0.png"},
                "S": 0.4,
                "N_S": 1.8,
                "P_S": 0.8,
                "two_cycle": True,
                "three_cycle": False,
                "weak": True,
                "transposition": "identity",
            },
        ],
    )
    result.transposed = {}  # plain collations: no transposition field
    assert "transposition" not in correspondences(result, 0, 1)[0]


# -- the annotations ----------------------------------------------------------------------------------

A, B = "https://a.example/ms", "https://b.example/ms"
URLS = UrlScheme(base="https://c.example/api/v1/collations/7f3c")


def publish_manuscripts() -> list[tuple[Any, list[Region]]]:
    """Two Presentation 3 manuscripts whose region indices are not their positions."""
    out = []
    for url, indices in ((A, (4, 9)), (B, (3,))):
        canvases = [
            v3_canvas(f"{url}/c{k}", (1000, 800), body=v3_image_body(f"{url}/c{k}.jpg"), label=f"f. {k}")
            for k in range(len(indices))
        ]
        manifest = parse_manifest(v3_manifest(f"{url}/manifest", canvases, url[-4:]))
        regions = [Region(index, f"{url}/c{k}", k, (10, 20, 300, 400), "") for k, index in enumerate(indices)]
        out.append((manifest, regions))
    return out


def test_annotations_from_the_shape() -> None:
    c = Correspondence(
        source=Side(0, 1, region=9),
        target=Side(1, 0, region=3),
        S=0.5,
        N_S=1.25,
        P_S=math.inf,
        rank=2,
        cycle_consistent=True,
        status="confirmed",
        verdict="partial",
        transposition="rot90",
        link_id="0-1-9-3",
    )
    _, pages = build_link_collection(publish_manuscripts(), [c], urls=URLS, created="2026-05-01", method="m")
    region = {
        "type": "FragmentSelector",
        "conformsTo": "http://www.w3.org/TR/media-frags/",
        "value": "xywh=10,20,300,400",
    }
    same_json(
        pages[0]["items"][0],
        {
            "id": f"{URLS.base}/links/0-1-9-3",
            "type": "Annotation",
            "motivation": "linking",
            "created": "2026-05-01",
            "creator": pages[0]["items"][0]["creator"],
            "body": [
                {
                    "type": "SpecificResource",
                    "source": {
                        "id": f"{B}/c0",
                        "type": "Canvas",
                        "partOf": [{"id": f"{B}/manifest", "type": "Manifest"}],
                    },
                    "selector": region,
                },
                {"type": "TextualBody", "purpose": "tagging", "value": "turned copy"},
            ],
            "target": {
                "type": "SpecificResource",
                "source": {"id": f"{A}/c1", "type": "Canvas", "partOf": [{"id": f"{A}/manifest", "type": "Manifest"}]},
                "selector": region,
            },
            "imcol:rawScore": 0.5,
            "imcol:normalizedScore": 1.25,  # P_S is not finite: left out
            "imcol:rank": 2,
            "imcol:mutualBest": True,
            "imcol:status": "confirmed",
            "imcol:verdict": "partial",
            "imcol:method": "m",
        },
    )
    display = build_annotation_pages(0, publish_manuscripts(), [c], urls=URLS)[2]["items"][0]
    html = display["body"][0]["value"]
    assert "(illustration 4)" in html  # the counterpart by its region index (from 1), not its position
    assert "<p><b>Match 2</b>" in html and "<p>each other’s best match · turned copy" in html
    assert "confirmed · judged: partial copy" in html and "score" not in html


# -- the service ---------------------------------------------------------------------------------------

CID = "00112233445566bb"


def write_indexed_collation(root: Path) -> tuple[FolderStore, dict]:
    """A finished two-manuscript collation whose stored region indices are not their positions, and
    one verdict given with an alias (``confirmed``) on the pair read from B."""
    manuscripts = []
    for m, indices in ((0, (2, 5, 7)), (1, (1, 4))):
        canvases = [
            v3_canvas(
                f"http://lib.test/{m}/canvas/{k}", (1000, 800), body=v3_image_body(f"http://lib.test/{m}/{k}.jpg")
            )
            for k in range(len(indices))
        ]
        regions = [stored_region(m, k, index) for k, index in enumerate(indices)]
        doc = prepared_manuscript(m, regions, label=f"Codex {m}")
        manuscripts.append((doc, v3_manifest(doc.manifest, canvases, f"Codex {m}")))
    store = finished_collation(root, manuscripts, {(0, 1): np.array([[0.9, 0.1], [0.2, 0.8], [0.3, 0.4]])}, cid=CID)
    store.save_assessments(CID, [Assessment(id="1", pair=(1, 0), source=1, target=7, verdict="confirmed")])
    return store, store.load_record(CID)


def test_service_correspondences_name_positions_and_regions_apart(tmp_path: Path) -> None:
    store, record = write_indexed_collation(tmp_path)
    results = store.load_results(CID, 0, 1)
    shown = correspondence_list(store, record, top=1)
    regions = {0: (2, 5, 7), 1: (1, 4)}
    for c in shown:
        assert c.source.region == regions[c.source.manuscript][c.source.position]
        assert c.target.region == regions[c.target.manuscript][c.target.position]
        assert c.link_id == f"{c.source.manuscript}-{c.target.manuscript}-{c.source.region}-{c.target.region}"
    # region 7 of A (position 2) and region 1 of B (position 0): shown for its verdict, with no rank
    confirmed = next(c for c in shown if c.verdict is not None)
    assert (confirmed.source, confirmed.target) == (Side(0, 2, 7), Side(1, 0, 1))
    assert (confirmed.status, confirmed.verdict, confirmed.rank) == ("confirmed", "exact", None)
    assert float(results.P_S[2, 0]) == confirmed.P_S

    # the API's document: ``index`` is the stored region index; the verdict as given and its category
    doc = collations.correspondences(store, CID, (0, 1), "raw", top=2)
    assert [item["source"]["index"] for item in doc["items"]] == [2, 5, 7]
    same_json(
        doc["items"][2]["candidates"][1],
        {
            "index": 1,
            "canvas": "http://lib.test/1/canvas/0",
            "xywh": [100, 100, 400, 300],
            "S": 0.3,
            "N_S": float(results.N_S[2, 0]),
            "P_S": float(results.P_S[2, 0]),
            "rank": 2,
            "cycle_consistent": False,
            "weak": True,  # S 0.3, under the floor 0.5
            "assessment": "confirmed",
            "category": "exact",
        },
    )

    # the annotations: link ids and targets by region index
    manuscripts = []
    for m in (0, 1):
        raw = store.load_manifest(CID, m)
        parsed = parse_manifest(raw, url=record.request.manifests[m])
        manuscripts.append((parsed, [Region.from_dict(r.to_dict()) for r in store.load_manuscript(CID, m).regions]))
    _, pages = build_link_collection(manuscripts, shown, urls=URLS)
    links = {item["id"].rsplit("/", 1)[-1]: item for item in pages[0]["items"]}
    assert set(links) == {c.link_id for c in shown}
    assert links["0-1-7-1"]["target"]["source"]["id"] == "http://lib.test/0/canvas/2"
    assert links["0-1-7-1"]["imcol:verdict"] == "exact" and "imcol:rank" not in links["0-1-7-1"]

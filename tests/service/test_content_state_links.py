"""IIIF Content State links everywhere a correspondence is shown: each candidate of the correspondences
JSON, each concordance row and its CSV and workbook line carry the content state of their regions
(encoded, and as a link to the pair view), and the pair view opens on the match a content state names."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from service_helpers import OpenAPIClient
from test_concordance_api import API, write_three_witnesses
from test_workbook import NS, sheet_xml

from collation.app import create_app
from collation.core.settings import Settings
from collation.publish.content_state import RegionTarget, build_content_state, decode, encode, read_targets
from collation.service.exports import SHARE
from collation.service.state import service_state

HOST = "http://collation.test"


@pytest.fixture
def finished_api(tmp_path: Path, openapi: dict[str, Any]) -> Any:
    store = write_three_witnesses(tmp_path / "data")
    app = create_app(Settings.from_env({}, data_dir=store.root, public_url=HOST), TESTING=True)
    yield OpenAPIClient(app.test_client(), openapi)
    service_state(app).close()


def target(m: int, region: dict[str, Any]) -> RegionTarget:
    return RegionTarget(region["canvas"], f"{HOST}{API}/manifests/{m}", tuple(region["xywh"]))


def test_every_candidate_and_row_carries_its_content_state(finished_api: Any) -> None:
    doc = finished_api.get(f"{API}/correspondences?pair=0,2&top=2").get_json()
    candidates = [(item["source"], c) for item in doc["items"] for c in item["candidates"]]
    assert len(candidates) == 10
    for source, c in candidates:
        assert read_targets(decode(c["iiif_content"])) == [target(0, source), target(2, c)]
        assert c["share"] == f"{HOST}{API}/view?iiif-content={c['iiif_content']}"

    concordance = finished_api.get(f"{API}/concordance").get_json()
    for row in concordance["rows"]:
        cells = [c for c in row["cells"] if c]
        assert read_targets(decode(row["iiif_content"])) == [target(c["manuscript"], c) for c in cells]
        assert row["share"].endswith(f"/view?iiif-content={row['iiif_content']}")

    # the CSV and the workbook: the link in the last column, after "Weak match left out"
    table = list(csv.reader(io.StringIO(finished_api.get(f"{API}/concordance.csv").get_data(as_text=True))))
    assert table[0][-2:] == ["Weak match left out", SHARE]
    assert [line[-1] for line in table[1:]] == [row["share"] for row in concordance["rows"]]
    sheet, rels = sheet_xml(finished_api.get(f"{API}/concordance.xlsx").get_data(), 1)
    links = [link.get("ref") for link in sheet.iterfind(".//m:hyperlinks/m:hyperlink", NS)]
    column = "AB"  # A-C, 3 witnesses x 7 (picture, 5 fields, verdict: D-X), Y reviewers, Z notes, AA weak, AB the link
    assert [ref for ref in links if ref.startswith(column)] == [f"{column}{r}" for r in range(2, len(table) + 1)]
    assert all(row["share"].replace("&", "&amp;") in rels for row in concordance["rows"])


def config_of(html: str) -> dict[str, Any]:
    return json.loads(re.search(r'<script id="config" type="application/json">(.*?)</script>', html, re.S)[1])


def test_the_pair_view_opens_on_the_match_a_content_state_names(finished_api: Any) -> None:
    doc = finished_api.get(f"{API}/correspondences?pair=0,2&top=1").get_json()
    source, best = doc["items"][3]["source"], doc["items"][3]["candidates"][0]
    page = finished_api.get(f"{API}/view?iiif-content={best['iiif_content']}")
    assert page.status_code == 200
    config = config_of(page.get_data(as_text=True))
    assert (config["pair"], config["focus"]) == ([0, 2], [source["index"], best["index"]])

    # the library's manifest, or no manifest at all, names the manuscript too; a region slightly off is found
    library = build_content_state(
        [
            (source["canvas"], [v + 3 for v in source["xywh"]], "http://lib.test/0/manifest"),
            (best["canvas"], best["xywh"], f"{HOST}{API}/manifests/2"),
        ]
    )
    config = config_of(finished_api.get(f"{API}/view?iiif-content={encode(library)}").get_data(as_text=True))
    assert (config["pair"], config["focus"]) == ([0, 2], [source["index"], best["index"]])

    one = build_content_state([(source["canvas"], source["xywh"], f"{HOST}{API}/manifests/0")])
    elsewhere = build_content_state(
        [(source["canvas"], source["xywh"], "http://other.test/m"), (best["canvas"], best["xywh"], "http://o.test/m")]
    )
    same = build_content_state([(source["canvas"], source["xywh"], None), (source["canvas"], source["xywh"], None)])
    for bad, words in (
        (encode(one), "names one canvas"),
        (encode(elsewhere), "no region of this collation"),
        (encode(same), "one manuscript"),
        ("not*base64", "content-state-encoded"),
        (encode("{"), "not JSON"),
    ):
        response = finished_api.get(f"{API}/view?iiif-content={bad}")
        problem = response.get_json()
        assert response.status_code == 400 and problem["field"] == "iiif-content", problem
        assert words in problem["detail"], problem

"""Weak matches in the service (docs/concordance.md, "Weak matches"): a finished three-witness collation
written straight into a data store (no Redis, no workers), whose raw scores hold a weak cycle and whose
third witness is blank pages. Every response is checked against ``openapi.yaml``."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest
from builders import lib_manifest, weak_collation
from PIL import Image
from service_helpers import OpenAPIClient
from synthetic import PAPER, drawing

from collation.app import create_app
from collation.core.options import CollationOptions
from collation.core.settings import Settings
from collation.iiif.manifests import parse_manifest
from collation.iiif.regions import Region
from collation.iiif.sources import ManuscriptRegions
from collation.service.state import service_state
from collation.store.folder import FolderStore
from collation.store.stored import PreparedManuscript

CID = "00112233445566bb"
API = f"/api/v1/collations/{CID}"


@pytest.fixture
def finished_api(tmp_path: Path, openapi: dict[str, Any]) -> Any:
    store = weak_collation(tmp_path / "data", CollationOptions(), CID)
    app = create_app(Settings.from_env({}, data_dir=store.root, public_url="http://collation.test"), TESTING=True)
    yield OpenAPIClient(app.test_client(), openapi)
    service_state(app).close()


def members(doc: dict[str, Any]) -> list[list[tuple[int, int] | None]]:
    return [[(c["manuscript"], c["index"]) if c else None for c in row["cells"]] for row in doc["rows"]]


def test_weak_links_and_blank_pages_join_no_group(finished_api: Any) -> None:
    doc = finished_api.get(f"{API}/concordance").get_json()
    assert doc["weak_below"] == 0.5
    assert members(doc) == [
        [(0, 0), (1, 2), None],
        [(0, 1), None, None],
        [(0, 2), (1, 0), None],
        [None, (1, 1), None],
        [None, None, (2, 0)],
        [None, None, (2, 1)],
        [None, None, (2, 2)],
    ]
    assert [row["weak"] for row in doc["rows"]] == [False, True, False, True, True, True, True]
    assert (doc["matched"], doc["unmatched"], doc["weak"]) == (2, 5, 5)
    table = list(csv.reader(io.StringIO(finished_api.get(f"{API}/concordance.csv").get_data(as_text=True), newline="")))
    w = table[0].index("Weak match left out")  # after the witnesses' columns (then the rows' Content State links)
    assert w == len(table[0]) - 2 and [row[w] for row in table[1:]] == ["", "weak", ""] + ["weak"] * 4


def test_correspondences_say_which_candidates_are_weak(finished_api: Any) -> None:
    doc = finished_api.get(f"{API}/correspondences?pair=0,1&score=raw&top=1").get_json()
    assert doc["weak_below"] == 0.5 and doc["weak_rule"] == "learned"
    assert not any("blank" in c for item in doc["items"] for c in item["candidates"])
    assert [(c["index"], c["S"], c["weak"]) for item in doc["items"] for c in item["candidates"]] == [
        (2, 1.2, False),
        (1, 0.3, True),
        (0, 1.2, False),
    ]
    blank = finished_api.get(f"{API}/correspondences?pair=2,0&score=raw&top=1").get_json()  # S 1.9, a blank region
    assert [(c["S"], c["weak"], c["blank"]) for item in blank["items"] for c in item["candidates"]] == [
        (1.9, True, True)
    ] * 3


def test_an_expert_may_lower_the_floor(tmp_path: Path, openapi: dict[str, Any]) -> None:
    """``weak_below`` 0.2: the 0.3 cycle is no longer weak and joins A and B (blank pages stay weak);
    the status document shows the floor applied."""
    store = weak_collation(tmp_path / "data", CollationOptions(weak_below=0.2), CID)
    app = create_app(Settings.from_env({}, data_dir=store.root), TESTING=True)
    client = OpenAPIClient(app.test_client(), openapi)
    doc = client.get(f"{API}/concordance").get_json()
    assert doc["weak_below"] == 0.2 and [(0, 1), (1, 1), None] in members(doc)
    assert client.get(f"{API}/correspondences?pair=0,1").get_json()["weak_rule"] == "fixed"
    assert client.get(API).get_json()["options"]["weak_below"] == 0.2
    service_state(app).close()


def test_the_status_document_shows_the_calibrated_floor(finished_api: Any) -> None:
    assert finished_api.get(API).get_json()["options"]["weak_below"] == 0.5


def test_prepared_regions_with_nothing_drawn_are_marked_blank(tmp_path: Path) -> None:
    from collation.jobs.manuscripts import _document

    parsed = parse_manifest(lib_manifest(0, 2))
    regions = [Region(k, f"http://lib.test/0/canvas/{k}", k, (0, 0, 320, 256), "") for k in range(2)]
    found = ManuscriptRegions(parsed, regions, [drawing(0), Image.new("RGB", (320, 256), PAPER)], [])
    empty = PreparedManuscript(0, "http://lib.test/0/manifest")
    doc = _document(empty, found, FolderStore(tmp_path), CollationOptions())
    assert doc.blank == [False, True] and ["blank" in r for r in doc.to_dict()["regions"]] == [False, True]

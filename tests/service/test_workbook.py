"""The concordance workbook a historian can work in (issue 29, item 11): the region images as links,
widths that fit, a filter and a frozen header, and an "About" sheet with the manifests, options and date."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
import zipfile
from datetime import UTC, datetime
from typing import Any

from test_hostile_exports import workbook_rows

from collation.service.exports import concordance_workbook, download_name

NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}
R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
IMAGE = "https://images.example.org/iiif/p1/10,20,30,40/full/0/default.jpg"


def document() -> dict[str, Any]:
    cell = {
        "manuscript": 0,
        "index": 0,
        "label": "f. 1r",
        "canvas": "https://x/c1",
        "xywh": [10, 20, 30, 40],
        "confidence": 0.9,
    }
    return {
        "id": "0123456789abcdef",
        "score": "propagated",
        "min_score": None,
        "weak_below": 0.5,
        "sort": 0,
        "witnesses": [
            {"index": 0, "label": "P2", "manifest": "https://x/p2.json"},
            {"index": 1, "label": "P3", "manifest": "https://x/p3.json"},
        ],
        "rows": [
            {
                "id": "0-0",
                "size": 2,
                "confidence": 0.9,
                "cells": [{**cell, "image": IMAGE, "verdict": None}, {**cell, "image": "javascript:alert(1)"}],
            }
        ],
    }


def sheet_xml(data: bytes, number: int) -> tuple[ET.Element, str]:
    with zipfile.ZipFile(io.BytesIO(data)) as book:
        sheet = ET.fromstring(book.read(f"xl/worksheets/sheet{number}.xml"))
        rels = f"xl/worksheets/_rels/sheet{number}.xml.rels"
        return sheet, book.read(rels).decode() if rels in book.namelist() else ""


def test_the_workbook_links_images_filters_freezes_and_sizes_its_columns() -> None:
    data = concordance_workbook(document(), exported=datetime(2026, 11, 26, 18, 30, tzinfo=UTC))
    sheet, rels = sheet_xml(data, 1)
    # A group, B size, C confidence, then 7 columns per witness (D picture, E No., F folio, G region, H image...)
    assert [link.get("ref") for link in sheet.iterfind(".//m:hyperlinks/m:hyperlink", NS)] == ["H2"]
    assert IMAGE in rels and "javascript" not in rels  # only http(s) addresses become links
    assert workbook_rows(data)[1]["H"] == (IMAGE, "s")
    assert workbook_rows(data)[1]["O"] == ("javascript:alert(1)", "s")  # the other image: text, no link
    assert sheet.find(".//m:autoFilter", NS).get("ref") == "A1:T2"
    pane = sheet.find(".//m:pane", NS)
    assert (pane.get("ySplit"), pane.get("state")) == ("1", "frozen")
    widths = {int(c.get("min")): float(c.get("width")) for c in sheet.iterfind(".//m:cols/m:col", NS)}
    assert widths[8] > 40 and widths[9] > 28 and widths[1] >= 8  # image, canvas, group


def test_the_about_sheet_names_the_manifests_options_and_date() -> None:
    data = concordance_workbook(document(), exported=datetime(2026, 11, 26, 18, 30, tzinfo=UTC))
    with zipfile.ZipFile(io.BytesIO(data)) as book:
        names = [s.get("name") for s in ET.fromstring(book.read("xl/workbook.xml")).iter(f"{{{NS['m']}}}sheet")]
        strings = [t.text for t in ET.fromstring(book.read("xl/sharedStrings.xml")).iter(f"{{{NS['m']}}}t")]
    assert names == ["Concordance", "About"]
    for expected in ("2026-11-26 18:30", "0123456789abcdef", "propagated", "0.5", "https://x/p2.json", "P3"):
        assert expected in strings
    _sheet, rels = sheet_xml(data, 2)
    assert "https://x/p2.json" in rels and "https://x/p3.json" in rels  # the manifests are links


def test_the_workbook_speaks_words_names_the_collation_and_shows_the_regions() -> None:
    """Issue 39, item 9: headers in words per witness label, reviewer and note columns, the collation's
    name in the About sheet and the file name, and a thumbnail per illustration (the stored region)."""
    from PIL import Image

    doc = {**document(), "name": "Physiologus, two witnesses"}
    doc["rows"][0]["reviews"] = [{"creator": "Marie", "note": "same hand"}, {"creator": "Marie", "note": None}]
    pictures = []

    def thumbnail(m: int, index: int) -> bytes:
        pictures.append((m, index))
        out = io.BytesIO()
        Image.new("RGB", (90, 60), (200, 40, 40)).save(out, format="PNG")
        return out.getvalue()

    data = concordance_workbook(doc, exported=datetime(2026, 11, 28, 6, 0, tzinfo=UTC), thumbnail=thumbnail)
    header = [value for value, _ in workbook_rows(data)[0].values()]
    assert header == [
        "Group", "Witnesses", "Confidence (0 to 1)",
        "P2 — picture", "P2 — No.", "P2 — folio", "P2 — region", "P2 — image", "P2 — canvas", "P2 — verdict",
        "P3 — picture", "P3 — No.", "P3 — folio", "P3 — region", "P3 — image", "P3 — canvas", "P3 — verdict",
        "Reviewers", "Notes", "Weak match left out",
    ]  # fmt: skip
    line = workbook_rows(data)[1]
    assert (line["E"], line["F"], line["G"], line["R"], line["S"]) == (
        (1.0, "n"), ("f. 1r", "s"), ("10,20,30,40", "s"), ("Marie", "s"), ("same hand", "s")
    )  # fmt: skip
    assert pictures == [(0, 0), (0, 0)]  # one per illustration of the row
    with zipfile.ZipFile(io.BytesIO(data)) as book:
        media = [name for name in book.namelist() if name.startswith("xl/media/")]
        strings = [t.text for t in ET.fromstring(book.read("xl/sharedStrings.xml")).iter(f"{{{NS['m']}}}t")]
    assert len(media) >= 1 and "Physiologus, two witnesses" in strings
    assert download_name("Physiologus · P2, P3", "xlsx") == (
        'attachment; filename="Concordance of Physiologus P2, P3.xlsx"; '
        "filename*=UTF-8''Concordance%20of%20Physiologus%20%C2%B7%20P2%2C%20P3.xlsx"
    )

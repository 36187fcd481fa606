"""The concordance workbook a historian can work in (issue 29, item 11): the region images as links,
widths that fit, a filter and a frozen header, and an "About" sheet with the manifests, options and date."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
import zipfile
from datetime import UTC, datetime
from typing import Any

from test_hostile_exports import workbook_rows

from collation.service.concordance_rows import concordance_workbook

NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}
R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
IMAGE = "https://images.example.org/iiif/p1/10,20,30,40/full/0/default.jpg"


def document() -> dict[str, Any]:
    cell = {"index": 0, "label": "f. 1r", "canvas": "https://x/c1", "xywh": [10, 20, 30, 40], "confidence": 0.9}
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
    # A group, B size, C confidence, then 7 columns per witness (D index, E label, F canvas, G xywh, H image...)
    assert [link.get("ref") for link in sheet.iterfind(".//m:hyperlinks/m:hyperlink", NS)] == ["H2"]
    assert IMAGE in rels and "javascript" not in rels  # only http(s) addresses become links
    assert workbook_rows(data)[1]["H"] == (IMAGE, "s")
    assert workbook_rows(data)[1]["O"] == ("javascript:alert(1)", "s")  # the other image: text, no link
    assert sheet.find(".//m:autoFilter", NS).get("ref") == "A1:R2"
    pane = sheet.find(".//m:pane", NS)
    assert (pane.get("ySplit"), pane.get("state")) == ("1", "frozen")
    widths = {int(c.get("min")): float(c.get("width")) for c in sheet.iterfind(".//m:cols/m:col", NS)}
    assert widths[8] > 40 and widths[6] > 30 and widths[1] >= 10  # image, canvas, group


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

"""The concordance's downloads (``GET /collations/{id}/concordance.csv`` and ``.xlsx``) in a historian's words.

One row per group of the concordance document (``collation.service.concordance_rows.concordance``), headed in
words: "Group", "Witnesses", "Confidence (0 to 1)", then for each witness "P2 — No." (counted from 1, as on
the pages), "P2 — folio" (the canvas label), "P2 — region" (x,y,w,h on the canvas), "P2 — image" (an Image
API request of the region), "P2 — canvas" (its address) and "P2 — verdict" (in words), then "Reviewers" and
"Notes" (of the experts' verdicts among the row's illustrations) and "Weak match left out". The workbook
adds a "P2 — picture" column with the region's thumbnail, cut from the image the service stored, and an
"About" sheet with the collation's name; both files are named after it (``download_name``).
"""

from __future__ import annotations

import io
import math
import re
import unicodedata
from collections.abc import Callable
from datetime import UTC, datetime
from itertools import combinations
from typing import Any
from urllib.parse import quote

from collation.core.tables import csv_text
from collation.core.vocabulary import CATEGORY_LABELS, VERDICT_ALIASES
from collation.service.collations import collation_name
from collation.service.concordance_rows import concordance
from collation.service.images import stored_region_image
from collation.store.datastore import CollationNotFound, DataStore
from collation.store.stored import PreparedManuscript

FIELDS = (("No.", "index"), ("folio", "label"), ("region", "xywh"), ("image", "image"), ("canvas", "canvas"))
"""Each witness's columns: (the header's word, the cell's field); the verdict comes last."""
PICTURE = 90
"""The thumbnails' longest side in the workbook (pixels); the rows are as tall."""
MAX_URL = 2079
"""Excel's longest hyperlink: a longer image address is written as plain text."""
SHARE = "View link (IIIF Content State)"
"""The last column's header: the row's ``share`` link, which opens its regions side by side in the viewer."""
Thumbnail = Callable[[int, int], bytes | None]
"""(manuscript, region index) -> a PNG of the region, or None."""


def export_document(store: DataStore, cid: str, base: str, **query: Any) -> dict[str, Any]:
    """The concordance document with what the files add: the collation's ``name`` and, per row, the
    ``reviews`` (creator and note) of the latest verdicts among its illustrations."""
    doc = concordance(store, cid, base, **query)
    doc["name"] = collation_name(store, store.load_record(cid))
    latest: dict[tuple[int, int, int, int], dict[str, Any]] = {}
    for item in store.load_assessments(cid):  # the latest verdict on each pair of illustrations, both ways
        (a, b), i, j = item.pair, item.source, item.target
        latest[(a, i, b, j)] = latest[(b, j, a, i)] = {"creator": item.creator, "note": item.note}
    for row in doc["rows"]:
        members = [(c["manuscript"], c["index"]) for c in row["cells"] if c]
        items = [latest.get((a, i, b, j)) for (a, i), (b, j) in combinations(members, 2)]
        row["reviews"] = [{"creator": it.get("creator"), "note": it.get("note")} for it in items if it]
    return doc


def witness_headers(doc: dict[str, Any]) -> list[str]:
    """Each witness by its label (its number after it where two share one)."""
    labels = [str(w.get("label") or f"Witness {w['index'] + 1}") for w in doc["witnesses"]]
    return [f"{label} ({k + 1})" if labels.count(label) > 1 else label for k, label in enumerate(labels)]


def export_table(doc: dict[str, Any], pictures: bool = False) -> list[list[Any]]:
    """The header and one line per row (numbers as numbers, the rest as text); with ``pictures``, an empty
    "— picture" column before each witness's fields, for the workbook's thumbnails."""
    names = witness_headers(doc)
    words = [*(["picture"] if pictures else []), *[word for word, _ in FIELDS], "verdict"]
    header = ["Group", "Witnesses", "Confidence (0 to 1)", *[f"{n} — {w}" for n in names for w in words]]
    share = any(row.get("share") for row in doc["rows"])  # the service's rows carry a Content State link
    table: list[list[Any]] = [[*header, "Reviewers", "Notes", "Weak match left out", *([SHARE] if share else [])]]
    for number, row in enumerate(doc["rows"], start=1):
        line: list[Any] = [number, row["size"], _rounded(row.get("confidence"))]
        for cell in row["cells"]:
            line += [""] if pictures else []
            line += [_field(cell, field) for _, field in FIELDS] + [_verdict(cell)]
        reviews = row.get("reviews") or []
        reviewers = sorted({str(r["creator"]) for r in reviews if r.get("creator")})
        notes = [str(r["note"]) for r in reviews if r.get("note")]
        weak = "weak" if row.get("weak") else ""
        table.append(
            [*line, "; ".join(reviewers), " | ".join(notes), weak, *([row.get("share") or ""] if share else [])]
        )
    return table


def _field(cell: dict[str, Any] | None, field: str) -> Any:
    if not cell or cell.get(field) is None:
        return ""
    value = cell[field]
    if field == "index":
        return int(value) + 1  # counted from 1, as on the pages
    return ",".join(str(v) for v in value) if isinstance(value, list | tuple) else str(value)


def _verdict(cell: dict[str, Any] | None) -> str:
    verdict = (cell or {}).get("verdict")
    return CATEGORY_LABELS.get(VERDICT_ALIASES.get(verdict, verdict), str(verdict)) if verdict else ""


def _rounded(value: Any) -> Any:
    return round(float(value), 2) if isinstance(value, int | float) and math.isfinite(value) else ""


def concordance_text(doc: dict[str, Any]) -> str:
    """The CSV: the header, then the table (the collation's name is its file name: a title line would
    make the header no longer the first line that tools read)."""
    return csv_text(export_table(doc))


def concordance_workbook(
    doc: dict[str, Any], exported: datetime | None = None, thumbnail: Thumbnail | None = None
) -> bytes:
    """The table as an Excel workbook (``.xlsx``, through XlsxWriter) a historian can work in: a frozen
    header with a filter on every column, widths that fit, each region's thumbnail (``thumbnail``) and its
    image as a link; and a second sheet, "About", naming the collation, manifests, options and the date it
    was ``exported``. Numbers are numbers; every other cell is text, never a formula; only http(s)
    addresses become links."""
    import xlsxwriter

    out = io.BytesIO()
    book = xlsxwriter.Workbook(out, {"in_memory": True, "strings_to_numbers": False, "strings_to_urls": False})
    sheet = book.add_worksheet("Concordance")
    bold = book.add_format({"bold": True, "bottom": 1, "text_wrap": True, "valign": "top"})
    link = book.get_default_url_format()
    table = export_table(doc, pictures=True)
    per = len(FIELDS) + 2  # picture, the fields, verdict
    links = {c for c in range(len(table[0])) if _is_image_column(c, per, len(doc["witnesses"])) or table[0][c] == SHARE}
    for r, line in enumerate(table):
        for c, value in enumerate(line):
            if r == 0:
                sheet.write_string(r, c, str(value), bold)
            elif value == "":
                continue  # an empty cell (no illustration of that witness in the group)
            elif isinstance(value, int | float):
                sheet.write_number(r, c, value)
            elif c in links and _web_link(value):
                sheet.write_url(r, c, str(value), link, str(value))
            else:
                sheet.write_string(r, c, str(value))
    for r, row in enumerate(doc["rows"], start=1):
        sheet.set_row(r, PICTURE * 0.75)  # points
        for w, cell in enumerate(row["cells"]):
            png = thumbnail(cell["manuscript"], cell["index"]) if cell and thumbnail else None
            if png:
                sheet.insert_image(r, 3 + w * per, "region.png", {"image_data": io.BytesIO(png), "object_position": 1})
    widths = [8, 10, 12, *([14, 7, 14, 16, 44, 30, 16] * len(doc["witnesses"])), 18, 30, 10, 48]
    for c, width in enumerate(widths):
        sheet.set_column(c, c, width)
    sheet.set_row(0, 32)
    sheet.freeze_panes(1, 0)
    sheet.autofilter(0, 0, len(table) - 1, len(table[0]) - 1)
    _about_sheet(book, doc, exported or datetime.now(UTC), bold, link)
    book.close()
    return out.getvalue()


def _is_image_column(c: int, per: int, witnesses: int) -> bool:
    return 3 <= c < 3 + per * witnesses and (c - 3) % per == 1 + [f for _, f in FIELDS].index("image")


def _about_sheet(book: Any, doc: dict[str, Any], exported: datetime, bold: Any, link: Any) -> None:
    """Which collation, manifests and options produced the concordance, and when it was exported."""
    sheet = book.add_worksheet("About")
    lines = [
        ("Collation", str(doc.get("name") or "")),
        ("Identifier", doc.get("id") or ""),
        ("Exported (UTC)", exported.strftime("%Y-%m-%d %H:%M")),
        ("Links ranked by the score", doc.get("score") or ""),
        ("Minimum score", "" if doc.get("min_score") is None else str(doc["min_score"])),
        ("Weak below (raw score, 0 to 2)", "" if doc.get("weak_below") is None else str(doc["weak_below"])),
        ("Rows in the order of witness", "" if doc.get("sort") is None else str(doc["sort"] + 1)),
    ]
    for r, (name, value) in enumerate(lines):
        sheet.write_string(r, 0, name, bold)
        sheet.write_string(r, 1, value)
    top = len(lines) + 1
    for c, name in enumerate(("Witness", "Label", "Manifest")):
        sheet.write_string(top, c, name, bold)
    for r, witness in enumerate(doc["witnesses"], start=top + 1):
        sheet.write_number(r, 0, witness["index"] + 1)
        sheet.write_string(r, 1, str(witness.get("label") or ""))
        manifest = str(witness.get("manifest") or "")
        if _web_link(manifest):
            sheet.write_url(r, 2, manifest, link, manifest)
        else:
            sheet.write_string(r, 2, manifest)
    sheet.set_column(0, 0, 28)
    sheet.set_column(1, 1, 30)
    sheet.set_column(2, 2, 70)


def _web_link(value: Any) -> bool:
    """Only http(s) addresses become links (never file:, javascript: or anything Excel would open)."""
    text = str(value)
    return text.startswith(("http://", "https://")) and len(text) <= MAX_URL and not any(c.isspace() for c in text)


def stored_thumbnail(store: DataStore, cid: str) -> Thumbnail:
    """Thumbnails of the regions the service stored for the collation (no request to any library)."""
    manuscripts: dict[int, PreparedManuscript | None] = {}  # each document read once, not once per region

    def thumbnail(m: int, index: int) -> bytes | None:
        if m not in manuscripts:
            manuscripts[m] = store.load_manuscript(cid, m) if store.exists(cid) else None
        try:
            image = stored_region_image(store, manuscripts[m], m, index).convert("RGB")
        except (CollationNotFound, OSError):
            return None
        image.thumbnail((PICTURE, PICTURE))
        out = io.BytesIO()
        image.save(out, format="PNG")
        return out.getvalue()

    return thumbnail


def download_name(name: str, extension: str) -> str:
    """A ``Content-Disposition`` value naming the file after the collation: an ASCII ``filename`` (accents
    dropped, other characters as dashes) and the name itself in ``filename*`` (RFC 6266)."""
    full = f"Concordance of {name}.{extension}"
    plain = unicodedata.normalize("NFKD", full).encode("ascii", "ignore").decode()
    plain = re.sub(r"[^A-Za-z0-9 .,()_-]+", "-", plain)
    plain = re.sub(r"\s+", " ", plain).strip(" -.")[:150] or f"concordance.{extension}"
    if not plain.endswith(f".{extension}"):
        plain = f"{plain}.{extension}"
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(full, safe='')}"

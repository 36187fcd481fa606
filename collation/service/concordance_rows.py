"""``GET /collations/{id}/concordance`` (JSON) and ``.csv``: one row per group of corresponding
illustrations across all witnesses, one column per witness.

The groups come from ``collation.engine.concordance.build_groups`` over the stored results of every pair of
readable manuscripts (cycle-consistent pairs and the experts' verdicts); this module adds what a
reader needs to find each illustration: its canvas (id and label), its box, an Image API URL of the
region and of a thumbnail, and the viewer's Mirador compare view opened on it.
"""

from __future__ import annotations

import io
import math
from datetime import UTC, datetime
from itertools import combinations
from typing import Any

import numpy as np

from collation.core.vocabulary import CATEGORY_LABELS
from collation.engine.concordance import (
    CELL_FIELDS,
    SHARE_COLUMN,
    Group,
    PairEvidence,
    build_groups,
    concordance_csv,
    concordance_table,
    sort_groups,
    with_share_column,
)
from collation.iiif.manifests import Manifest, parse_manifest
from collation.service.images import FULL_WIDTH, region_image_url, stored_region_url
from collation.service.results import assessment_categories, check_id, finished_record, pair_results
from collation.service.urls import collation_url, manifest_url, share_links
from collation.store.datastore import DataStore
from collation.store.records import CollationRecord


def _witnesses(store: DataStore, record: CollationRecord, base: str) -> list[dict[str, Any]]:
    cid, usable = record.id, set(record.usable)
    out = []
    for m, url in enumerate(record.request.manifests):
        doc = store.load_manuscript(cid, m) if m in usable else None
        out.append(
            {
                "index": m,
                "label": (doc.label if doc else None) or f"Manuscript {m}",
                "manifest": url,
                "derived_manifest": manifest_url(base, cid, m) if doc else None,
                "usable": doc is not None,
                "regions": len(doc.regions) if doc else 0,
            }
        )
    return out


def _evidence(store: DataStore, record: CollationRecord, score: str) -> tuple[dict, dict, dict]:
    """(sizes, evidence, regions) of the readable manuscripts: evidence by matrix position."""
    cid, usable = record.id, sorted(record.usable)
    sizes, evidence, regions = {}, {}, {}
    for a, b in combinations(usable, 2):
        res = pair_results(store, record, a, b)
        regions[a], regions[b] = res.regions0, res.regions1
        sizes[a], sizes[b] = len(res.regions0), len(res.regions1)
        rows, cols = res.doc0.positions(), res.doc1.positions()
        verdicts = {
            (rows[i], cols[j]): v
            for (i, j), v in assessment_categories(store, cid, a, b).items()
            if i in rows and j in cols
        }
        cycles = np.array(sorted(res.cycles), dtype=np.int64).reshape(-1, 2)
        evidence[(a, b)] = PairEvidence(res.scores(score), cycles, verdicts, res.weak)
    return sizes, evidence, regions


def _manifests(store: DataStore, record: CollationRecord) -> dict[int, Manifest | None]:
    out = {}
    for m in record.usable:
        raw = store.load_manifest(record.id, m)
        out[m] = parse_manifest(raw, url=record.request.manifests[m]) if raw else None
    return out


def concordance(
    store: DataStore,
    cid: str,
    base: str,
    *,
    score: str = "propagated",
    min_score: float | None = None,
    sort: int | None = None,
) -> dict[str, Any]:
    """The concordance document (openapi.yaml ``Concordance``).

    Args:
        score: the score that ranks automatic links and gives confidences (``raw``, ``normalized``,
            ``propagated``).
        min_score: automatic links below it are dropped (their illustrations become rows of their own).
        sort: rows in the order of this witness's illustrations (default: the first readable one).

    Raises:
        CollationNotFound (404), Conflict (409: unfinished), InputError (400: ``sort`` names no
        readable witness).
    """
    from collation.core.errors import InputError

    record = finished_record(store, check_id(cid))
    witnesses = _witnesses(store, record, base)
    usable = [w["index"] for w in witnesses if w["usable"]]
    if sort is None:
        sort = usable[0] if usable else 0
    elif sort not in usable:
        raise InputError(f"witness {sort} is not a readable manuscript of this collation ({usable})", field="sort")
    sizes, evidence, regions = _evidence(store, record, score)
    groups = sort_groups(build_groups(sizes, evidence, min_score), sort, usable)
    manifests = _manifests(store, record)
    rows = [_row(group, witnesses, regions, manifests, evidence, cid, base) for group in groups]
    return {
        "id": cid,
        "score": score,
        "min_score": min_score,
        "weak_below": record.options.floor,
        "sort": sort,
        "witnesses": witnesses,
        "categories": CATEGORY_LABELS,
        "total": len(rows),
        "matched": sum(1 for r in rows if r["size"] >= 2),
        "unmatched": sum(1 for r in rows if r["size"] < 2),
        "weak": sum(1 for r in rows if r["weak"]),
        "rows": rows,
    }


def _row(
    group: Group, witnesses: list[dict], regions: dict, manifests: dict, evidence: dict, cid: str, base: str
) -> dict[str, Any]:
    cells: list[dict[str, Any] | None] = []
    for w in witnesses:
        member = group.member(w["index"])
        if member is None:
            cells.append(None)
            continue
        region = regions[member.manuscript][member.position]
        manifest = manifests.get(member.manuscript)
        canvas = manifest.canvas(region.canvas_id) if manifest else None
        xywh = list(region.xywh)
        stored = stored_region_url(base, cid, member.manuscript, region.index) if region.digest else None
        cells.append(
            {
                "manuscript": member.manuscript,
                "index": region.index,
                "canvas": region.canvas_id,
                "label": canvas.label if canvas and canvas.label else region.label,
                "xywh": xywh,
                # the library's Image service cuts the region; without one, the service's own copy
                "image": (region_image_url(canvas, xywh, FULL_WIDTH) if canvas else None) or stored,
                "thumbnail": (region_image_url(canvas, xywh) if canvas else None) or stored,
                "confidence": member.confidence,
                "verdict": member.verdict,
                "view": _view_url(group, member, regions, evidence, cid, base),
            }
        )
    first = group.members[0]
    return {
        "id": f"{first.manuscript}-{regions[first.manuscript][first.position].index}",
        "size": len(group.members),
        **_share(cells, base, cid),
        "confidence": group.confidence,
        "weak": group.weak,
        "cells": cells,
    }


def _share(cells: list[dict[str, Any] | None], base: str, cid: str) -> dict[str, str]:
    """The row's IIIF Content State link (``urls.share_links``): every witness's region, in witness order."""
    return share_links(base, cid, [(c["manuscript"], c["canvas"], c["xywh"]) for c in cells if c])


def _view_url(group: Group, member: Any, regions: dict, evidence: dict, cid: str, base: str) -> str | None:
    """The viewer's compare view (Mirador) on this illustration and its strongest partner in the group;
    for an illustration alone, its best candidate in the first other witness."""
    m, i = member.manuscript, member.position
    partners = []
    for other in group.members:
        if other is not member:
            (p, x), (q, y) = sorted(((m, i), (other.manuscript, other.position)))
            partners.append((float(evidence[(p, q)].scores[x, y]), other.manuscript, other.position))
    if not partners:
        for (p, q), ev in evidence.items():
            if m in (p, q):
                row = ev.scores[i] if p == m else ev.scores[:, i]
                if row.size:
                    partners.append((0.0, q if p == m else p, int(np.argmax(row))))
                    break
    if not partners:
        return None
    _score, n, j = max(partners, key=lambda t: (t[0], -t[1]))
    link = f"{m}-{n}-{regions[m][i].index}-{regions[n][j].index}"
    return f"{collation_url(base, cid)}/view?link={link}"


def concordance_text(doc: dict[str, Any]) -> str:
    """The concordance document as CSV (``collation.engine.concordance.concordance_csv``), witnesses named by label."""
    return concordance_csv(doc["rows"], witness_names(doc))


def witness_names(doc: dict[str, Any]) -> list[str]:
    return [f"{w['index']}:{w['label']}" for w in doc["witnesses"]]


WIDTHS = {"index": 7, "label": 18, "canvas": 34, "xywh": 18, "image": 48, "confidence": 11, "verdict": 12}
"""Column widths (in characters) of each witness's fields; group, size and confidence come first."""
MAX_URL = 2079
"""Excel's longest hyperlink: a longer image address is written as plain text."""


def concordance_workbook(doc: dict[str, Any], exported: datetime | None = None) -> bytes:
    """The CSV's cells as an Excel workbook (``.xlsx``, through XlsxWriter) a historian can work in:
    a frozen header with a filter on every column, widths that fit, each region's image as a link;
    and a second sheet, "About", naming the manifests, the options and the date it was ``exported``.

    The number columns are numbers (size, confidence, each witness's index and confidence) and every
    other cell is text, whatever it looks like: a canvas labelled "0012", "1e3" or "NaN" is that
    text, and text is never run as a formula. A number that is not finite is written as text."""
    import xlsxwriter

    out = io.BytesIO()
    book = xlsxwriter.Workbook(out, {"in_memory": True, "strings_to_numbers": False, "strings_to_urls": False})
    sheet = book.add_worksheet("Concordance")
    bold = book.add_format({"bold": True, "bottom": 1})
    link = book.get_default_url_format()
    numbers = number_columns(len(doc["witnesses"]))
    links = image_columns(len(doc["witnesses"]))
    table = with_share_column(concordance_table(doc["rows"], witness_names(doc)), doc["rows"])
    if table[0][-1] == SHARE_COLUMN:  # each row's Content State link, a link like the images
        links.add(len(table[0]) - 1)
    for r, line in enumerate(table):
        for c, value in enumerate(line):
            number = _finite_number(value) if r and c in numbers else None
            if number is not None:
                sheet.write_number(r, c, number)
            elif r and c in links and _web_link(value):
                sheet.write_url(r, c, str(value), link, str(value))
            else:
                sheet.write_string(r, c, str(value), bold if r == 0 else None)
    for c, width in enumerate(column_widths(len(doc["witnesses"]))):
        sheet.set_column(c, c, width)
    if table[0][-1] == SHARE_COLUMN:
        sheet.set_column(len(table[0]) - 1, len(table[0]) - 1, 48)
    sheet.freeze_panes(1, 0)
    sheet.autofilter(0, 0, len(table) - 1, len(table[0]) - 1)
    _about_sheet(book, doc, exported or datetime.now(UTC), bold, link)
    book.close()
    return out.getvalue()


def _about_sheet(book: Any, doc: dict[str, Any], exported: datetime, bold: Any, link: Any) -> None:
    """Which collation, manifests and options produced the concordance, and when it was exported."""
    sheet = book.add_worksheet("About")
    lines = [
        ("Collation", doc.get("id") or ""),
        ("Exported (UTC)", exported.strftime("%Y-%m-%d %H:%M")),
        ("Links ranked by the score", doc.get("score") or ""),
        ("Minimum score", "" if doc.get("min_score") is None else str(doc["min_score"])),
        ("Weak below (raw score)", "" if doc.get("weak_below") is None else str(doc["weak_below"])),
        ("Rows in the order of witness", "" if doc.get("sort") is None else str(doc["sort"])),
    ]
    for r, (name, value) in enumerate(lines):
        sheet.write_string(r, 0, name, bold)
        sheet.write_string(r, 1, value)
    top = len(lines) + 1
    for c, name in enumerate(("Witness", "Label", "Manifest")):
        sheet.write_string(top, c, name, bold)
    for r, witness in enumerate(doc["witnesses"], start=top + 1):
        sheet.write_number(r, 0, witness["index"])
        sheet.write_string(r, 1, str(witness.get("label") or ""))
        manifest = str(witness.get("manifest") or "")
        if _web_link(manifest):
            sheet.write_url(r, 2, manifest, link, manifest)
        else:
            sheet.write_string(r, 2, manifest)
    sheet.set_column(0, 0, 28)
    sheet.set_column(1, 1, 30)
    sheet.set_column(2, 2, 70)


def column_widths(witnesses: int) -> list[int]:
    """The width of each column of ``concordance_table``: group, size, confidence, the witnesses' fields, weak."""
    return [10, 6, 11, *[WIDTHS[name] for _ in range(witnesses) for name in CELL_FIELDS], 7]


def image_columns(witnesses: int) -> set[int]:
    """Columns of ``concordance_table`` that hold each witness's region image address."""
    return {3 + w * len(CELL_FIELDS) + CELL_FIELDS.index("image") for w in range(witnesses)}


def _web_link(value: Any) -> bool:
    """Only http(s) addresses become links (never file:, javascript: or anything Excel would open)."""
    text = str(value)
    return text.startswith(("http://", "https://")) and len(text) <= MAX_URL and not any(c.isspace() for c in text)


def number_columns(witnesses: int) -> set[int]:
    """Columns of ``concordance_table`` that hold numbers: size and confidence, then each witness's
    index and confidence (``CELL_FIELDS`` per witness after the first three columns)."""
    per_witness = [CELL_FIELDS.index("index"), CELL_FIELDS.index("confidence")]
    return {1, 2} | {3 + w * len(CELL_FIELDS) + k for w in range(witnesses) for k in per_witness}


def _finite_number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None

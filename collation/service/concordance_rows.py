"""``GET /collations/{id}/concordance`` (JSON) and ``.csv``: one row per group of corresponding
illustrations across all witnesses, one column per witness.

The groups come from ``collation.engine.concordance.build_groups`` over the stored results of every pair of
readable manuscripts (cycle-consistent pairs and the experts' verdicts); this module adds what a
reader needs to find each illustration: its canvas (id and label), its box, an Image API URL of the
region and of a thumbnail, and the viewer's Mirador compare view opened on it.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np

from collation.core.vocabulary import CATEGORY_LABELS
from collation.engine.concordance import Group, PairEvidence, build_groups, sort_groups
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

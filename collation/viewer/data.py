"""What the viewer page and the matrix image need, as plain functions of the data store.

The service's read helpers (``collation.service.results``) validate the collation and the
pair and orient the results; this module only adds what a person looking at the results needs on
top: where to see each region (an Image API URL, so thumbnails come from the library's server and
no image is copied into our responses), which derived manifests Mirador opens, and which cells of
the score matrix to mark.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from collation.core.errors import InputError
from collation.core.vocabulary import MATCH_CATEGORIES
from collation.engine.evaluation import parse_ground_truth
from collation.iiif.manifests import Canvas, parse_manifest
from collation.publish.content_state import decode, read_targets
from collation.service.images import THUMBNAIL_WIDTH, region_image_url, stored_region_url
from collation.service.results import assessment_categories, check_id, finished_record, pair_results
from collation.service.urls import manifest_url
from collation.store.datastore import DataStore
from collation.viewer.imagespace import viewer_manifest_url
from collation.viewer.matrix import MatrixMarks


def thumbnail_url(canvas: Canvas, xywh: Sequence[int], width: int = THUMBNAIL_WIDTH) -> str | None:
    """An Image API request for a canvas region (``collation.service.images.region_image_url``)."""
    return region_image_url(canvas, xywh, width)


def pair_view(store: DataStore, cid: str, pair: tuple[int, int], base: str) -> dict[str, Any]:
    """``GET /collations/{id}/view.json``: manuscripts, derived manifests and the regions of a pair.

    Returns:
        ``{"id", "pair", "manuscripts": [{"index", "label", "manifest", "viewer_manifest", "usable"}],
        "regions": {"<m>": {"<region index>": {"canvas", "canvas_label", "xywh", "thumbnail"}}}}``
        for both manuscripts of the pair (``viewer_manifest``: the variant for Mirador versions affected
        by mirador#4533, see ``imagespace``). 404 for an unknown collation, 409 while it is unfinished.
    """
    record = finished_record(store, check_id(cid))
    a, b = pair
    pair_results(store, record, a, b)  # validates the pair (exists, usable, results present)
    usable = set(record.usable)
    manuscripts = []
    for m, _url in enumerate(record.request.manifests):
        doc = store.load_manuscript(cid, m)
        manuscripts.append(
            {
                "index": m,
                "label": (doc.label if doc else None) or f"Manuscript {m}",
                "manifest": manifest_url(base, cid, m) if m in usable else None,
                "viewer_manifest": viewer_manifest_url(base, cid, m) if m in usable else None,
                "usable": m in usable,
            }
        )
    regions: dict[str, dict[str, Any]] = {}
    for m in (a, b):
        doc = store.load_manuscript(cid, m)
        raw = store.load_manifest(cid, m)
        manifest = parse_manifest(raw, url=record.request.manifests[m]) if raw else None
        out: dict[str, Any] = {}
        for region in doc.regions if doc else ():
            canvas = manifest.canvas(region.canvas_id) if manifest else None
            xywh = list(region.xywh)
            out[str(region.index)] = {
                "canvas": region.canvas_id,
                "canvas_label": canvas.label if canvas else "",
                "xywh": xywh,
                "thumbnail": (thumbnail_url(canvas, xywh) if canvas else None)
                or (stored_region_url(base, cid, m, region.index) if region.digest else None),
            }
        regions[str(m)] = out
    return {"id": cid, "pair": [a, b], "manuscripts": manuscripts, "regions": regions}


def ground_truth_key(a: int, b: int) -> str:
    """Where a ground truth of manuscripts ``a`` and ``b`` is kept in the collation (put there by its
    curator): ``ground_truth/<a>-<b>.json``, a JSON list of ``[region index in a, region index in b]``."""
    return f"ground_truth/{a}-{b}.json"


def load_ground_truth(store: DataStore, cid: str, a: int, b: int) -> list[tuple[int, int]] | None:
    """The ground-truth pairs (region indices, a then b) of a pair, stored either way round; None
    when none was uploaded."""
    for (p, q), flip in (((a, b), False), ((b, a), True)):
        data = store.read_in_collation(cid, ground_truth_key(p, q))
        if data is not None:
            pairs = parse_ground_truth(data, ground_truth_key(p, q)).tolist()  # the authors' format, validated
            return [(j, i) if flip else (i, j) for i, j in pairs]
    return None


def matrix_data(store: DataStore, cid: str, pair: tuple[int, int], score: str) -> tuple[np.ndarray, MatrixMarks]:
    """The scores of a pair (rows ``pair[0]``) and the cells to mark, as matrix positions.

    Cycles come from the stored results (split into 2- and 3-cycles, which ``pair_results`` merges);
    verdicts and the ground truth are by region index and are mapped to positions here, because a
    region that could not be read has no row.
    """
    record = finished_record(store, check_id(cid))
    a, b = pair
    res = pair_results(store, record, a, b)
    matrix = res.scores(score)
    stored = store.load_results(cid, a, b)

    def cycles(name: str) -> list[tuple[int, int]]:
        return [(int(i), int(j)) for i, j in getattr(stored, name).reshape(-1, 2)]

    rows, cols = res.doc0.positions(), res.doc1.positions()

    def positions(pairs: Any) -> list[tuple[int, int]]:
        return [(rows[i], cols[j]) for i, j in pairs if i in rows and j in cols]

    verdicts = assessment_categories(store, cid, a, b)
    truth = load_ground_truth(store, cid, a, b)
    marks = MatrixMarks(
        two_cycles=cycles("two_cycles"),
        three_cycles=cycles("three_cycles"),
        confirmed=positions(k for k, v in verdicts.items() if v in MATCH_CATEGORIES),
        rejected=positions(k for k, v in verdicts.items() if v == "none"),
        ground_truth=positions(truth) if truth is not None else None,
    )
    return matrix, marks


def _overlap(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two (x, y, w, h) boxes."""
    w = max(0.0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    union = a[2] * a[3] + b[2] * b[3] - w * h
    return w * h / union if union > 0 else 0.0


def content_state_focus(store: DataStore, cid: str, base: str, encoded: str) -> tuple[list[int], list[int]]:
    """The pair and the match (``[a, b]``, ``[i, j]`` region indices) a IIIF Content State names
    (``?iiif-content=`` of the pair view; ``collation.publish.content_state``): its first two targets,
    each a region of a canvas of one of this collation's manuscripts, found by its manifest (the
    derived one, its viewer variant or the library's) and its canvas, then the region of that canvas
    that overlaps the target's ``xywh`` most. ``InputError`` (field ``iiif-content``) otherwise."""
    record = finished_record(store, check_id(cid))
    targets = read_targets(decode(encoded))
    if len(targets) < 2:
        raise InputError("names one canvas; the pair view opens two", field="iiif-content")
    found: list[tuple[int, int]] = []
    for target in targets[:2]:
        best: tuple[float, int, int] | None = None
        for m in record.usable:
            known = {manifest_url(base, cid, m), viewer_manifest_url(base, cid, m), record.request.manifests[m]}
            if target.manifest is not None and target.manifest not in known:
                continue
            doc = store.load_manuscript(cid, m)
            for region in doc.regions if doc else ():
                if region.canvas_id != target.canvas:
                    continue
                score = _overlap(region.xywh, target.xywh) if target.xywh else 0.0
                if best is None or score > best[0]:
                    best = (score, m, region.index)
        if best is None:
            raise InputError(f"no region of this collation is on canvas {target.canvas}", field="iiif-content")
        found.append(best[1:])
    (a, i), (b, j) = found
    if a == b:
        raise InputError("names two canvases of one manuscript; the pair view opens two", field="iiif-content")
    return [a, b], [i, j]

"""What the viewer page and the matrix image need, as plain functions of the data store.

The service's read helpers (``collation.service.results``) validate the collation and the
pair and orient the results; this module only adds what a person looking at the results needs on
top: where to see each region (an Image API URL, so thumbnails come from the library's server and
no image is copied into our responses), which derived manifests Mirador opens, and which cells of
the score matrix to mark.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..evaluation import load_ground_truth as read_ground_truth
from ..iiif.manifests import Canvas, canvas_to_image, parse_manifest
from ..service.results import SCORE_ARRAYS, assessment_verdicts, check_id, finished_record, pair_results
from ..service.urls import manifest_url
from ..store.datastore import DataStore
from .imagespace import viewer_manifest_url
from .matrix import MatrixMarks

THUMBNAIL_WIDTH = 160
"""Width requested for list thumbnails (never more than the region's own width: no upscaling)."""


def thumbnail_url(canvas: Canvas, xywh: Sequence[int], width: int = THUMBNAIL_WIDTH) -> str | None:
    """An Image API request for a canvas region, or None when the canvas's image cannot cut regions.

    The region is in canvas units; the request is in image pixels (the canvas may be larger than
    the image, as at the Vatican, or painted by a cropped image), so it goes through
    ``canvas_to_image``. Level-0 services and plain images cannot cut regions, so they get None
    rather than a whole folio.
    """
    image = canvas.image
    if image is None or not image.service_id or image.level == 0:
        return None
    try:
        x, y, w, h = canvas_to_image(tuple(float(v) for v in xywh), canvas)  # type: ignore[arg-type]
    except InputError:
        return None
    x0, y0 = max(0, round(x)), max(0, round(y))
    x1, y1 = round(x + w), round(y + h)
    if image.width and image.height:
        x1, y1 = min(image.width, x1), min(image.height, y1)
    if x1 <= x0 or y1 <= y0:
        return None
    quality = "native" if image.service_version == 1 else "default"
    return f"{image.service_id}/{x0},{y0},{x1 - x0},{y1 - y0}/{min(width, x1 - x0)},/0/{quality}.jpg"


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
    usable = set(record.get("usable", []))
    manuscripts = []
    for m, _url in enumerate(record["request"]["manifests"]):
        doc = store.load_manuscript(cid, m)
        manuscripts.append({
            "index": m,
            "label": (doc or {}).get("label") or f"Manuscript {m}",
            "manifest": manifest_url(base, cid, m) if m in usable else None,
            "viewer_manifest": viewer_manifest_url(base, cid, m) if m in usable else None,
            "usable": m in usable,
        })
    regions: dict[str, dict[str, Any]] = {}
    for m in (a, b):
        doc = store.load_manuscript(cid, m) or {"regions": []}
        raw = store.load_manifest(cid, m)
        manifest = parse_manifest(raw, url=record["request"]["manifests"][m]) if raw else None
        out: dict[str, Any] = {}
        for region in doc["regions"]:
            canvas = manifest.canvas(region["canvas_id"]) if manifest else None
            xywh = [int(v) for v in region["xywh"]]
            out[str(region["index"])] = {
                "canvas": region["canvas_id"],
                "canvas_label": canvas.label if canvas else "",
                "xywh": xywh,
                "thumbnail": thumbnail_url(canvas, xywh) if canvas else None,
            }
        regions[str(m)] = out
    return {"id": cid, "pair": [a, b], "manuscripts": manuscripts, "regions": regions}


def ground_truth_path(store: DataStore, cid: str, a: int, b: int) -> Path:
    """Where a ground truth of manuscripts ``a`` and ``b`` is kept: ``ground_truth/<a>-<b>.json``
    in the collation's folder, a JSON list of ``[region index in a, region index in b]``."""
    return store.collation_dir(cid) / "ground_truth" / f"{a}-{b}.json"


def load_ground_truth(store: DataStore, cid: str, a: int, b: int) -> list[tuple[int, int]] | None:
    """The ground-truth pairs (region indices, a then b) of a pair, stored either way round; None
    when none was uploaded."""
    for (p, q), flip in (((a, b), False), ((b, a), True)):
        path = ground_truth_path(store, cid, p, q)
        if path.is_file():
            pairs = read_ground_truth(path).tolist()  # the authors' format, validated
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
    matrix = res[SCORE_ARRAYS[score]]
    lo, hi = min(a, b), max(a, b)
    stored = store.load_results(cid, lo, hi) or {}

    def cycles(name: str) -> list[tuple[int, int]]:
        cells = [(int(i), int(j)) for i, j in np.asarray(stored.get(name, np.zeros((0, 2)))).reshape(-1, 2)]
        return cells if a < b else [(j, i) for i, j in cells]

    rows = {r["index"]: k for k, r in enumerate(res["regions0"])}
    cols = {r["index"]: k for k, r in enumerate(res["regions1"])}

    def positions(pairs: Any) -> list[tuple[int, int]]:
        return [(rows[i], cols[j]) for i, j in pairs if i in rows and j in cols]

    verdicts = assessment_verdicts(store, cid, a, b)
    truth = load_ground_truth(store, cid, a, b)
    marks = MatrixMarks(
        two_cycles=cycles("two_cycles"),
        three_cycles=cycles("three_cycles"),
        confirmed=positions(k for k, v in verdicts.items() if v == "confirmed"),
        rejected=positions(k for k, v in verdicts.items() if v == "rejected"),
        ground_truth=positions(truth) if truth is not None else None,
    )
    return matrix, marks

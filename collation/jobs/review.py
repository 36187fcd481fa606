"""Detection for review (``POST /detections``): the illustrations of a manifest without region annotations
found page by page on the workers, so that the New collation page shows each page's boxes as soon as it is
done, for manuscripts of hundreds of folios (issue 39, item 1; ``GET /inspect`` answers within its time
limit because it is asked not to detect).

One document per detection, ``detections/<id>.json`` in the data store, rewritten after each batch of
``BATCH`` pages: the manifest, ``status`` (a collation's words: queued, running, finished, failed),
``done`` and ``total`` pages, the ``regions`` found so far (the inspection's region form, numbered in
page order) and the ``problems`` (a page whose image could not be loaded). The job runs on the compute
queue (the detector is a CNN) with the worker's detector and fetcher (the model, the address policy and
politeness of a collation). Removed once unchanged for ``settings.store.draft_days`` days, as drafts are.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from collation.core.errors import CollationError
from collation.core.vocabulary import CollationStatus
from collation.iiif.detected import DETECT_LONG_SIDE, search_canvas
from collation.iiif.manifests import load_manifest
from collation.iiif.regions import Region
from collation.jobs.runtime import Runtime, current
from collation.store.datastore import DataStore

log = logging.getLogger("collation.jobs")

DETECT_TASK = "collation.jobs.review.detect_for_review"
BATCH = 4
"""Pages searched at once (in threads: fetching overlaps the detector) between two writes of the document
(the first page alone)."""
DETECTION_ID = re.compile(r"^[0-9a-f]{16}$")


class DetectionNotFound(CollationError):
    """No detection has this id."""

    http_status = 404


def _key(did: str) -> str:
    if not DETECTION_ID.match(did):
        raise DetectionNotFound(f"no detection {did!r}: an id is 16 hexadecimal digits", field="id")
    return f"detections/{did}.json"


def load(store: DataStore, did: str) -> dict[str, Any]:
    """The detection's document. Raises DetectionNotFound (404)."""
    data = store.read(_key(did))
    if data is None:
        raise DetectionNotFound(f"no detection {did}", field="id")
    return json.loads(data)


def _save(store: DataStore, doc: dict[str, Any]) -> None:
    doc["updated"] = datetime.now(UTC).isoformat(timespec="seconds")
    store.write(_key(doc["id"]), json.dumps(doc).encode())


def start(runtime: Runtime, manifest: str) -> dict[str, Any]:
    """Stores a queued detection of ``manifest`` and enqueues its job (compute queue)."""
    doc = {
        "id": secrets.token_hex(8),
        "manifest": manifest,
        "status": CollationStatus.QUEUED.value,
        "done": 0,
        "total": None,
    }
    doc.update({"regions": [], "problems": [], "created": datetime.now(UTC).isoformat(timespec="seconds")})
    _save(runtime.store, doc)
    runtime.queue("compute").enqueue_call(
        DETECT_TASK,
        args=(doc["id"],),
        job_id=f"detect-{doc['id']}",
        description=f"detection for review of {manifest}",
        timeout=3600,
        result_ttl=3600,
        failure_ttl=86400,
    )
    return doc


def run(runtime: Runtime, did: str) -> str:
    """Searches every page of the detection's manifest, ``BATCH`` at a time, saving the document after
    each batch; a manifest that cannot be read fails the detection with its message."""
    store, fetcher = runtime.store, runtime.fetcher
    doc = load(store, did)
    try:
        manifest = load_manifest(doc["manifest"], fetcher=fetcher)
    except CollationError as exc:
        doc.update(status=CollationStatus.FAILED.value, error=exc.message)
        _save(store, doc)
        return exc.message
    pages = [c for c in manifest.canvases if c.image is not None and c.width and c.height]
    doc.update(status=CollationStatus.RUNNING.value, total=len(pages), label=manifest.label)
    _save(store, doc)
    limit, detector = runtime.settings.limits.max_regions, runtime.detector  # the collation's (its model, floor)
    # the first page alone, so that the New page shows one as soon as it can; then BATCH at a time
    starts = [0, *range(1, len(pages), BATCH)] if pages else []
    with ThreadPoolExecutor(max_workers=BATCH) as pool:
        for start_at, end in zip(starts, [*starts[1:], len(pages)], strict=True):
            batch = pages[start_at:end]
            outcomes = pool.map(lambda c: search_canvas(c, detector, DETECT_LONG_SIDE, fetcher), batch)
            for canvas, outcome in zip(batch, outcomes, strict=True):
                if isinstance(outcome, CollationError):
                    doc["problems"].append(
                        {"message": f"page {canvas.label}: {outcome.message}", "canvas_id": canvas.id}
                    )
                    continue
                for k, (box, detection) in enumerate(outcome):
                    if len(doc["regions"]) >= limit:
                        break
                    label = f"{canvas.label}: detected illustration" + (f" {k + 1}" if len(outcome) > 1 else "")
                    region = Region(
                        len(doc["regions"]), canvas.id, canvas.index, box, label, score=round(float(detection.score), 4)
                    )
                    doc["regions"].append(region.to_dict())
            doc["done"] += len(batch)
            _save(store, doc)
    doc["status"] = CollationStatus.FINISHED.value
    _save(store, doc)
    log.info("Detection %s: %d regions on %d pages", did, len(doc["regions"]), len(pages))
    return f"{len(doc['regions'])} regions on {len(pages)} pages"


def detect_for_review(did: str) -> str:
    """The RQ entry point: ``run`` with the worker's runtime."""
    return run(current(), did)

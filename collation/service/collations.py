"""What the API's collation routes do, as plain functions of the runtime or the data store.

Routes parse and validate; these functions read the store (and, for writes, call the scheduler
through ``jobs_bridge``) and build the documents, so the same logic serves the API, the tests and
any other front end. Every URL comes from ``urls``.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..iiif.annotations import build_assessment
from ..runtime import Runtime
from ..store.datastore import DataStore
from ..store.records import collation_id, new_record, now, resolve_options, usable
from ..store.steps import Step
from . import urls
from .jobs_bridge import apply_assessments, scheduler
from .results import SCORE_ARRAYS, assessment_verdicts, check_id, finished_record, pair_results, top_candidates


def submit(runtime: Runtime, body: dict[str, Any], base: str) -> tuple[dict, bool]:
    """Creates (or finds) the collation of a validated request body and enqueues its work.

    Returns:
        (record, created): created is False when the same request was made before.

    Raises:
        Unavailable: no Redis is configured (503); ``RedisError`` when it is not reachable.
    """
    jobs = scheduler(runtime)  # before any write: without Redis nothing is stored
    options = resolve_options(body.get("options"), runtime.settings)
    regions = body.get("regions") or {}
    cid = collation_id(body["manifests"], regions, options)
    request = {"manifests": list(body["manifests"]), "regions": regions, "options": body.get("options") or {},
               "callback_url": body.get("callback_url")}
    record = new_record(cid, request, options, runtime.settings)
    record["base_url"] = base
    return jobs.submit(record)


def cancel(runtime: Runtime, cid: str) -> None:
    """Cancels and deletes a collation.

    Raises:
        CollationNotFound: no such collation (404).
        Unavailable: no Redis is configured (503); ``RedisError`` when it is not reachable.
    """
    check_id(cid)
    if not scheduler(runtime).cancel(cid):
        runtime.store.load_record(cid)  # raises the 404 problem


def status_document(store: DataStore, cid: str, base: str) -> dict[str, Any]:
    """``GET /collations/{id}``: status, progress, per-manuscript regions and errors, links."""
    record = store.load_record(check_id(cid))
    failures = store.load_failures(cid)
    manuscripts = []
    for m, url in enumerate(record["request"]["manifests"]):
        doc = store.load_manuscript(cid, m)
        errors = list(doc["errors"]) if doc else []
        for step in (Step.prepare(m), Step.features(m)):
            if step in failures:
                errors.append({"message": failures[step]})
        if doc is None:
            state = "failed" if Step.prepare(m) in failures else "pending"
        else:
            state = "ready" if usable(doc) and Step.features(m) not in failures else "failed"
        manuscripts.append({
            "index": m,
            "manifest": url,
            "label": doc["label"] if doc else None,
            "status": state,
            "regions": len(doc["regions"]) if doc else 0,
            "regions_source": doc.get("regions_source") if doc else None,
            "regions_note": doc.get("regions_note") if doc else None,
            "errors": errors,
        })
    return {
        "id": cid,
        "status": record["status"],
        "progress": record["progress"],
        "created": record["created"],
        "updated": record["updated"],
        "ended": record.get("ended"),
        "options": record["options"],
        "manuscripts": manuscripts,
        "errors": record.get("errors", []),
        "links": urls.status_links(base, cid, record.get("usable") or []),
    }


def _region(region: dict) -> dict[str, Any]:
    return {"index": region["index"], "canvas": region["canvas_id"], "xywh": [int(v) for v in region["xywh"]]}


def correspondences(store: DataStore, cid: str, pair: tuple[int, int], score: str, top: int) -> dict[str, Any]:
    """``GET /collations/{id}/correspondences``: for each region of ``pair[0]``, its best ``top``
    candidates in ``pair[1]`` by the chosen score."""
    record = finished_record(store, cid)
    a, b = pair
    res = pair_results(store, record, a, b)
    verdicts = assessment_verdicts(store, cid, a, b)
    matrix = res[SCORE_ARRAYS[score]]
    items = []
    for r, (region, order) in enumerate(zip(res["regions0"], top_candidates(matrix, top).tolist(), strict=True)):
        candidates = []
        for rank, c in enumerate(order, start=1):
            other = res["regions1"][c]
            candidate = {**_region(other), "S": float(res["S"][r, c]), "N_S": float(res["N_S"][r, c]),
                         "P_S": float(res["P_S"][r, c]), "rank": rank, "cycle_consistent": (r, c) in res["cycles"]}
            verdict = verdicts.get((region["index"], other["index"]))
            if verdict:
                candidate["assessment"] = verdict
            candidates.append(candidate)
        items.append({"source": _region(region), "candidates": candidates})
    return {"id": cid, "pair": [a, b], "score": score, "top": top, "items": items}


# --------------------------------------------------------------------------------------------------
# Assessments


def add_assessment(store: DataStore, cid: str, body: dict[str, Any], base: str) -> dict[str, Any]:
    """Stores an expert's verdict and recomputes the pair's propagated scores at once.

    Confirmed correspondences become propagation seeds and rejected ones stop being seeds; P_S is
    recomputed from the stored N_S, so nothing is rescored.
    """
    record = finished_record(store, check_id(cid))
    a, b = body["pair"]
    res = pair_results(store, record, a, b, field="pair")
    for name, regions, value in (("source", res["regions0"], body["source"]),
                                 ("target", res["regions1"], body["target"])):
        if value not in {r["index"] for r in regions}:
            m = a if name == "source" else b
            raise InputError(f"manuscript {m} has no region {value}", field=name)
    with store.locked(cid):
        items = store.load_assessments(cid)
        item = {
            "id": f"{len(items) + 1}",
            "pair": [a, b],
            "source": body["source"],
            "target": body["target"],
            "verdict": body["verdict"],
            "creator": body.get("creator"),
            "note": body.get("note"),
            "created": now(),
        }
        items.append(item)
        store.save_assessments(cid, items)
        apply_assessments(store, cid)
    return with_links(item, cid, base)


VERDICT_VALUES = {"confirmed": "exact", "rejected": "none"}
"""Our verdicts in the vocabulary of the ``assessing`` annotations (docs/annotations.md)."""


def with_links(item: dict[str, Any], cid: str, base: str) -> dict[str, Any]:
    """An assessment with its links and as a W3C ``assessing`` annotation on the canonical link."""
    a, b = item["pair"]
    source, target = item["source"], item["target"]
    if a > b:  # canonical links are stored once, from the lower manuscript index
        a, b, source, target = b, a, target, source
    self_url = urls.assessment_url(base, cid, item["id"])
    link = urls.url_scheme(cid, base).render("link", link=f"{a}-{b}-{source}-{target}")
    assessor = {"type": "Person", "name": item.get("creator") or "anonymous expert"}
    annotation = build_assessment(link, VERDICT_VALUES[item["verdict"]], assessor=assessor, id=self_url,
                                  created=item.get("created"), note=item.get("note"))
    return {**item, "annotation": annotation, "links": {
        "self": self_url,
        "correspondences": urls.correspondences_url(base, cid, a, b),
    }}


def list_assessments(store: DataStore, cid: str, base: str) -> dict[str, Any]:
    """``GET /collations/{id}/assessments``: every assessment, oldest first."""
    store.load_record(check_id(cid))
    return {"id": cid, "items": [with_links(item, cid, base) for item in store.load_assessments(cid)]}

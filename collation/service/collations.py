"""What the routes do, as plain functions of the data store (and the scheduler for writes).

Routes parse and validate; these functions read the store and build the documents, so the same
logic serves the API, the tests and any other front end.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError
from ..jobs.scheduling import Scheduler
from ..store.datastore import CollationNotFound, DataStore
from ..store.records import Step, collation_id, new_record, now, resolve_options, usable
from .problems import Conflict

ID_CHARS = set("0123456789abcdef")


def check_id(cid: str) -> str:
    """A collation id is 16 lower-case hex digits; anything else is a 404 like an unknown id."""
    if len(cid) != 16 or not set(cid) <= ID_CHARS:
        raise CollationNotFound(f"no collation {cid!r}", field="id")
    return cid


def submit(scheduler: Scheduler, body: dict[str, Any], base_url: str) -> tuple[dict, bool]:
    """Creates (or finds) the collation of a validated request body and enqueues its work.

    Returns:
        (record, created): created is False when the same request was made before.
    """
    settings = scheduler.settings
    options = resolve_options(body.get("options"), settings)
    regions = body.get("regions") or {}
    cid = collation_id(body["manifests"], regions, options)
    request = {"manifests": list(body["manifests"]), "regions": regions, "options": body.get("options") or {},
               "callback_url": body.get("callback_url")}
    record = new_record(cid, request, options, settings)
    record["base_url"] = base_url
    return scheduler.submit(record)


def links(cid: str, base: str, record: dict) -> dict[str, Any]:
    root = f"{base}/collations/{cid}"
    ready = record.get("usable") or []
    return {
        "self": root,
        "correspondences": f"{root}/correspondences?pair=0,1&score=propagated&top=5",
        "annotations": f"{root}/annotations",
        "assessments": f"{root}/assessments",
        "manifests": [f"{root}/manifests/{m}" for m in ready],
        "view": f"{root}/view",
        "matrix": f"{root}/matrix.png?pair=0,1",
    }


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
        "links": links(cid, base, record),
    }


def finished_record(store: DataStore, cid: str) -> dict:
    """The record of a finished collation; a 409 problem otherwise."""
    record = store.load_record(check_id(cid))
    if record["status"] != "finished":
        raise Conflict(f"collation {cid} is {record['status']}, its results are not available", field="id")
    return record


def pair_results(store: DataStore, record: dict, a: int, b: int, field: str = "pair") -> dict[str, Any]:
    """Scores of manuscripts ``a`` and ``b`` oriented as asked (rows a, columns b) with their regions."""
    cid, n = record["id"], len(record["request"]["manifests"])
    for m in (a, b):
        if m >= n:
            raise InputError(f"manuscript {m} does not exist: this collation has {n} (0..{n - 1})", field=field)
        if m not in record.get("usable", []):
            raise Conflict(f"manuscript {m} could not be read, so it has no correspondences", field=field)
    lo, hi = min(a, b), max(a, b)
    res = store.load_results(cid, lo, hi)
    if res is None:
        raise Conflict(f"the results of manuscripts {lo} and {hi} are missing", field=field)
    arrays = {name: res[name] for name in ("S", "N_S", "P_S")}
    cycles = {tuple(p) for name in ("two_cycles", "three_cycles") for p in res[name].reshape(-1, 2).tolist()}
    if a > b:
        arrays = {name: m.T for name, m in arrays.items()}
        cycles = {(j, i) for i, j in cycles}
    return {
        **arrays,
        "cycles": cycles,
        "regions0": store.load_manuscript(cid, a)["regions"],
        "regions1": store.load_manuscript(cid, b)["regions"],
    }


SCORE_ARRAYS = {"raw": "S", "normalized": "N_S", "propagated": "P_S"}


def top_candidates(matrix: np.ndarray, top: int) -> np.ndarray:
    """``(n0, min(top, n1))`` column indices of each row's best scores, best first, ties by index."""
    return np.argsort(-matrix, axis=1, kind="stable")[:, :top]


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


def assessment_verdicts(store: DataStore, cid: str, a: int, b: int) -> dict[tuple[int, int], str]:
    """The latest verdict on each (region index in a, region index in b)."""
    out = {}
    for item in store.load_assessments(cid):
        p, q = item["pair"]
        if (p, q) == (a, b):
            out[(item["source"], item["target"])] = item["verdict"]
        elif (p, q) == (b, a):
            out[(item["target"], item["source"])] = item["verdict"]
    return out


def add_assessment(store: DataStore, cid: str, body: dict[str, Any], base: str) -> dict[str, Any]:
    """Stores an expert's verdict and recomputes the pair's propagated scores at once.

    Confirmed correspondences become propagation seeds and rejected ones stop being seeds; P_S is
    recomputed from the stored N_S, so nothing is rescored.
    """
    from ..jobs.results import apply_assessments

    record = finished_record(store, cid)
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
    from ..iiif.annotations import build_assessment
    from .layers import url_scheme

    a, b = item["pair"]
    source, target = item["source"], item["target"]
    if a > b:  # canonical links are stored once, from the lower manuscript index
        a, b, source, target = b, a, target, source
    self_url = f"{base}/collations/{cid}/assessments#{item['id']}"
    link = url_scheme(cid, base).render("link", link=f"{a}-{b}-{source}-{target}")
    assessor = {"type": "Person", "name": item.get("creator") or "anonymous expert"}
    annotation = build_assessment(link, VERDICT_VALUES[item["verdict"]], assessor=assessor, id=self_url,
                                  created=item.get("created"), note=item.get("note"))
    return {**item, "annotation": annotation, "links": {
        "self": self_url,
        "correspondences": f"{base}/collations/{cid}/correspondences?pair={a},{b}&score=propagated",
    }}


def list_assessments(store: DataStore, cid: str, base: str) -> dict[str, Any]:
    store.load_record(check_id(cid))
    return {"id": cid, "items": [with_links(item, cid, base) for item in store.load_assessments(cid)]}

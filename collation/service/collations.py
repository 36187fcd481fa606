"""What the API's collation routes do, as plain functions of the runtime or the data store.

Routes parse and validate; these functions read the store (and, for writes, call the scheduler of
``collation.jobs``) and build the documents, so the same logic serves the API, the tests and
any other front end. Every URL comes from ``urls``.
"""

from __future__ import annotations

from typing import Any

from redis import Redis

from collation.core.correspondence import Correspondence
from collation.core.errors import InputError, LimitError
from collation.core.options import CollationOptions
from collation.core.vocabulary import CollationStatus
from collation.jobs import access
from collation.jobs.budget import given_counts, over_budget
from collation.jobs.runtime import Runtime
from collation.jobs.scheduling import Scheduler
from collation.service import quotas, urls
from collation.service.annotations import pair_correspondence
from collation.service.problems import Conflict, Unavailable
from collation.service.results import (
    PairView,
    assessment_items,
    check_id,
    finished_record,
    pair_results,
    top_candidates,
)
from collation.store import writable
from collation.store.datastore import CollationNotFound, DataStore
from collation.store.records import CollationRecord, CollationRequest, collation_id, new_record, now
from collation.store.stepnames import Step
from collation.store.stored import Assessment, StoredRegion


def scheduler(runtime: Runtime) -> Scheduler:
    """The scheduler of ``runtime``'s Redis and data store.

    Raises:
        Unavailable: no Redis is configured (a 503 problem).
    """
    if runtime.redis is None:
        raise Unavailable("no Redis is configured (COLLATION_REDIS_URL)")
    return Scheduler(runtime)


def submit(
    runtime: Runtime, body: dict[str, Any], base: str, owner: str | None = None, client: str | None = None
) -> tuple[CollationRecord, bool]:
    """Creates (or finds) the collation of a validated request body and enqueues its work.

    ``owner`` is the hash of the caller's token (``auth.token_hash``): it enters the collation's id
    (``collation_id``), so the same request from another token is another collation, and it is the
    record's only owner, who lists it in ``GET /collations`` and may change it (``auth.require_creator``).

    Returns:
        (record, created): created is False when the same request was made before.

    Raises:
        Unavailable: no Redis is configured (503); ``RedisError`` when it is not reachable.
        LimitError: the regions the request lists are over the collation's budget (422, ``jobs.budget``).
        Busy: ``client`` (``quotas.client_of``) has too many collations or regions running (429).
    """
    jobs = scheduler(runtime)  # before any write: without Redis nothing is stored
    options = CollationOptions.parse(body.get("options"), backbone=runtime.settings.backbone)
    request = CollationRequest(
        tuple(body["manifests"]), body.get("regions") or {}, body.get("options") or {}, body.get("callback_url")
    )
    settings = runtime.settings
    problem = over_budget(
        given_counts(request.regions), options, settings.limits.max_regions_total, settings.limits.max_pairs
    )
    if problem is not None:  # before anything is stored or enqueued
        raise LimitError(problem, field="regions")
    tokens = access_tokens(body, settings)
    digest = access.tokens_digest(tokens) if tokens else None
    cid = collation_id(request.manifests, request.regions, options, owner, digest)
    record = new_record(cid, request, options, runtime.settings)
    record.base_url = base
    record.name = body.get("name")  # the same request named again keeps its first name (docs/viewer.md)
    if owner:
        record.owners = [owner]
    if tokens:  # before the jobs that need them are enqueued; never in the record (jobs.access)
        access.keep(runtime.redis, settings.access_token_key, cid, tokens)
    if client is None:
        return jobs.submit(record)
    connection = runtime.connection()
    regions = sum(given_counts(request.regions).values())
    quotas.admit(
        runtime.store,
        connection,
        client,
        cid,
        regions,
        settings.limits.client_max_active,
        settings.limits.client_max_regions,
    )
    try:
        return jobs.submit(record)
    except BaseException:
        quotas.release(connection, client, cid)
        raise


def access_tokens(body: dict[str, Any], settings: Any) -> dict[str, str]:
    """The request's IIIF Auth 2 access tokens by access service; 400 naming ``access_tokens`` when the
    service keeps none (``COLLATION_ACCESS_TOKEN_KEY`` unset)."""
    tokens = {item["service"]: item["token"] for item in body.get("access_tokens") or []}
    if tokens and not settings.access_token_key:
        raise InputError(
            "this service does not accept access tokens (COLLATION_ACCESS_TOKEN_KEY is not set)", field="access_tokens"
        )
    return tokens


def rename(store: DataStore, cid: str, name: str) -> None:
    """``PATCH /collations/{id}``: gives the collation ``name`` (validated: trimmed, 1-200 characters).

    Raises:
        CollationNotFound: no such collation (404).
    """

    def change(record: CollationRecord) -> None:
        record.name, record.updated = name, now()

    store.update_record(check_id(cid), change)


def retry(runtime: Runtime, cid: str) -> CollationRecord:
    """``POST /collations/{id}/retry``: a failed collation goes back to queued and its jobs are enqueued
    again, as when its request is POSTed again (``Scheduler.submit`` reopens it): same id, same name,
    verdicts kept, and every step whose output is stored (features, scores) is not computed again.

    Raises:
        CollationNotFound: no such collation (404).
        Conflict: it has not failed (409, ``field`` status).
        Unavailable: no Redis is configured (503).
    """

    def failed(record: CollationRecord) -> None:
        if record.status != CollationStatus.FAILED:
            raise Conflict(
                f"collation {cid} is {record.status.value}: only a failed collation is retried", field="status"
            )

    # Read, checked and reopened under the lock a DELETE takes: a DELETE answered 204 stays done.
    return scheduler(runtime).retry(check_id(cid), failed)


def collation_name(store: DataStore, record: CollationRecord) -> str:
    """The record's name, or until it has one, ``default_name`` of the labels read so far (the pages' title)."""
    if record.name:  # no manuscript to read
        return record.name
    docs = [store.load_manuscript(record.id, m) for m in range(record.manuscript_count)]
    return record.display_name([doc.label if doc else None for doc in docs])


def cancel(runtime: Runtime, cid: str) -> None:
    """Cancels and deletes a collation.

    Raises:
        CollationNotFound: no such collation (404).
        Unavailable: no Redis is configured (503); ``RedisError`` when it is not reachable.
    """
    check_id(cid)
    try:
        before = runtime.store.load_record(cid)
    except CollationNotFound:
        before = None
    if not scheduler(runtime).cancel(cid):
        runtime.store.load_record(cid)  # raises the 404 problem
    elif before is not None and before.status == CollationStatus.FINISHED:  # it had published documents
        note = {"id": cid, "deleted": now(), "usable": before.usable, "owners": before.owners}
        runtime.store.record_deletion(cid, note)  # the Change Discovery feed's Delete (service.activity_feed)
    access.forget(runtime.redis, cid)


def status_document(store: DataStore, cid: str, base: str, redis: Redis | None = None) -> dict[str, Any]:
    """``GET /collations/{id}``: status, progress, per-manuscript regions and errors, links.

    ``problem`` says why an unfinished collation cannot progress: the data store cannot be written
    (remembered in ``redis`` by whoever met the failure, checked again here with a write probe).
    """
    record = store.load_record(check_id(cid))
    problem = None
    if not record.terminal and writable.recall(redis) is not None:
        problem = writable.check(store, redis)
    failures = store.load_failures(cid)
    manuscripts = []
    for m, url in enumerate(record.request.manifests):
        doc = store.load_manuscript(cid, m)
        errors = list(doc.errors) if doc else []
        for step in (Step.prepare(m), Step.features(m)):
            if step in failures:
                errors.append({"message": failures[step]})
        if doc is None:
            state = "failed" if Step.prepare(m) in failures else "pending"
        else:
            state = "ready" if doc.usable and Step.features(m) not in failures else "failed"
        manuscripts.append(
            {
                "index": m,
                "manifest": url,
                "label": doc.label if doc else None,
                "status": state,
                "regions": len(doc.regions) if doc else 0,
                "regions_source": doc.regions_source if doc else None,
                "regions_note": doc.regions_note if doc else None,
                "errors": errors,
            }
        )
    labels = [m["label"] for m in manuscripts]
    return {
        **record_summary(record),
        "name": record.display_name(labels),
        "ended": record.ended,
        "options": {**record.options.to_record(), "weak_below": record.options.floor},
        "manuscripts": manuscripts,
        "errors": record.errors,
        "problem": problem,
        "links": urls.status_links(base, cid, record.usable),
    }


def record_summary(record: CollationRecord) -> dict[str, Any]:
    """What the status document and the list of collations both say of a record first."""
    return {
        "id": record.id,
        "status": record.status.value,
        "progress": record.progress.to_json(),
        "created": record.created,
        "updated": record.updated,
    }


def _region(region: StoredRegion) -> dict[str, Any]:
    return {"index": region.index, "canvas": region.canvas_id, "xywh": list(region.xywh)}


def correspondences(
    store: DataStore,
    cid: str,
    pair: tuple[int, int],
    score: str,
    top: int,
    min_score: float | None = None,
    base: str | None = None,
) -> dict[str, Any]:
    """``GET /collations/{id}/correspondences``: for each region of ``pair[0]``, its best ``top``
    candidates in ``pair[1]`` by the chosen score, those below ``min_score`` left out (a region
    may then have no candidate; ranks stay those of the full list). With transpositions, the
    document names them (``transposition_names``) and each candidate says which one gave its S. Each
    candidate says whether it is ``weak`` (by the collation's ``weak_rule``: the floor it learned from its own
    scores, or raw S under ``weak_below``; or a ``blank`` region: docs/concordance.md)."""
    record = finished_record(store, cid)
    a, b = pair
    res = pair_results(store, record, a, b)
    assessed = assessment_items(store, cid, a, b)
    categories = {key: item.category for key, item in assessed.items()}
    matrix = res.scores(score)
    items = []
    for r, (region, order) in enumerate(zip(res.regions0, top_candidates(matrix, top), strict=True)):
        found = [
            pair_correspondence(res, a, b, r, c, rank, categories)
            for rank, c in enumerate(order, start=1)
            if min_score is None or matrix[r, c] >= min_score
        ]
        items.append({"source": _region(region), "candidates": [_candidate(c, res, assessed) for c in found]})
    if base is not None:
        _add_share_links(items, base, cid, a, b)
    doc = {"id": cid, "pair": [a, b], "score": score, "top": top, "weak_below": record.options.floor}
    doc.update(weak_rule="learned" if record.options.learns_floor else "fixed", items=items)
    if res.transposition_names is not None:
        doc["transposition_names"] = res.transposition_names
    if min_score is not None:
        doc["min_score"] = min_score
    return doc


def _add_share_links(items: list[dict[str, Any]], base: str, cid: str, a: int, b: int) -> None:
    """Gives each candidate the IIIF Content State link of its pair of regions (``urls.share_links``)."""
    for item in items:
        source = item["source"]
        for candidate in item["candidates"]:
            ends = [(a, source["canvas"], source["xywh"]), (b, candidate["canvas"], candidate["xywh"])]
            candidate.update(urls.share_links(base, cid, ends))


def _candidate(c: Correspondence, res: PairView, assessed: dict[tuple[int, int], Assessment]) -> dict[str, Any]:
    """A candidate of the correspondences document: the target region, the scores, and which
    transposition gave S and the expert's verdict (as given, aliases included, and its category)."""
    candidate = {
        **_region(res.regions1[c.target.position]),
        "S": c.S,
        "N_S": c.N_S,
        "P_S": c.P_S,
        "rank": c.rank,
        "cycle_consistent": c.cycle_consistent,
        "weak": c.weak,
    }
    if res.doc0.blank[c.source.position] or res.doc1.blank[c.target.position]:
        candidate["blank"] = True  # weak whatever its S: the viewer says so in its own words
    if c.transposition is not None:
        candidate["transposition"] = c.transposition
    if c.verdict is not None:
        candidate["assessment"] = assessed[(c.source.region, c.target.region)].verdict
        candidate["category"] = c.verdict
    return candidate

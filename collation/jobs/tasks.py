"""The job functions: plain functions of a collation id and small integers, run by RQ workers.

Every job reads its inputs from the data store and writes its output there atomically, and does
nothing when its output already exists, so a job run twice (a retry after a crash, a step
re-enqueued after a Redis restart) costs a little time and changes nothing. Jobs that find their
collation deleted or cancelled return at the next check.
"""

from __future__ import annotations

import functools
import logging
import uuid
from typing import Any

import numpy as np
from rq import get_current_job

from ..errors import CollationError
from . import context
from .scheduling import (
    TERMINAL,
    Scheduler,
    chunk_count,
    fail,
    now,
    pair_key,
    set_progress,
    usable,
)
from ..store.datastore import CollationNotFound, DataStore

log = logging.getLogger("collation.jobs")


class Gone(Exception):
    """The collation was deleted or cancelled while a job worked on it."""


def _scheduler() -> Scheduler:
    job = get_current_job()
    connection = job.connection if job is not None else context.connection()
    return Scheduler(connection, context.store(), context.settings())


def _live_record(store: DataStore, cid: str) -> dict:
    """The record of a collation that is still running.

    Raises:
        Gone: deleted, cancelled or already ended.
    """
    try:
        record = store.load_record(cid)
    except CollationNotFound:
        raise Gone(cid) from None
    if record["status"] in TERMINAL:
        raise Gone(cid)
    return record


def _quietly_gone(func):
    """Turns ``Gone`` into a normal return: a cancelled collation is not a failed job."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except Gone:
            log.info("Collation %s: gone, %s stops", args[0] if args else "?", func.__name__)
            return "gone"

    return wrapper


# --------------------------------------------------------------------------------------------------
# io queue


@_quietly_gone
def prepare_manuscript(cid: str, m: int) -> str:
    """Reads manifest ``m``, finds its regions, fetches their images into the store.

    A manifest that cannot be read, and canvases or regions that cannot be fetched, become errors
    of the manuscript, not of the job: the collation goes on with what could be read.
    """
    store = context.store()
    record = _live_record(store, cid)
    if store.load_manuscript(cid, m) is not None:
        return "cached"
    n = len(record["request"]["manifests"])
    set_progress(store, cid, "preparing", _count_prepared(store, cid, n), n)
    from .manuscripts import read_manuscript

    doc, manifest = read_manuscript(record, m, store, context.fetcher(),
                                    max_regions=int(context.settings()["MAX_REGIONS"]))
    _live_record(store, cid)
    store.save_manuscript(cid, m, doc, manifest)
    set_progress(store, cid, "preparing", _count_prepared(store, cid, n), n)
    return f"{len(doc['regions'])} regions, {len(doc['errors'])} errors"


def _count_prepared(store: DataStore, cid: str, n: int) -> int:
    return sum(store.manuscript_path(cid, m).is_file() for m in range(n))


@_quietly_gone
def plan(cid: str) -> str:
    """Runs once the manuscripts are ready: enqueues the pair scoring and the final step."""
    _live_record(context.store(), cid)
    return _scheduler().advance(cid)


@_quietly_gone
def finalize(cid: str) -> str:
    """Assembles the pair score matrices, normalizes, finds cycles, propagates and writes the results.

    If a chunk is missing (a step Redis lost), it asks for the missing work once this job ended.
    """
    store = context.store()
    record = _live_record(store, cid)
    n = len(record["request"]["manifests"])
    docs = [store.load_manuscript(cid, m) for m in range(n)]
    failures = store.load_failures(cid)
    ready = [m for m, doc in enumerate(docs) if usable(doc) and f"features-{m}" not in failures]
    scores: dict[tuple[int, int], np.ndarray] = {}
    missing = False
    for i, a in enumerate(ready):
        for b in ready[i + 1 :]:
            matrix = assemble_scores(store, record, docs[a], docs[b])
            if matrix is None:
                missing = True
            else:
                scores[(a, b)] = matrix
    if missing:
        _replan_after_this_job(cid)
        return "waiting for missing chunks"

    set_progress(store, cid, "finalizing", 0, 1)
    from .results import compute_results

    for (a, b), arrays in compute_results(scores, record["options"]).items():
        _live_record(store, cid)
        store.save_results(cid, a, b, **arrays)
    from .results import apply_assessments

    apply_assessments(store, cid)

    def finish(rec: dict) -> None:
        if rec["status"] in TERMINAL:
            raise Gone(cid)
        rec.update(status="finished", updated=now(), ended=now(), usable=ready,
                   progress={"stage": "finished", "done": 1, "total": 1})

    try:
        record = store.update_record(cid, finish)
    except CollationNotFound:
        raise Gone(cid) from None
    notify(record)
    return "finished"


def _replan_after_this_job(cid: str) -> None:
    from rq import Queue
    from rq.job import Dependency

    job = get_current_job()
    if job is None:  # called inline (tests): plan right away
        _scheduler().advance(cid)
        return
    scheduler = _scheduler()
    queue = Queue(scheduler.settings["QUEUE_IO"], connection=job.connection)
    queue.enqueue_call(plan, args=(cid,), job_id=f"{cid}-replan-{uuid.uuid4().hex[:12]}",
                       depends_on=Dependency(jobs=[job], allow_failure=True), result_ttl=600)


def notify(record: dict) -> None:
    """POSTs the final status to the collation's ``callback_url``, if any (best effort, same URL policy)."""
    url = record["request"].get("callback_url")
    if not url:
        return
    import requests

    try:
        context.fetcher().check(url, what="callback URL")
        status_url = f"{record.get('base_url', '').rstrip('/')}/collations/{record['id']}"
        requests.post(url, json={"id": record["id"], "status": record["status"], "status_url": status_url},
                      timeout=10, allow_redirects=False)
    except (CollationError, requests.RequestException) as exc:
        log.warning("Collation %s: callback to %s failed: %s", record["id"], url, exc)


# --------------------------------------------------------------------------------------------------
# compute queue


@_quietly_gone
def extract_features(cid: str, m: int) -> str:
    """Describes the regions of manuscript ``m`` with the backbone, unless these features are cached."""
    store = context.store()
    record = _live_record(store, cid)
    doc = store.load_manuscript(cid, m)
    if not doc or not doc["regions"]:
        return "nothing to describe"
    path = store.features_path(doc["features_key"])
    if path.is_file():
        return "cached"
    n = len(record["request"]["manifests"])
    set_progress(store, cid, "features", _count_features(store, cid, n), n)
    images = [store.load_image(region["digest"]) for region in doc["regions"]]
    backbone = context.backbone(record["options"]["backbone"])
    from ..features import extract_features as extract

    feats = extract(images, backbone)
    _live_record(store, cid)
    feats.save(path)
    set_progress(store, cid, "features", _count_features(store, cid, n), n)
    return f"{len(images)} regions described"


def _count_features(store: DataStore, cid: str, n: int) -> int:
    docs = [store.load_manuscript(cid, m) for m in range(n)]
    return sum(bool(d and d["regions"] and store.features_path(d["features_key"]).is_file()) for d in docs)


@_quietly_gone
def score_chunk(cid: str, a: int, b: int, k: int) -> str:
    """Scores chunk ``k`` of the pairs (i, j) of manuscripts ``a`` and ``b`` (row-major order).

    Pair scores do not depend on chunking (``score_pairs`` draws RANSAC samples from a hash of the
    pair), so any worker can score any chunk, and a retried chunk gives the same numbers.
    """
    store = context.store()
    record = _live_record(store, cid)
    doc0, doc1 = store.load_manuscript(cid, a), store.load_manuscript(cid, b)
    options, chunk_pairs = record["options"], int(record["chunk_pairs"])
    key = pair_key(options, doc0["features_key"], doc1["features_key"])
    path = store.chunk_path(key, chunk_pairs, k)
    if path.is_file() or store.scores_path(key).is_file():
        return "cached"
    from ..similarity import all_pairs, score_pairs

    feats0, feats1 = context.features(doc0["features_key"]), context.features(doc1["features_key"])
    pairs = all_pairs(len(feats0), len(feats1))[k * chunk_pairs : (k + 1) * chunk_pairs]
    step = max(16, chunk_pairs // 8)  # check for cancellation a few times per chunk
    out = []
    for start in range(0, len(pairs), step):
        _live_record(store, cid)
        scores = score_pairs(feats0, feats1, pairs[start : start + step], similarity=options["similarity"],
                             seed=options["seed"], kernel=options["kernel"])
        out.append(np.asarray(scores, dtype=np.float64))
    from ..atomic import write_npy

    write_npy(path, np.concatenate(out))
    update_scoring_progress(store, cid)
    return f"{len(pairs)} pairs scored"


def update_scoring_progress(store: DataStore, cid: str) -> None:
    """Progress of the scoring stage: pairs whose scores are in the store, over all pairs."""
    try:
        record = store.load_record(cid)
    except CollationNotFound:
        return
    n = len(record["request"]["manifests"])
    docs = [store.load_manuscript(cid, m) for m in range(n)]
    failures = store.load_failures(cid)
    ready = [m for m, doc in enumerate(docs) if usable(doc) and f"features-{m}" not in failures]
    chunk_pairs = int(record["chunk_pairs"])
    done = total = 0
    for i, a in enumerate(ready):
        for b in ready[i + 1 :]:
            n0, n1 = len(docs[a]["regions"]), len(docs[b]["regions"])
            total += n0 * n1
            key = pair_key(record["options"], docs[a]["features_key"], docs[b]["features_key"])
            if store.scores_path(key).is_file():
                done += n0 * n1
            else:
                chunks = sum(store.chunk_path(key, chunk_pairs, k).is_file()
                             for k in range(chunk_count(n0, n1, chunk_pairs)))
                done += min(chunks * chunk_pairs, n0 * n1)
    set_progress(store, cid, "scoring", done, total)


def assemble_scores(store: DataStore, record: dict, doc0: dict, doc1: dict) -> np.ndarray | None:
    """The (n0, n1) score matrix of a pair from the store, joining its chunks when all are there."""
    key = pair_key(record["options"], doc0["features_key"], doc1["features_key"])
    matrix = store.load_scores(key)
    n0, n1 = len(doc0["regions"]), len(doc1["regions"])
    if matrix is not None:
        return matrix
    chunk_pairs = int(record["chunk_pairs"])
    parts = []
    for k in range(chunk_count(n0, n1, chunk_pairs)):
        try:
            parts.append(np.load(store.chunk_path(key, chunk_pairs, k), allow_pickle=False))
        except FileNotFoundError:
            return None
    matrix = np.concatenate(parts).reshape(n0, n1)
    from ..atomic import write_npy

    write_npy(store.scores_path(key), matrix)
    store.drop_chunks(key, chunk_pairs)
    return matrix


__all__ = ["extract_features", "fail", "finalize", "plan", "prepare_manuscript", "score_chunk"]

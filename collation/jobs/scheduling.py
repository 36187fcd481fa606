"""Which jobs a collation needs next, enqueued idempotently from what the data store already holds.

A collation runs as a graph of RQ jobs:

```text
prepare-<m> (io) ──▶ features-<m> (compute) ──▶ plan (io) ──▶ chunk-<a>-<b>-<k> (compute) ──▶ finalize (io)
```

``advance`` is the only function that enqueues. It looks at the store (the system of record), not at
Redis, to decide what is missing, and gives each job an id derived from the collation id and the
step, so calling it twice, from the API, from a job or from the recovery sweep, never runs a step
twice at once. Jobs that are still live in Redis are reused; those that are gone (a Redis restart)
or ended without their output (a killed worker whose retries ran out is recorded as a failure) are
enqueued again. Every dependency allows failure, so one bad manuscript cannot block the graph.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import math
import time
from collections.abc import Callable, Sequence
from itertools import combinations
from typing import Any

from redis import Redis
from rq import Callback, Queue, Retry
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Dependency, Job, JobStatus
from rq.registry import StartedJobRegistry
from rq.timeouts import TimerDeathPenalty

from .. import defaults
from ..store.datastore import CollationNotFound, DataStore, digest

log = logging.getLogger("collation.jobs")

TERMINAL = ("finished", "failed", "cancelled")
"""Statuses of a collation that no job changes any more."""

LIVE = (JobStatus.QUEUED, JobStatus.DEFERRED, JobStatus.STARTED, JobStatus.SCHEDULED)
"""RQ statuses of a job that will still run (or is running): never enqueue its step again."""

ID_LENGTH = 16


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def resolve_options(options: dict[str, Any] | None, settings: dict[str, Any]) -> dict[str, Any]:
    """Fills the options a request left out with the defaults, so equal collations get equal ids."""
    options = dict(options or {})
    return {
        "backbone": options.get("backbone") or settings["BACKBONE"],
        "similarity": options.get("similarity") or defaults.SIMILARITY,
        "normalization": options.get("normalization") or defaults.NORMALIZATION,
        "propagation": options.get("propagation") or defaults.PROPAGATION,
        "seed": int(options["seed"]) if options.get("seed") is not None else defaults.SEED,
        "kernel": defaults.KERNEL,
    }


def collation_id(manifests: Sequence[str], regions: dict | None, options: dict[str, Any]) -> str:
    """The id of a collation: a hash of its ordered manifests, its regions and its resolved options."""
    return digest({"manifests": list(manifests), "regions": regions or {}, "options": options}, ID_LENGTH)


def job_id(cid: str, step: str) -> str:
    return f"{cid}-{step}"


def jobs_key(cid: str) -> str:
    """Redis set of the ids of every job enqueued for a collation (to cancel them)."""
    return f"collation:jobs:{cid}"


# --------------------------------------------------------------------------------------------------
# Keys of cached work


def pair_key(options: dict[str, Any], features0: str, features1: str) -> str:
    """Key of a pair's score matrix: both feature sets (in order) and every scoring parameter."""
    return digest({"f0": features0, "f1": features1, "similarity": options["similarity"],
                   "seed": options["seed"], "kernel": options["kernel"],
                   "iterations": defaults.RANSAC_ITERATIONS, "v": 1})


def chunk_count(n0: int, n1: int, chunk_pairs: int) -> int:
    return max(1, math.ceil(n0 * n1 / chunk_pairs))


def usable(doc: dict | None) -> bool:
    """A prepared manuscript with at least one region image."""
    return bool(doc and doc.get("regions") and doc.get("features_key"))


# --------------------------------------------------------------------------------------------------
# Records


def set_progress(store: DataStore, cid: str, stage: str, done: int, total: int, status: str = "running") -> None:
    """Stores the progress of a running collation (no-op once it ended or was deleted)."""

    def change(record: dict) -> None:
        if record["status"] in TERMINAL:
            return
        record["status"] = status
        record["progress"] = {"stage": stage, "done": int(done), "total": int(total)}
        record["updated"] = now()

    with contextlib.suppress(CollationNotFound):
        store.update_record(cid, change)


def fail(store: DataStore, cid: str, message: str) -> dict | None:
    """Ends a collation as failed with ``message``; returns the record (None if it is gone)."""

    def change(record: dict) -> None:
        if record["status"] in TERMINAL:
            return
        record["status"] = "failed"
        record["errors"] = [*record.get("errors", []), {"message": message}]
        record["updated"] = record["ended"] = now()

    try:
        return store.update_record(cid, change)
    except CollationNotFound:
        return None


# --------------------------------------------------------------------------------------------------
# Enqueueing


def on_job_failure(job: Job, connection: Redis, exc_type: Any, exc_value: Any, tb: Any) -> None:
    """RQ failure callback: once no retry is left, the step's failure goes into the store.

    The store keeps it across Redis restarts, so ``advance`` settles the step (an unreadable
    manuscript, a failed collation) instead of running it forever.
    """
    if job.should_retry:
        return
    from . import context

    cid, step = job.meta.get("collation"), job.meta.get("step")
    if cid and step:
        message = f"{exc_type.__name__}: {exc_value}" if exc_type else "the job failed"
        store = context.store()
        store.record_failure(cid, step, message)
        log.warning("Collation %s: step %s failed for good: %s", cid, step, message)
        if not step.startswith(("prepare-", "features-")):  # a manuscript can be left out, a pair cannot
            fail(store, cid, f"step {step} failed: {message}")


class Scheduler:
    """Enqueues the steps of collations on the io and compute queues of one Redis."""

    def __init__(self, connection: Redis, store: DataStore, settings: dict[str, Any]) -> None:
        self.connection = connection
        self.store = store
        self.settings = settings
        self.io = Queue(settings["QUEUE_IO"], connection=connection)
        self.compute = Queue(settings["QUEUE_COMPUTE"], connection=connection)
        self._queued: dict[str, set[str]] = {}

    def ensure(self, queue: Queue, func: Callable, cid: str, step: str, args: tuple,
               depends_on: Sequence[Job | None] = ()) -> Job:
        """The live job of ``step``, or a new one when there is none (gone, or ended without output)."""
        jid = job_id(cid, step)
        try:
            job = Job.fetch(jid, connection=self.connection)
            if job.get_status(refresh=False) in LIVE and not self._stuck(job, queue):
                if job.get_status(refresh=False) == JobStatus.DEFERRED:
                    job.register_dependency()  # idempotent; needed when a parent was enqueued again
                return job
            job.delete(remove_from_queue=True)
        except (NoSuchJobError, InvalidJobOperation):
            pass
        parents = [p for p in depends_on if p is not None]
        retries = int(self.settings["JOB_RETRIES"])
        job = queue.enqueue_call(
            func,
            args=args,
            job_id=jid,
            description=f"collation {cid}: {step}",
            depends_on=Dependency(jobs=parents, allow_failure=True) if parents else None,
            timeout=int(self.settings["JOB_TIMEOUT"]),
            result_ttl=3600,
            failure_ttl=7 * 86400,
            retry=Retry(max=retries) if retries > 0 else None,
            on_failure=Callback(on_job_failure),
            meta={"collation": cid, "step": step},
        )
        self.connection.sadd(jobs_key(cid), jid)
        return job

    def _queued_ids(self, queue: Queue) -> set[str]:
        if queue.name not in self._queued:
            self._queued[queue.name] = set(queue.get_job_ids()) | set(queue.intermediate_queue.get_job_ids())
        return self._queued[queue.name]

    def _stuck(self, job: Job, queue: Queue) -> bool:
        """Whether a job that claims to be live will never run: queued but in no queue (its worker died
        while dequeuing it), started with no execution (state lost), or deferred on dependencies
        that all ended (its parent's worker died before enqueueing its dependents).

        A job is declared stuck only when a sweep at least ``HEARTBEAT_TTL`` seconds after the first
        found it so, never on a single look (a worker may be between two of those steps).
        """
        status = job.get_status(refresh=False)
        if status == JobStatus.QUEUED:
            healthy = job.id in self._queued_ids(queue)
        elif status == JobStatus.STARTED:
            registry = StartedJobRegistry(queue.name, connection=self.connection)
            healthy = any(entry.split(":", 1)[0] == job.id for entry in registry.get_job_ids(cleanup=False))
        elif status == JobStatus.DEFERRED:
            parents = [Job.fetch(d, connection=self.connection) if Job.exists(d, self.connection) else None
                       for d in job._dependency_ids]
            healthy = any(p is not None and p.get_status(refresh=False) in LIVE for p in parents)
        else:
            healthy = True
        key = f"collation:suspect:{job.id}"
        if healthy:
            return False
        ttl = int(self.settings["HEARTBEAT_TTL"])
        if self.connection.set(key, time.time(), nx=True, ex=ttl * 20):
            return False
        first = float(self.connection.get(key) or time.time())
        if time.time() - first < ttl:
            return False
        self.connection.delete(key)
        log.warning("Job %s: %s but stuck; enqueued again", job.id, status)
        return True

    def advance(self, cid: str) -> str:
        """Enqueues whatever the collation needs next; returns a word saying what it did.

        Under a Redis lock per collation, so that jobs finishing together and the sweep agree.
        """
        with self.connection.lock(f"collation:advance:{cid}", timeout=120, blocking_timeout=120):
            self._queued = {}
            try:
                return self._advance(cid)
            except CollationNotFound:
                return "gone"

    def _advance(self, cid: str) -> str:
        from . import tasks

        store = self.store
        record = store.load_record(cid)
        if record["status"] in TERMINAL:
            return record["status"]
        failures = store.load_failures(cid)
        n = len(record["request"]["manifests"])

        # 1. Manuscripts: prepare (io), then features (compute).
        pending: list[Job] = []
        docs: list[dict | None] = []
        for m in range(n):
            doc = store.load_manuscript(cid, m)
            docs.append(doc)
            if doc is None and f"prepare-{m}" not in failures:
                prepare = self.ensure(self.io, tasks.prepare_manuscript, cid, f"prepare-{m}", (cid, m))
                features = self.ensure(self.compute, tasks.extract_features, cid, f"features-{m}", (cid, m),
                                       depends_on=[prepare])
                pending += [prepare, features]
            elif (doc and doc.get("regions") and not store.features_path(doc["features_key"]).is_file()
                  and f"features-{m}" not in failures):
                pending.append(self.ensure(self.compute, tasks.extract_features, cid, f"features-{m}", (cid, m)))
        if pending:
            self.ensure(self.io, tasks.plan, cid, "plan", (cid,), depends_on=pending)
            return "preparing"

        ready = [m for m, doc in enumerate(docs) if usable(doc) and f"features-{m}" not in failures]
        if len(ready) < 2:
            fail(store, cid, f"fewer than two manuscripts could be read ({len(ready)} of {n})")
            return "failed"

        # 2. Pair scores, in chunks (compute).
        chunk_pairs = int(record["chunk_pairs"])
        chunks: list[Job] = []
        for a, b in combinations(ready, 2):
            key = pair_key(record["options"], docs[a]["features_key"], docs[b]["features_key"])
            if store.scores_path(key).is_file():
                continue
            for k in range(chunk_count(len(docs[a]["regions"]), len(docs[b]["regions"]), chunk_pairs)):
                step = f"chunk-{a}-{b}-{k}"
                if store.chunk_path(key, chunk_pairs, k).is_file():
                    continue
                if step in failures:
                    fail(store, cid, f"scoring manuscripts {a} and {b} failed: {failures[step]}")
                    return "failed"
                chunks.append(self.ensure(self.compute, tasks.score_chunk, cid, step, (cid, a, b, k)))

        tasks.update_scoring_progress(store, cid)

        # 3. Normalize, propagate, write results (io).
        if "finalize" in failures:
            fail(store, cid, f"finalizing failed: {failures['finalize']}")
            return "failed"
        self.ensure(self.io, tasks.finalize, cid, "finalize", (cid,), depends_on=chunks)
        return "scoring" if chunks else "finalizing"

    def submit(self, record: dict) -> tuple[dict, bool]:
        """Stores a new collation (or finds the same one) and enqueues its first steps.

        A collation that failed is tried again: its recorded step failures are dropped.

        Returns:
            (record, created)
        """
        created = self.store.create_collation(record)
        if not created:
            def retry(rec: dict) -> None:
                if rec["status"] == "failed":
                    rec.update(status="queued", errors=[], ended=None, updated=now(),
                               progress={"stage": "queued", "done": 0, "total": 0})

            record = self.store.update_record(record["id"], retry)
            if record["status"] == "queued":
                self.store.clear_failures(record["id"])
        self.advance(record["id"])
        return self.store.load_record(record["id"]), created

    def cancel(self, cid: str) -> bool:
        """Stops a collation and deletes it: queued jobs are dropped, running ones stop at their next
        check of the store, cached features and scores stay. False when there was no such collation."""
        if not self.store.exists(cid):
            return False
        try:
            self.store.update_record(cid, lambda r: r.update(status="cancelled", updated=now()))
        except CollationNotFound:
            return False
        for raw in self.connection.smembers(jobs_key(cid)):
            jid = raw.decode() if isinstance(raw, bytes) else raw
            try:
                job = Job.fetch(jid, connection=self.connection)
            except NoSuchJobError:
                continue
            if job.get_status(refresh=False) != JobStatus.STARTED:
                job.delete(remove_from_queue=True)
        self.connection.delete(jobs_key(cid))
        return self.store.delete_collation(cid)

    def recover(self) -> int:
        """Makes every unfinished collation in the store progress again; returns how many.

        Run when the service starts and then periodically: it hands jobs of dead workers back to
        their queues (RQ's abandoned-job handling, with retries) and re-enqueues the steps Redis lost.
        """
        for queue in (self.io, self.compute):
            # The timer penalty bounds failure callbacks from any thread (the service sweeps in one).
            StartedJobRegistry(queue.name, connection=self.connection,
                               death_penalty_class=TimerDeathPenalty).cleanup()
        count = 0
        for cid in self.store.list_collations():
            try:
                record = self.store.load_record(cid)
            except CollationNotFound:
                continue
            if record["status"] not in TERMINAL:
                self.advance(cid)
                count += 1
        return count


def new_record(cid: str, request: dict[str, Any], options: dict[str, Any], settings: dict[str, Any]) -> dict:
    """The first record of a collation."""
    return {
        "id": cid,
        "created": now(),
        "updated": now(),
        "ended": None,
        "request": request,
        "options": options,
        "chunk_pairs": int(settings["CHUNK_PAIRS"]),
        "status": "queued",
        "progress": {"stage": "queued", "done": 0, "total": len(request["manifests"])},
        "errors": [],
    }

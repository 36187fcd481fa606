"""The scheduler: enqueues, idempotently, the steps ``planning.next_steps`` says a collation needs.

``Scheduler.advance`` is the only way steps get enqueued. It reads the store (the system of record,
not Redis), asks the pure planner, and makes sure each planned step has a live RQ job whose id
derives from the collation id and the step (``RedisKeys.job_id``), so calling it twice, from the
API, from a job or from the recovery sweep, never runs a step twice at once. Jobs still live in
Redis are reused; those that are gone (a Redis restart), ended without their output (a killed
worker whose retries ran out is recorded as a failure) or stuck are enqueued again. Every
dependency allows failure, so one bad manuscript cannot block the graph.

Job functions are enqueued by their dotted path (``collation.jobs.tasks.<name>``): the tasks import
this module, never the other way round.

Longer than 400 lines because submit, cancel, advance, the callback job and the stuck-job detection
share one discipline of locks and one set of RQ workarounds, which read best in one place.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from redis import Redis
from redis.exceptions import LockError
from rq import Callback, Queue, Retry
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.executions import Execution, ExecutionRegistry
from rq.job import Dependency, Job, JobStatus
from rq.registry import StartedJobRegistry
from rq.timeouts import TimerDeathPenalty

from collation.core.errors import CollationError, StoreFormatError
from collation.core.settings import Settings
from collation.core.vocabulary import CollationStatus
from collation.jobs.planning import Plan, next_steps, scoring_progress
from collation.jobs.runtime import Runtime, activate, current
from collation.store import sharing, writable
from collation.store.datastore import CollationNotFound, DataStore
from collation.store.records import CollationRecord
from collation.store.redis_keys import RedisKeys
from collation.store.stepnames import Step, StepKind
from collation.store.transitions import cancel as mark_cancelled
from collation.store.transitions import fail, reopen, set_progress

log = logging.getLogger("collation.jobs")

LIVE = (JobStatus.QUEUED, JobStatus.DEFERRED, JobStatus.STARTED, JobStatus.SCHEDULED)
"""RQ statuses of a job that will still run (or is running): never enqueue its step again."""

TASKS = {
    StepKind.PREPARE: "collation.jobs.tasks.prepare_manuscript",
    StepKind.FEATURES: "collation.jobs.tasks.compute_features",
    StepKind.PLAN: "collation.jobs.tasks.plan",
    StepKind.CHUNK: "collation.jobs.tasks.score_chunk",
    StepKind.FINALIZE: "collation.jobs.tasks.finalize",
}
"""The RQ job function of each kind of step, by dotted path; it is called as ``f(cid, *step.args)``."""

RESULT_TTL = 3600
"""Seconds RQ keeps a finished job (its dependents may still be enqueued meanwhile)."""
FAILURE_TTL = 7 * 86400
"""Seconds RQ keeps a failed job, for inspection."""
CALLBACK_TASK = "collation.jobs.tasks.send_callback"
"""The job function that POSTs a finished collation's status to its ``callback_url``."""
CALLBACK_RETRY_INTERVALS = (5, 20, 60)
"""Seconds before each retry of a callback that failed; the workers' registry maintenance (every
``heartbeat_ttl`` seconds) enqueues retries that are due, so a retry may come a little later."""
ADVANCE_LOCK_TIMEOUT = 120
"""Seconds an ``advance`` may hold (and wait for) the collation's lock."""
REQUEST_LOCK_TIMEOUT = 60
"""Seconds a POST or DELETE may hold the collation's request lock."""
REQUEST_LOCK_WAIT = 20
"""Seconds a POST or DELETE waits for the request lock before answering 409."""


class CollationBusy(CollationError):
    """Another request on the same collation held it too long (a 409: try again)."""

    http_status = 409


# --------------------------------------------------------------------------------------------------
# Reading the store


def plan_from_store(store: DataStore, record: CollationRecord) -> Plan:
    """``next_steps`` over what the store holds for ``record``'s collation."""
    cid, n = record.id, record.manuscript_count
    docs = [store.load_manuscript(cid, m) for m in range(n)]
    return next_steps(
        record, docs, store.load_failures(cid), store.has_features, store.has_scores, store.has_chunk, store.pair_count
    )


def update_scoring_progress(store: DataStore, cid: str) -> None:
    """Progress of the scoring stage: pairs whose scores are in the store, over all pairs."""
    try:
        record = store.load_record(cid)
    except CollationNotFound:
        return
    docs = [store.load_manuscript(cid, m) for m in range(record.manuscript_count)]
    done, total = scoring_progress(
        record, docs, store.load_failures(cid), store.has_scores, store.has_chunk, store.pair_count
    )
    set_progress(store, cid, "scoring", done, total)


# --------------------------------------------------------------------------------------------------
# Deleting jobs


def drop_dangling_executions(connection: Redis, job: Job) -> int:
    """Removes the executions of a job whose data expired but whose registry entries did not.

    RQ keeps an execution's hash for its heartbeat TTL but its entry in the job's execution registry
    a minute longer; a job retried after its worker died (abandoned) keeps such an entry, and RQ's
    ``Job.delete`` then fails with "Execution ... not found". Returns how many were dropped.
    """
    registry = ExecutionRegistry(job_id=job.id, connection=connection)
    started = StartedJobRegistry(job.origin, connection=connection)
    dropped = 0
    for raw in connection.zrange(registry.key, 0, -1):
        execution = Execution(id=raw.decode() if isinstance(raw, bytes) else raw, job_id=job.id, connection=connection)
        if not connection.exists(execution.key):
            connection.zrem(registry.key, execution.id)
            connection.zrem(started.key, execution.composite_key)
            dropped += 1
    return dropped


def delete_job(connection: Redis, job: Job) -> None:
    """Deletes a job that is not running, and its id from its parents' dependents, in one transaction.

    Removing the id from the parents' dependents sets makes a parent that is finishing right now
    (RQ watches that set while it moves dependents to ready) start again without it, instead of
    writing ``status`` into the deleted job's hash: such a remnant (a hash with a status and no
    data) made every worker's registry maintenance fail with NoSuchJobError.
    """
    for attempt in range(DELETE_ATTEMPTS):
        drop_dangling_executions(connection, job)
        try:
            with connection.pipeline() as pipe:
                for parent in job.dependency_ids:
                    pipe.srem(Job.dependents_key_for(parent), job.id)
                job.delete(pipeline=pipe, remove_from_queue=True)
                pipe.execute()
            return
        except ValueError:
            # RQ reads each listed execution while it queues the delete, and raises ValueError for one
            # whose hash is gone: an execution that ended between the cleanup above and that read.
            # Nothing was written (the pipeline never ran): clean up again and retry.
            if attempt == DELETE_ATTEMPTS - 1:
                raise


DELETE_ATTEMPTS = 3
"""Tries of ``delete_job`` when executions of the job end while it is being deleted."""


def deletion_order(cid: str, job_ids: Sequence[str]) -> list[str]:
    """The job ids of a collation with dependents before their parents (callback, finalize, chunks,
    plan, features, prepare): a worker that finishes a job while they are deleted then never reads a
    parent already deleted of a dependent still there (RQ fails with InvalidJobOperation)."""
    kinds = list(StepKind)

    def rank(jid: str) -> int:
        try:
            return -kinds.index(Step.parse(jid.removeprefix(f"{cid}-")).kind)
        except ValueError:  # the callback: no step, depended on by nothing
            return -len(kinds)

    return sorted(job_ids, key=rank)


# --------------------------------------------------------------------------------------------------
# The failure callback


def on_job_failure(job: Job, connection: Redis, exc_type: Any, exc_value: Any, tb: Any) -> None:
    """RQ failure callback: once no retry is left, the step's failure goes into the store.

    The store keeps it across Redis restarts, so ``advance`` settles the step (an unreadable
    manuscript, a failed collation) instead of running it forever. It runs in a worker or in the
    sweep of the API, both inside ``activate(runtime)``.
    """
    if job.should_retry:
        return
    cid, name = job.meta.get("collation"), job.meta.get("step")
    if not (cid and name):
        return
    step = Step.parse(name)
    message = f"{exc_type.__name__}: {exc_value}" if exc_type else "the job failed"
    store = current().store
    if exc_value is not None and writable.is_store_error(exc_value):
        # Not the step's fault, and its failure could not be written either: the step stays
        # unfinished, and the sweep enqueues it again (backing off) once the store can be written.
        writable.remember(connection, writable.describe(exc_value))
        log.warning("Collation %s: step %s left for later: %s", cid, step, writable.describe(exc_value))
        return
    try:
        store.record_failure(cid, step, message)
        if not step.kind.per_manuscript:  # a manuscript can be left out, a pair cannot
            fail(store, cid, f"step {step} failed: {message}")
    except OSError as exc:
        if not writable.is_store_error(exc):
            raise
        writable.remember(connection, writable.describe(exc))
        log.warning("Collation %s: the failure of step %s cannot be stored: %s", cid, step, writable.describe(exc))
        return
    log.warning("Collation %s: step %s failed for good: %s", cid, step, message)


# --------------------------------------------------------------------------------------------------


class Scheduler:
    """Enqueues the steps of collations on the io and compute queues of a runtime's Redis.

    Args:
        runtime: the process's runtime (settings, store, Redis).
        clock: seconds since the epoch; the stuck-job detection measures time with it (tests).
    """

    def __init__(self, runtime: Runtime, clock: Callable[[], float] = time.time) -> None:
        self.runtime = runtime
        self.clock = clock
        self._queued: dict[str, set[str]] = {}

    @property
    def settings(self) -> Settings:
        return self.runtime.settings

    @property
    def store(self) -> DataStore:
        return self.runtime.store

    @property
    def connection(self) -> Redis:
        return self.runtime.connection()

    # ----------------------------------------------------------------------------------------------
    # The API's three calls

    def submit(self, record: CollationRecord) -> tuple[CollationRecord, bool]:
        """Stores a new collation (or finds the same one) and enqueues its first steps.

        A collation that failed is tried again: its recorded step failures are dropped. One left
        cancelled (a DELETE that did not get to the end, e.g. Redis failed meanwhile) is deleted and
        created again.

        Under the collation's request lock, which ``cancel`` holds too: a DELETE at the same instant
        either deletes it before (then it is created again) or after (then it is gone).

        Returns:
            (record, created)

        Raises:
            CollationBusy: the lock was not free within ``REQUEST_LOCK_WAIT`` seconds (409).
        """
        with self._request_lock(record.id):
            return self._submit(record)

    def retry(self, cid: str, check: Callable[[CollationRecord], None]) -> CollationRecord:
        """Reopens a failed collation and enqueues its steps again (``POST /collations/{id}/retry``): read,
        ``check``-ed (it raises when it may not be retried) and reopened under the request lock ``cancel``
        holds, so a retry racing a DELETE finds the collation gone, never writes it back. Raises
        ``CollationNotFound`` (also when deleted meanwhile) or ``CollationBusy`` (the lock, 409)."""
        with self._request_lock(cid):
            record = self.store.load_record(cid)
            check(record)
            return self._submit(record)[0]

    def _submit(self, record: CollationRecord) -> tuple[CollationRecord, bool]:
        created = self.store.create_collation(record)
        if not created and reopen(self.store, record.id).status == CollationStatus.CANCELLED:
            self.store.delete_collation(record.id)
            created = self.store.create_collation(record)
            if not created:  # another request re-created it meanwhile: the same collation
                reopen(self.store, record.id)
        self.advance(record.id)
        return self.store.load_record(record.id), created

    def cancel(self, cid: str) -> bool:
        """Stops a collation and deletes it: queued jobs are dropped, running ones stop at their next
        check of the store, cached features and scores stay. False when there was no such collation.

        Under the collation's request lock (see ``submit``). A job that a worker starts while it is
        deleted is left to that worker: it stops at its next check of the store.

        Raises:
            CollationBusy: the lock was not free within ``REQUEST_LOCK_WAIT`` seconds (409).
        """
        with self._request_lock(cid):
            if not self.store.exists(cid) or not mark_cancelled(self.store, cid):
                return False
            members = self.connection.smembers(RedisKeys.jobs(cid))
            for jid in deletion_order(cid, [raw.decode() if isinstance(raw, bytes) else raw for raw in members]):
                try:
                    job = Job.fetch(jid, connection=self.connection)
                    if job.get_status(refresh=False) != JobStatus.STARTED:
                        delete_job(self.connection, job)
                except (NoSuchJobError, InvalidJobOperation):
                    continue  # gone meanwhile, or started and then deleted under its worker
            self.connection.delete(RedisKeys.jobs(cid))
            return self.store.delete_collation(cid)

    @contextlib.contextmanager
    def _request_lock(self, cid: str) -> Iterator[None]:
        lock = self.connection.lock(
            RedisKeys.request_lock(cid), timeout=REQUEST_LOCK_TIMEOUT, blocking_timeout=REQUEST_LOCK_WAIT
        )
        if not lock.acquire():
            raise CollationBusy(f"another request on collation {cid} is in progress; try again", field="id")
        try:
            yield
        finally:
            with contextlib.suppress(LockError):
                lock.release()

    def recover(self) -> int:
        """Makes every unfinished collation in the store progress again; returns how many.

        Run when the service starts and then periodically: it hands jobs of dead workers back to
        their queues (RQ's abandoned-job handling, with retries) and re-enqueues the steps Redis lost.
        """
        with activate(self.runtime):  # the failure callbacks of abandoned jobs read the store
            for kind in ("io", "compute"):
                # The timer penalty bounds failure callbacks from any thread (the service sweeps in one).
                StartedJobRegistry(
                    self.runtime.queue(kind).name, connection=self.connection, death_penalty_class=TimerDeathPenalty
                ).cleanup()
        sharing.publish(self.store, self.connection)  # the store every worker must use
        count = 0
        for cid in self.store.list_collations():
            try:
                record = self.store.load_record(cid)
            except CollationNotFound:
                continue
            except StoreFormatError as exc:  # one damaged record never stops the others' recovery
                log.debug("Collation %s is not recovered: %s", cid, exc.message)  # the listing warns
                continue
            if record.terminal:
                continue
            reason = sharing.reported(self.connection, cid)
            if reason is not None:  # a worker cannot see this store: advancing again would loop
                fail(self.store, cid, reason)
                continue
            self.advance(cid)
            count += 1
        return count

    # ----------------------------------------------------------------------------------------------
    # Planning and enqueueing

    def advance(self, cid: str) -> str:
        """Enqueues whatever the collation needs next; returns a word saying what it did (the plan's
        stage, or ``gone``).

        Under a Redis lock per collation, so that jobs finishing together and the sweep agree.
        """
        with self.connection.lock(
            RedisKeys.advance_lock(cid), timeout=ADVANCE_LOCK_TIMEOUT, blocking_timeout=ADVANCE_LOCK_TIMEOUT
        ):
            self._queued = {}
            try:
                return self._advance(cid)
            except CollationNotFound:
                return "gone"

    def _advance(self, cid: str) -> str:
        record = self.store.load_record(cid)
        plan = plan_from_store(self.store, record)
        if plan.failure is not None:
            fail(self.store, cid, plan.failure)
            return plan.stage
        jobs: dict[Step, Job] = {}
        for planned in plan.steps:
            if planned.step == Step.finalize():  # progress of what the chunks left, before the last step
                update_scoring_progress(self.store, cid)
            jobs[planned.step] = self.ensure(cid, planned.step, [jobs[s] for s in planned.after if s in jobs])
        return plan.stage

    def replan_after(self, cid: str, job: Job | None) -> str:
        """Plans the collation again once ``job`` (the running one) ended; at once without a job.

        ``finalize`` calls it when chunks are missing: while it runs, ``advance`` would reuse it
        rather than enqueue a new one. The ``plan`` step goes in the collation's job set like
        every step, so cancelling the collation deletes it.
        """
        if job is None:
            return self.advance(cid)
        with self.connection.lock(
            RedisKeys.advance_lock(cid), timeout=ADVANCE_LOCK_TIMEOUT, blocking_timeout=ADVANCE_LOCK_TIMEOUT
        ):
            self._queued = {}
            self.ensure(cid, Step.plan(), [job], reuse_live=False)
        return "replanning"

    def ensure(self, cid: str, step: Step, depends_on: Sequence[Job] = (), *, reuse_live: bool = True) -> Job:
        """The live job of ``step``, or a new one when there is none (gone, ended without output,
        stuck, or ``reuse_live`` is False)."""
        queue = self.runtime.queue(step.kind.queue)
        jid = RedisKeys.job_id(cid, step.name)
        try:
            job = Job.fetch(jid, connection=self.connection)
            if reuse_live and job.get_status(refresh=False) in LIVE and not self._stuck(job, queue):
                if job.get_status(refresh=False) == JobStatus.DEFERRED:
                    job.register_dependency()  # idempotent; needed when a parent was enqueued again
                return job
            delete_job(self.connection, job)
        except (NoSuchJobError, InvalidJobOperation):
            pass
        job = self._enqueue(queue, cid, step, jid, depends_on)
        self.connection.sadd(RedisKeys.jobs(cid), jid)
        return job

    def _enqueue(self, queue: Queue, cid: str, step: Step, jid: str, depends_on: Sequence[Job]) -> Job:
        retries = self.settings.workers.job_retries
        return queue.enqueue_call(
            TASKS[step.kind],
            args=(cid, *step.args),
            job_id=jid,
            description=f"collation {cid}: {step}",
            depends_on=Dependency(jobs=list(depends_on), allow_failure=True) if depends_on else None,
            timeout=self.settings.workers.job_timeout,
            result_ttl=RESULT_TTL,
            failure_ttl=FAILURE_TTL,
            retry=Retry(max=retries) if retries > 0 else None,
            on_failure=Callback(on_job_failure),
            meta={"collation": cid, "step": step.name},
            # A client's only collation goes first (service.quotas): one client's flood cannot starve it.
            at_front=bool(self.connection.exists(RedisKeys.light(cid))),
        )

    def enqueue_callback(self, record: CollationRecord) -> Job:
        """Enqueues the ``callback`` job of a finished collation on the io queue: one POST of its
        status within ``callback_timeout`` seconds, retried after ``CALLBACK_RETRY_INTERVALS``."""
        cid = record.id
        status_url = f"{(record.base_url or '').rstrip('/')}/collations/{cid}"
        payload = {"id": cid, "status": record.status.value, "status_url": status_url}
        jid = RedisKeys.job_id(cid, "callback")
        job = self.runtime.queue("io").enqueue_call(
            CALLBACK_TASK,
            args=(cid, record.request.callback_url, payload),
            job_id=jid,
            description=f"collation {cid}: callback",
            timeout=int(self.settings.workers.callback_timeout) + 10,
            result_ttl=RESULT_TTL,
            failure_ttl=FAILURE_TTL,
            retry=Retry(max=len(CALLBACK_RETRY_INTERVALS), interval=list(CALLBACK_RETRY_INTERVALS)),
        )
        self.connection.sadd(RedisKeys.jobs(cid), jid)
        return job

    # ----------------------------------------------------------------------------------------------
    # Stuck jobs

    def _queued_ids(self, queue: Queue) -> set[str]:
        if queue.name not in self._queued:
            self._queued[queue.name] = set(queue.get_job_ids()) | set(queue.intermediate_queue.get_job_ids())
        return self._queued[queue.name]

    def _healthy(self, job: Job, queue: Queue) -> bool:
        """Whether a job that claims to be live can still run: queued and in its queue, started with an
        execution in the registry, or deferred on a dependency that is itself live."""
        status = job.get_status(refresh=False)
        if status == JobStatus.QUEUED:
            return job.id in self._queued_ids(queue)
        if status == JobStatus.STARTED:
            registry = StartedJobRegistry(queue.name, connection=self.connection)
            return any(entry.split(":", 1)[0] == job.id for entry in registry.get_job_ids(cleanup=False))
        if status == JobStatus.DEFERRED:
            return any(parent.get_status(refresh=False) in LIVE for parent in job.fetch_dependencies())
        return True

    def _stuck(self, job: Job, queue: Queue) -> bool:
        """Whether a job that claims to be live will never run: queued but in no queue (its worker died
        while dequeuing it), started with no execution (state lost), or deferred on dependencies
        that all ended (its parent's worker died before enqueueing its dependents).

        A job is declared stuck only when a look at least ``heartbeat_ttl`` seconds (of ``clock``)
        after the first found it so, never on a single look (a worker may be between two of those
        steps).
        """
        if self._healthy(job, queue):
            return False
        key, ttl = RedisKeys.suspect(job.id), self.settings.workers.heartbeat_ttl
        if self.connection.set(key, self.clock(), nx=True, ex=ttl * 20):
            return False
        first = float(self.connection.get(key) or self.clock())
        if self.clock() - first < ttl:
            return False
        self.connection.delete(key)
        log.warning("Job %s: %s but stuck; enqueued again", job.id, job.get_status(refresh=False))
        return True

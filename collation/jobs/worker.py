"""An RQ worker that does not fork, keeps its models between jobs and is found dead quickly.

RQ's default worker forks a process per job: the backbone would be reloaded for every job, and CUDA
does not survive a fork. ``CollationWorker`` is a ``SimpleWorker`` (jobs run in the worker process,
inside ``activate(runtime)``, whose runtime caches the backbone and features) with two additions:

- a heartbeat thread keeps the running job's entry in RQ's StartedJobRegistry alive for
  ``heartbeat_ttl`` seconds at a time (a plain SimpleWorker registers it for the job's whole timeout
  and never renews it), so the job of a worker killed with SIGKILL is abandoned after at most
  ``heartbeat_ttl`` seconds instead of an hour;
- registry maintenance (which hands abandoned jobs back to their queue, using their retries) runs
  every ``heartbeat_ttl`` seconds, and an idle worker wakes up that often to do it; it first drops
  job remnants (a hash with no data, from a job deleted while its parent finished) and enqueues the
  scheduled retries that are due (callbacks back off; RQ's scheduler would fork), and an error in
  it is logged, never the end of the work loop;
- each job runs inside ``log_context`` (its collation id, job id and step on every line it logs) and,
  when the process counts (``COLLATION_WORKER_METRICS_PORT``), is counted by step kind and outcome
  with its duration (``collation_jobs_total``, ``collation_job_duration_seconds``); RQ's
  "result is kept" line is not logged.

``work`` runs the worker in a loop that is started again (with a capped back-off) whatever ended it
short of a requested stop: Redis down for any length of time, or an error in RQ's own loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

import redis
from rq import Queue, SimpleWorker
from rq.exceptions import NoSuchJobError
from rq.executions import Execution
from rq.job import Job, JobStatus
from rq.registry import DeferredJobRegistry, ReadyJobRegistry
from rq.utils import now as utcnow
from rq.worker import WorkerStatus

from collation.core.allocator import keep_freed_memory
from collation.core.logs import log_context
from collation.core.metrics import JobOutcome, Metrics
from collation.core.settings import Settings
from collation.jobs.runtime import Runtime, activate
from collation.jobs.tasks import StoreRefused, refusal
from collation.store import sharing
from collation.store.objects import StoreUnavailable
from collation.store.stepnames import StepKind

log = logging.getLogger("collation.jobs.worker")

RESTART_DELAY = 1.0
"""Seconds before a worker loop that ended on an error starts again, doubled at each failed start."""
MAX_RESTART_DELAY = 4.0
"""Longest wait between two starts of the worker loop (Redis down for long)."""
STABLE_AFTER = 30.0
"""Seconds a loop must have run for the next restart to wait ``RESTART_DELAY`` again."""


class CollationWorker(SimpleWorker):
    """SimpleWorker with short, renewed job heartbeats (see the module docstring).

    Args:
        queues: the queues (names or ``Queue``) to listen on.
        runtime: made current around the work loop, so jobs and their failure callbacks (which
            also run during registry maintenance) find the store and the models.
        heartbeat_ttl: seconds; ``runtime.settings.workers.heartbeat_ttl`` by default.
    """

    log_result_lifespan = False  # RQ's "job ... result is kept for 500 seconds" after every job

    def __init__(
        self, queues: Any, *args: Any, runtime: Runtime, heartbeat_ttl: int | None = None, **kwargs: Any
    ) -> None:
        self.runtime = runtime
        self.heartbeat_ttl = max(
            3, int(heartbeat_ttl if heartbeat_ttl is not None else runtime.settings.workers.heartbeat_ttl)
        )
        self.stop_requested = False
        kwargs.setdefault("worker_ttl", self.heartbeat_ttl + 16)  # an idle worker wakes every ttl + 1 s
        kwargs.setdefault("maintenance_interval", self.heartbeat_ttl)
        kwargs.setdefault("job_monitoring_interval", max(1, self.heartbeat_ttl // 3))
        super().__init__(queues, *args, **kwargs)

    def work(self, *args: Any, **kwargs: Any) -> bool:
        store = self.runtime.store
        try:
            sharing.register(store, self.runtime.redis, self.name)  # says so when it is not the API's store
        except OSError as exc:  # the store is unreachable: jobs will say so, and be retried
            log.error("Worker %s: %s", self.name, exc)
        try:
            with activate(self.runtime):
                return super().work(*args, **kwargs)
        finally:
            downloaded = getattr(store, "downloaded", None)  # an object store counts what it sent us
            if downloaded is not None:
                log.info("Worker %s: %d bytes downloaded from the %s", self.name, downloaded, store.description)

    def handle_warm_shutdown_request(self) -> None:
        # RQ calls this on SIGINT/SIGTERM and on a shutdown command, whether a job runs or not;
        # ``work()`` uses it to tell a requested stop from a loop that ended on a Redis error.
        self.stop_requested = True
        super().handle_warm_shutdown_request()

    def heartbeat(self, timeout: int | None = None, pipeline: Any = None) -> None:
        # A Redis restarted without persistence forgot this worker: register it again, or /readyz
        # reports no worker while this one works on.
        if pipeline is None and not self.connection.hexists(self.key, "birth"):
            log.warning("Worker %s: unknown to Redis (restarted?), registering again", self.name)
            self.connection.delete(self.key)
            self.register_birth()
        super().heartbeat(timeout, pipeline)

    def run_maintenance_tasks(self) -> None:
        try:
            for queue in self.queues:
                drop_job_remnants(self.connection, queue)
                enqueue_due_jobs(self.connection, queue)
            super().run_maintenance_tasks()
        except redis.exceptions.ConnectionError:
            raise
        except Exception as exc:  # a bad registry entry must not end the work loop; the next run retries
            log.warning("Worker %s: registry maintenance failed: %s: %s", self.name, type(exc).__name__, exc)
            self.last_cleaned_at = utcnow()

    def get_heartbeat_ttl(self, job: Job, working_time: float = 0.0) -> int:
        return self.heartbeat_ttl

    def execute_job(self, job: Job, queue: Queue) -> None:
        execution = self.prepare_execution(job)
        stop = threading.Event()
        beat = threading.Thread(target=self._beat, args=(job, execution, stop), daemon=True, name=f"heartbeat-{job.id}")
        beat.start()
        cid, step = job_step(job.id)
        started = time.monotonic()
        try:
            with activate(self.runtime), log_context(collation_id=cid, job_id=job.id, step=step):
                succeeded = self.perform_job(job, queue, execution)
        finally:
            stop.set()
            beat.join()
        if self.runtime.metrics is not None:
            outcome = job_outcome(succeeded, job.get_status(refresh=False))
            self.runtime.metrics.job_done(step.split("-", 1)[0], outcome, time.monotonic() - started)
        self.set_state(WorkerStatus.IDLE)

    def _beat(self, job: Job, execution: Execution, stop: threading.Event) -> None:
        while not stop.wait(self.job_monitoring_interval):
            try:
                self.maintain_heartbeats(job, execution)
            except redis.exceptions.RedisError as exc:  # Redis restarting: the job itself carries on
                log.warning("Job %s: heartbeat from worker %s failed: %s", job.id, self.name, exc)


def job_step(job_id: str) -> tuple[str | None, str]:
    """``(collation id, step name)`` of a job id written by ``RedisKeys.job_id`` (``abc123-chunk-0-1-7``
    -> ``("abc123", "chunk-0-1-7")``; ``-callback`` for a callback); ``(None, job_id)`` for another job."""
    cid, sep, step = job_id.partition("-")
    return (cid, step) if sep and cid.isalnum() else (None, job_id)


def job_outcome(succeeded: bool, status: JobStatus | None) -> JobOutcome:
    """How a job ended: ``perform_job``'s answer, and the status RQ gave a failed job (failed, or
    queued/scheduled again for a retry)."""
    if succeeded:
        return JobOutcome.OK
    return JobOutcome.FAILED if status == JobStatus.FAILED else JobOutcome.RETRIED


STEP_KINDS = (*(kind.value for kind in StepKind), "callback")
"""The ``step`` label of the job metrics: each step kind, and the callback job (``scheduling``)."""


def serve_metrics(runtime: Runtime) -> Any:
    """Serves the worker's metrics on ``settings.workers.metrics_port`` when it counts, on
    ``settings.workers.metrics_host`` (loopback unless the operator opens it: the port has no token);
    returns the server, or None. A port already taken is logged: the worker works on without."""
    port, host = runtime.settings.workers.metrics_port, runtime.settings.workers.metrics_host
    if runtime.metrics is None:
        return None
    try:
        server = runtime.metrics.serve(port, host)
    except OSError as exc:
        log.error("Worker: metrics not served on %s port %d: %s", host, port, exc)
        return None
    log.info("Worker: Prometheus metrics on %s port %d (/metrics)", host, port)
    return server


def drop_job_remnants(connection: redis.Redis, queue: Queue) -> int:
    """Removes from a queue's ready and deferred registries the jobs whose hash holds no data.

    Such a remnant is left when a job is deleted while another process writes its status (RQ moving
    the dependents of a finished job to ready); RQ cannot load it, and its maintenance, which tries,
    fails on it. Returns how many were removed.
    """
    dropped = 0
    for registry in (
        ReadyJobRegistry(queue.name, connection=connection),
        DeferredJobRegistry(queue.name, connection=connection),
    ):
        for raw in connection.zrange(registry.key, 0, -1):
            jid = raw.decode() if isinstance(raw, bytes) else raw
            key = Job.key_for(jid)
            if connection.exists(key) and not connection.hexists(key, "data"):
                connection.zrem(registry.key, raw)
                connection.delete(key)
                log.warning("Job %s: a remnant without data removed from %s", jid, registry.key)
                dropped += 1
    return dropped


def enqueue_due_jobs(connection: redis.Redis, queue: Queue) -> int:
    """Moves the jobs of ``queue``'s scheduled registry whose time has come (retries with a back-off:
    the callbacks) to the queue; returns how many. RQ's own scheduler would fork a process from the
    worker (CUDA does not survive a fork), so the workers' maintenance does it."""
    registry = queue.scheduled_job_registry
    due = registry.get_jobs_to_schedule(int(time.time()))
    moved = 0
    for jid in due:
        jid = jid.decode() if isinstance(jid, bytes) else jid
        if not connection.zrem(registry.key, jid):
            continue  # another worker took it
        try:
            job = Job.fetch(jid, connection=connection)
        except NoSuchJobError:
            continue
        queue.enqueue_job(job)
        moved += 1
    return moved


def queue_names(settings: Settings, which: Sequence[str] = ("io", "compute")) -> list[str]:
    """RQ queue names for ``which`` ("io", "compute").

    Raises:
        ValueError: an unknown queue kind.
    """
    names = {"io": settings.workers.queue_io, "compute": settings.workers.queue_compute}
    unknown = [w for w in which if w not in names]
    if unknown:
        raise ValueError(f"unknown queues {unknown}: use io, compute or both")
    return [names[w] for w in which]


def preload_backbone(runtime: Runtime) -> None:
    """Loads the default backbone as the worker starts, so that no job's time pays the load. ``work`` runs
    it in a thread beside the work loop: a job that needs the backbone waits for this load (``Runtime.backbone``
    loads once), and one that does not (detection for review, an io step) is not kept waiting 10-30 s by it
    (issue 39: the first page of a detection waited for it).

    A backbone that cannot load (ResNet-50 without its weights file) is logged, not fatal: jobs that
    ask for it fail with the loader's message, and jobs of other backbones still run.
    """
    started = time.monotonic()
    try:
        runtime.backbone(runtime.settings.backbone)
    except Exception as exc:  # the worker must start whatever the default backbone's state
        log.warning("Worker: default backbone %s not preloaded: %s", runtime.settings.backbone, exc)
    else:
        log.info("Worker: backbone %s loaded in %.1f s", runtime.settings.backbone, time.monotonic() - started)


def preload_detector(runtime: Runtime) -> None:
    """Loads the illustration detector (``Runtime.detector``: torch imported, a model file read) before the
    worker takes a job, so that the first page of a detection for review does not pay it (issue 39: the
    first page shown within 10 s). A detector that cannot load is logged: the jobs that need it fail with
    its message, the others run."""
    started = time.monotonic()
    try:
        detector = runtime.detector
    except Exception as exc:  # the worker must start whatever the detector's state
        log.warning("Worker: the illustration detector was not preloaded: %s", exc)
    else:
        log.info("Worker: illustration detector %s loaded in %.1f s", detector.name, time.monotonic() - started)


def check_store(runtime: Runtime) -> None:
    """A cheap authenticated call before the first job: a small object written and deleted.

    A store that refuses this worker (wrong credentials, no such bucket) stops it before it takes a
    job (issue 31: it took every job, failed each and logged thousands of lines while the collations
    stayed queued). A store that cannot be reached now is logged: the worker starts, and its jobs
    fail and are retried until the store is back.

    Raises:
        StoreRefused: naming the store and what it answered.
    """
    try:
        runtime.store.probe()
    except StoreUnavailable as exc:
        if exc.refused:
            raise StoreRefused(refusal(exc)) from None
        log.warning("Worker: the data store cannot be reached yet: %s", exc.strerror)
    except OSError as exc:
        log.warning("Worker: the data store cannot be written yet: %s", exc)


def work(
    settings: Settings, which: Sequence[str] = ("io", "compute"), *, burst: bool = False, name: str | None = None
) -> None:
    """Runs a worker on the collation queues until stopped (or, with ``burst``, until they are empty).

    Builds the process's runtime once (the backbone stays loaded between jobs). A worker whose loop
    ends other than on request (Redis unreachable, for however long; an error in RQ's loop) is built
    and started again after ``RESTART_DELAY`` seconds, doubled up to ``MAX_RESTART_DELAY`` while it
    keeps failing, unless ``burst``.

    Args:
        settings: the process's settings (``redis_url`` is required; ``log_level`` sets RQ's logging;
            ``worker_metrics_port``, when set, serves the worker's metrics there and makes it count).
        which: queue kinds to listen on.
        burst: quit when the queues are empty.
        name: the worker's name in Redis (default: random).

    Raises:
        RuntimeError: ``settings.redis_url`` is not set.
        StoreRefused: the data store refuses this worker's credentials (``check_store``).
    """
    keep_freed_memory()  # as collate does: features and scores allocate large tensors over and over
    metrics = (
        Metrics(settings.metrics_hosts, role="worker", steps=STEP_KINDS) if settings.workers.metrics_port else None
    )
    runtime = Runtime.create(settings, metrics=metrics)
    try:
        check_store(runtime)
    except StoreRefused:
        runtime.close()
        raise
    names = queue_names(settings, which)
    metrics_server = serve_metrics(runtime)
    if "compute" in which:
        preload_detector(runtime)  # seconds (torch's import): before listening, not in a detection's first page
        # beside the work loop: a job that needs no backbone (detection for review) starts at once
        threading.Thread(target=preload_backbone, args=(runtime,), name="preload-backbone", daemon=True).start()
    delay = RESTART_DELAY
    try:
        while True:
            started, worker = time.monotonic(), None
            try:  # building the worker talks to Redis too: inside the retry loop
                worker = CollationWorker(names, connection=runtime.connection(), name=name, runtime=runtime)
                name = None  # a restarted loop registers under a new name: the old one may still be in Redis
                worker.work(burst=burst, logging_level=settings.log_level.upper())
            except redis.exceptions.RedisError as exc:
                log.error("Worker %s: Redis unreachable (%s)", worker.name if worker else "-", exc)
            except Exception:
                log.exception("Worker %s: the work loop failed", worker.name if worker else "-")
            if burst or (worker is not None and worker.stop_requested):
                return
            delay = RESTART_DELAY if time.monotonic() - started > STABLE_AFTER else min(delay * 2, MAX_RESTART_DELAY)
            log.warning("Worker: restarting its loop in %s s", delay)
            time.sleep(delay)
    finally:
        if metrics_server is not None:
            metrics_server.shutdown()
            metrics_server.server_close()
        runtime.close()

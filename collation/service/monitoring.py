"""What the API tells an operator: ``GET /metrics`` (also ``/api/v1/metrics``), the log context of each
request, and an access log line per request.

- **Metrics.** The runtime's ``Metrics`` (``collation.core.metrics``: requests, fetches, store
  operations of this process) plus what only the API sees, computed when it is scraped
  (``ServiceCollector``): the jobs of each queue by state, the workers of each queue, whether Redis
  answered, and the collations by status. The scrape is cheap: a dozen Redis reads, and one listing
  of the store at most every ``STATUS_REFRESH`` seconds. It is open like ``/healthz`` (a scraper
  carries no token), unless ``COLLATION_METRICS_NEED_TOKEN`` asks for a bearer token.
- **Log context.** Every line logged while a request about a collation is answered carries its
  ``collation_id`` (``collation.core.logs``).
- **Access log.** One line per request on the ``collation.access`` logger: method, path, status,
  duration and client address (waitress logs none). Scrapes and health checks are logged at DEBUG,
  so that a scraper every 15 s and a health check every 30 s do not flood INFO.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

from flask import Flask, Response, current_app, g, request
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from redis.exceptions import RedisError
from rq import Worker
from rq.registry import (
    DeferredJobRegistry,
    FailedJobRegistry,
    FinishedJobRegistry,
    ScheduledJobRegistry,
    StartedJobRegistry,
)

from collation.core.logs import pop_context, push_context
from collation.core.metrics import Metrics
from collation.core.vocabulary import CollationStatus
from collation.jobs.runtime import Runtime
from collation.service import problems
from collation.service.auth import caller_token
from collation.service.listing import Unreadable, current_records
from collation.service.state import ServiceState, current_runtime, service_state
from collation.service.urls import API_PREFIX

log = logging.getLogger("collation.access")

METRICS_PATHS = ("/metrics", f"{API_PREFIX}/metrics")
"""Where the API serves its metrics: Prometheus's default path, and beside ``/healthz`` in the API."""
QUIET_PATHS = frozenset({*METRICS_PATHS, f"{API_PREFIX}/healthz", f"{API_PREFIX}/readyz"})
"""Requests logged at DEBUG: scrapes and health checks, which come every few seconds."""
UNREADABLE = "unreadable"
"""The key of ``ServiceCollector.collation_counts`` that counts the records skipped as unreadable."""
SCRAPES = "collation_scrapes"
"""The key of the app's ``Scrapes`` in ``app.extensions``."""
SCRAPE_REUSE = 1.0
"""Seconds a rendering of ``/metrics`` answers the scrapes that come meanwhile (Prometheus scrapes every 15 s)."""
STATUS_REFRESH = 10.0
"""Seconds the collations-by-status counts are reused between scrapes (counting them lists the store)."""
REGISTRIES = {
    "started": StartedJobRegistry,
    "deferred": DeferredJobRegistry,
    "scheduled": ScheduledJobRegistry,
    "failed": FailedJobRegistry,
}
"""The states of ``collation_queue_jobs`` besides ``queued``, and the RQ registry of each."""
RQ_STATUSES = {"finished": FinishedJobRegistry, **REGISTRIES}
"""``rq_jobs``'s statuses besides ``queued``, and the RQ registry of each (rq-exporter's names)."""


def init_app(app: Flask) -> None:
    """Adds the metrics routes and the request hooks to ``app``. Call it before the other hooks are
    registered: its ``after_request`` then runs last and logs the status the client gets."""
    state = service_state(app)
    if state.runtime.metrics is None:  # a runtime built by the caller without metrics: the API counts anyway
        state.runtime.metrics = Metrics(state.runtime.settings.metrics_hosts, role="api")
    state.runtime.metrics.registry.register(ServiceCollector(state))
    app.extensions[SCRAPES] = Scrapes(state.runtime.metrics)
    for path in METRICS_PATHS:
        app.add_url_rule(path, f"metrics{path.replace('/', '_')}", metrics_view, methods=["GET"])
    app.before_request(open_request)
    app.after_request(log_request)
    app.teardown_request(close_request)


def metrics_view() -> Response:
    """``GET /metrics``: every metric of the API process in the Prometheus text format."""
    runtime = current_runtime()
    settings = runtime.settings
    if settings.metrics_need_token and settings.api_tokens and caller_token() is None:
        raise problems.Unauthorized(
            "GET /metrics needs a bearer token (COLLATION_METRICS_NEED_TOKEN)", field="Authorization"
        )
    scrapes: Scrapes = current_app.extensions[SCRAPES]
    body, content_type = scrapes.render(request.headers.get("Accept", ""))
    return Response(body, content_type=content_type)


class Scrapes:
    """Renders ``/metrics`` one scrape at a time, and gives scrapes that come within ``reuse`` seconds of
    a rendering its bytes: fifty scrapes at once cost one rendering (and one read of Redis), not fifty."""

    def __init__(self, metrics: Metrics, reuse: float = SCRAPE_REUSE) -> None:
        self.metrics = metrics
        self.reuse = reuse
        self._lock = threading.Lock()
        self._last: dict[str, tuple[float, bytes, str]] = {}  # by Content-Type: (when, body, Content-Type)

    def render(self, accept: str) -> tuple[bytes, str]:
        """The scrape's body and Content-Type for ``accept`` (the text format or OpenMetrics)."""
        wanted = choose_encoder(accept)[1]
        with self._lock:
            now = time.monotonic()
            last = self._last.get(wanted)
            if last is None or now - last[0] >= self.reuse:
                body, content_type = self.metrics.render(accept)
                last = self._last[wanted] = (time.monotonic(), body, content_type)
            return last[1], last[2]


# --------------------------------------------------------------------------------------------------
# The request hooks


def open_request() -> None:
    g.request_started = time.perf_counter()
    g.log_token = push_context(collation_id=(request.view_args or {}).get("cid"))


def log_request(response: Response) -> Response:
    """Counts the request (``collation_http_requests_total``) and logs its access line."""
    seconds = time.perf_counter() - g.get("request_started", time.perf_counter())
    route = request.url_rule.rule if request.url_rule is not None else "unmatched"
    metrics = current_runtime().metrics
    if metrics is not None:
        metrics.request_done(request.method, route, response.status_code, seconds)
    path = request.full_path if request.query_string else request.path
    fields: dict[str, Any] = {
        "method": request.method,
        "path": path,
        "status": response.status_code,
        "duration_ms": round(seconds * 1000, 1),
        "remote_addr": request.remote_addr,
    }
    line = tuple(fields.values())
    created = created_collation(response)
    if created is not None:  # a POST that created a collation: its line carries the new id
        fields["collation_id"] = created
    level = logging.DEBUG if request.path in QUIET_PATHS else logging.INFO
    log.log(level, "%s %s %d %.1f ms %s", *line, extra=fields)
    return response


def close_request(error: BaseException | None) -> None:
    token = g.pop("log_token", None)
    if token is not None:
        pop_context(token)


def created_collation(response: Response) -> str | None:
    """The id of the collation a ``POST /collations`` answered with (its ``Location``), else None."""
    location = response.headers.get("Location", "") if response.status_code in (201, 202) else ""
    head, _, cid = location.rstrip("/").rpartition("/")
    return cid if head.endswith(f"{API_PREFIX}/collations") and cid.isalnum() else None


# --------------------------------------------------------------------------------------------------
# What only the API sees, computed when it is scraped


class ServiceCollector:
    """The queues, the workers and the collations, read when ``/metrics`` is scraped (a custom collector
    of prometheus_client: ``collect`` yields metric families)."""

    def __init__(self, state: ServiceState, refresh: float = STATUS_REFRESH) -> None:
        self.state = state
        self.refresh = refresh
        self.statuses: tuple[float, dict[str, int]] | None = None  # (when counted, counts)

    def collect(self) -> Iterator[Metric]:
        queues = queue_counts(self.state.runtime)  # read once: both families show the same numbers
        yield from queue_families(self.state.runtime, queues)
        yield from rq_exporter_families(self.state.runtime, queues)
        counts = self.collation_counts()
        if counts is not None:
            family = GaugeMetricFamily("collation_collations", "Collations in the store, by status", labels=["status"])
            for status in CollationStatus:
                family.add_metric([status.value], counts.get(status.value, 0))
            yield family
            yield GaugeMetricFamily(
                "collation_unreadable_records",
                "Collation records this release cannot read, skipped by the listing (collate store check names them)",
                value=counts.get(UNREADABLE, 0),
            )

    def collation_counts(self) -> dict[str, int] | None:
        """``{status: collations}`` and ``{UNREADABLE: records skipped}``, counted again when the last
        count is older than ``refresh``; None when the store cannot be listed."""
        now = time.monotonic()
        if self.statuses is None or now - self.statuses[0] >= self.refresh:
            try:
                skipped: list[Unreadable] = []
                records = current_records(self.state.runtime.store, self.state.records, skipped)
                counts = Counter(str(record.status) for record in records)
                self.statuses = (now, {**counts, UNREADABLE: len(skipped)})
            except OSError as exc:
                logging.getLogger(__name__).debug("metrics: the store cannot be listed: %s", exc)
                return None
        return self.statuses[1]


def queue_counts(runtime: Runtime) -> dict[str, dict[str, int]] | None:
    """Each queue's jobs by state (``queued``, and each of ``RQ_STATUSES``' registries), read once for a scrape:
    ``collation_queue_jobs`` and rq-exporter's ``rq_jobs`` show the same numbers, not two reads apart while a
    worker moves jobs. None when Redis is not configured or does not answer (a scrape never changes Redis)."""
    if runtime.redis is None:
        return None
    counts: dict[str, dict[str, int]] = {}
    try:
        for kind in ("io", "compute"):
            queue = runtime.queue(kind)
            counts[queue.name] = {"queued": queue.count}
            for state, registry in RQ_STATUSES.items():
                counts[queue.name][state] = registry(queue=queue).get_job_count(cleanup=False)
    except RedisError:
        return None
    return counts


def queue_families(runtime: Runtime, counts: dict[str, dict[str, int]] | None) -> list[Metric]:
    """``collation_redis_up``, and when Redis answers, ``collation_queue_jobs`` (each queue's jobs by
    state, ``queue_counts``: ``queued`` for a worker, ``started``, ``deferred`` behind other jobs, ``scheduled``
    retries, ``failed``) and ``collation_workers`` (the workers registered on each queue)."""
    up = GaugeMetricFamily("collation_redis_up", "1 when Redis answered this scrape, else 0")
    jobs = GaugeMetricFamily("collation_queue_jobs", "Jobs of each queue, by state", labels=["queue", "state"])
    workers = GaugeMetricFamily("collation_workers", "Workers registered on each queue", labels=["queue"])
    if counts is None:
        up.add_metric([], 0)
        return [up]
    try:
        for kind in ("io", "compute"):
            queue = runtime.queue(kind)
            for state in ("queued", *REGISTRIES):
                jobs.add_metric([queue.name, state], counts[queue.name][state])
            workers.add_metric([queue.name], Worker.count(connection=runtime.redis, queue=queue))
    except RedisError:
        up.add_metric([], 0)
        return [up]
    up.add_metric([], 1)
    return [up, jobs, workers]


def rq_exporter_families(runtime: Runtime, counts: dict[str, dict[str, int]] | None) -> list[Metric]:
    """The families of rq-exporter (mdawar/rq-exporter), read from the same Redis, so that its Grafana
    dashboard (12196) and alerts work as they are: ``rq_jobs{queue,status}``, ``rq_workers{name,queues,state}``
    (1 per worker) and each worker's ``rq_workers_success_total``, ``rq_workers_failed_total`` and
    ``rq_workers_working_time_total``; the jobs are ``queue_counts``. Nothing when Redis does not answer
    (``collation_redis_up`` says so)."""
    if counts is None:
        return []
    jobs = GaugeMetricFamily("rq_jobs", "RQ jobs by queue and status", labels=["queue", "status"])
    workers = GaugeMetricFamily("rq_workers", "RQ workers", labels=["name", "queues", "state"])
    labels = ["name", "queues"]
    success = CounterMetricFamily("rq_workers_success", "Successful job count by worker", labels=labels)
    failed = CounterMetricFamily("rq_workers_failed", "Failed job count by worker", labels=labels)
    working = CounterMetricFamily("rq_workers_working_time", "Total working time in seconds by worker", labels=labels)
    try:
        for queue_name, by_status in counts.items():
            for status, count in by_status.items():
                jobs.add_metric([queue_name, status], count)
        for worker in Worker.all(connection=runtime.redis):
            names = [worker.name, ",".join(worker.queue_names())]
            state = worker.get_state()
            workers.add_metric([*names, str(getattr(state, "value", state))], 1)  # busy, idle, suspended...
            success.add_metric(names, getattr(worker, "successful_job_count", 0) or 0)
            failed.add_metric(names, getattr(worker, "failed_job_count", 0) or 0)
            working.add_metric(names, getattr(worker, "total_working_time", 0) or 0)
    except RedisError:
        return []
    return [jobs, workers, success, failed, working]

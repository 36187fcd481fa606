"""The metrics of one process, in the Prometheus text format: every metric the project defines, in one place.

Each process that counts builds one ``Metrics`` (the API always; a worker when
``COLLATION_WORKER_METRICS_PORT`` is set) with a registry of its own, and hands it to the parts that
count: the fetcher (``net.http``), the data store (``store``), the worker's job loop and feature cache
(``jobs``) and the API's request hooks (``service.monitoring``). Where no ``Metrics`` was given (the
command line, tests, a worker without a metrics port) nothing is counted: each counting site is one
``if metrics is not None``.

What the API computes when it is scraped (queue depth, workers, collations by status) is not here:
``service.monitoring`` collects it from Redis and the store at scrape time. docs/deployment.md lists
every metric, its labels and a scrape configuration.

The engine never imports this module (it runs with torch, timm, NumPy and Pillow alone).
"""

from __future__ import annotations

import platform
from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, disable_created_metrics
from prometheus_client.exposition import choose_encoder, start_http_server


def collation_version() -> str:
    """The package's version (``collation.__version__``), read here so that core imports nothing above it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("image-collation")
    except PackageNotFoundError:
        return "unknown"


JOB_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
"""Seconds: a prepare step takes a second, a chunk of 512 pairs about 10 s on a CPU, a big features step minutes."""
FETCH_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
"""Seconds of one whole fetch, retries and redirects included (``COLLATION_IIIF_TOTAL_TIMEOUT`` is 120 s)."""
STORE_BUCKETS = (0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10)
"""Seconds of one store operation: a file read is under a millisecond, an object-store request tens of them."""
HTTP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 30)
"""Seconds of one API request (``GET /inspect`` may fetch for ``COLLATION_INSPECT_TIMEOUT``, 15 s)."""


METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
"""The ``method`` label values of the API's requests; any other method a client makes up is ``other``."""
OTHER = "other"
"""The label value of a method outside ``METHODS`` and of a host outside ``COLLATION_METRICS_HOSTS``."""


class JobOutcome(StrEnum):
    """The ``outcome`` label of ``collation_jobs_total``."""

    OK = "ok"
    RETRIED = "retried"
    """The job failed, and RQ queued or scheduled it again (``COLLATION_JOB_RETRIES``)."""
    FAILED = "failed"
    """The job failed with no retry left."""


ROLE_FAMILIES = {
    "api": ("requests", "request_seconds", "fetches", "fetch_seconds", "store_operations", "store_seconds"),
    "worker": (
        "jobs",
        "job_seconds",
        "fetches",
        "fetch_seconds",
        "store_operations",
        "store_seconds",
        "feature_cache",
    ),
}
"""The families each kind of process fills, and so exposes (``Metrics(role=...)``): a dashboard never
finds an API's empty job counters beside a worker's real ones, nor a worker's empty request histograms."""


class Metrics:
    """The counters and histograms of one process, in ``registry``; thread-safe (prometheus_client's).

    Every label takes its values from a bounded set, so that no client can grow a scrape: methods from
    ``METHODS``, routes by URL rule, hosts from ``hosts`` (``COLLATION_METRICS_HOSTS``, what an operator
    names; every other host is ``other``). ``role`` (``"api"`` or ``"worker"``; None: every family) keeps
    in the registry the families that kind of process fills (``ROLE_FAMILIES``); ``steps`` (a worker's step
    kinds) creates each job series at zero for every outcome, so that ``rate()`` and ``increase()`` see the
    first failure.
    Every process also exposes ``collation_build_info`` (1, labelled with the version and Python's).
    """

    def __init__(self, hosts: Iterable[str] = (), role: str | None = None, steps: tuple[str, ...] = ()) -> None:
        self.hosts = frozenset(host.lower() for host in hosts)
        # Without the ``*_created`` series (a timestamp per labelled counter and histogram, which would
        # double each scrape): prometheus_client's switch is for the whole process, as is this object.
        disable_created_metrics()
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)  # process_resident_memory_bytes, process_cpu_seconds_total...
        metric: dict[str, Any] = {"registry": self.registry}
        self.jobs = Counter(
            "collation_jobs", "Jobs run by this worker, by step kind and outcome", ["step", "outcome"], **metric
        )
        self.job_seconds = Histogram(
            "collation_job_duration_seconds",
            "Time this worker spent on each job, by step kind and outcome",
            ["step", "outcome"],
            buckets=JOB_BUCKETS,
            **metric,
        )
        self.fetches = Counter(
            "collation_fetches", "IIIF documents and images fetched, by host and outcome", ["host", "outcome"], **metric
        )
        self.fetch_seconds = Histogram(
            "collation_fetch_duration_seconds", "Time of each fetch, by host", ["host"], buckets=FETCH_BUCKETS, **metric
        )
        self.store_operations = Counter(
            "collation_store_operations",
            "Data store operations, by backend (folder, s3), operation and outcome (ok, missing, error)",
            ["backend", "operation", "outcome"],
            **metric,
        )
        self.store_seconds = Histogram(
            "collation_store_operation_duration_seconds",
            "Time of each data store operation, by backend and operation",
            ["backend", "operation"],
            buckets=STORE_BUCKETS,
            **metric,
        )
        self.feature_cache = Counter(
            "collation_feature_cache_lookups",
            "Lookups of a worker's in-memory feature cache (COLLATION_FEATURES_CACHED), by result (hit, miss)",
            ["result"],
            **metric,
        )
        for result in ("hit", "miss"):  # both series from the start, so that a ratio of them is defined
            self.feature_cache.labels(result)
        self.requests = Counter(
            "collation_http_requests",
            "API requests, by method, route and status",
            ["method", "route", "status"],
            **metric,
        )
        self.request_seconds = Histogram(
            "collation_http_request_duration_seconds",
            "Time of each API request, by method and route",
            ["method", "route"],
            buckets=HTTP_BUCKETS,
            **metric,
        )

        self._keep_only(role)
        for step in steps:
            for outcome in JobOutcome:
                self.jobs.labels(step, outcome)
                self.job_seconds.labels(step, outcome)
        build = Gauge(
            "collation_build_info", "The running release: 1, labelled with its version", ["version", "python"], **metric
        )
        build.labels(collation_version(), platform.python_version()).set(1)

    def _keep_only(self, role: str | None) -> None:
        """Takes out of the registry the families a process of ``role`` never fills (``ROLE_FAMILIES``)."""
        if role is None:
            return
        kept = ROLE_FAMILIES[role]
        for name in {name for names in ROLE_FAMILIES.values() for name in names} - set(kept):
            self.registry.unregister(getattr(self, name))

    def job_done(self, step: str, outcome: JobOutcome, seconds: float) -> None:
        """A job of step kind ``step`` ended with ``outcome`` after ``seconds``."""
        self.jobs.labels(step, outcome).inc()
        self.job_seconds.labels(step, outcome).observe(seconds)

    def fetched(self, host: str, outcome: str, seconds: float) -> None:
        """A fetch from ``host`` ended with ``outcome`` (``net.http.fetch_outcome``) after ``seconds``; the
        host is labelled ``other`` unless the operator named it (``hosts``)."""
        label = host if host in self.hosts else OTHER
        self.fetches.labels(label, outcome).inc()
        self.fetch_seconds.labels(label).observe(seconds)

    def store_operation(self, backend: str, operation: str, outcome: str, seconds: float) -> None:
        """A data store ``operation`` on ``backend`` ended with ``outcome`` after ``seconds``."""
        self.store_operations.labels(backend, operation, outcome).inc()
        self.store_seconds.labels(backend, operation).observe(seconds)

    def feature_lookup(self, hit: bool) -> None:
        """A lookup of the in-memory feature cache found the features (``hit``) or read them from the store."""
        self.feature_cache.labels("hit" if hit else "miss").inc()

    def request_done(self, method: str, route: str, status: int, seconds: float) -> None:
        """An API request to ``route`` (the URL rule, e.g. ``/api/v1/collations/<cid>``, or ``unmatched``)
        answered ``status``; a method outside ``METHODS`` is counted as ``other``."""
        method = method if method in METHODS else OTHER
        self.requests.labels(method, route, str(status)).inc()
        self.request_seconds.labels(method, route).observe(seconds)

    def render(self, accept: str = "") -> tuple[bytes, str]:
        """Every metric of the registry (and its collectors', such as the API's), and the Content-Type: in
        the format a scraper's ``Accept`` header asks for (the Prometheus text format 0.0.4 by default,
        OpenMetrics when asked), as the workers' metrics server does."""
        encoder, content_type = choose_encoder(accept)
        return encoder(self.registry), content_type

    def serve(self, port: int, host: str = "127.0.0.1") -> Any:
        """Serves the registry at ``http://host:port/metrics`` from a daemon thread (a worker has no other
        HTTP port); returns the server (``shutdown()`` stops it). Raises ``OSError`` when the port is taken."""
        server, _thread = start_http_server(port, addr=host, registry=self.registry)
        return server

"""The resources of one process, built once and passed down: settings, store, Redis, queues, fetcher,
backbones, the illustration detector and a small cache of loaded features.

The API's app factory keeps its ``Runtime`` in ``app.extensions["collation"]``; a worker builds one
at start and makes it the current runtime of every job it runs (``activate``), because RQ calls job
functions by name with plain arguments. Tests build their own. Nothing here is created at import
time, and two runtimes in one process share nothing.

A compute worker loads its backbone once and reuses it for every job (RQ's forking worker would
reload it for every job, and CUDA does not survive a fork).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from redis import Redis
from rq import Queue

from collation.core.settings import Settings
from collation.store.datastore import DataStore
from collation.store.location import open_store

log = logging.getLogger("collation.jobs")

if TYPE_CHECKING:
    from collation.core.metrics import Metrics
    from collation.engine.backbones import Backbone
    from collation.engine.detection import Detector
    from collation.engine.features import MultiScaleFeatures
    from collation.net.http import Fetcher


@dataclass
class Runtime:
    """Everything one process shares between requests or jobs. Thread-safe."""

    settings: Settings
    store: DataStore
    redis: Redis | None = None
    metrics: Metrics | None = None
    """The process's metrics (the API's; a worker's with ``COLLATION_WORKER_METRICS_PORT``); None: no counting."""
    _fetcher: Fetcher | None = field(default=None, repr=False)
    _backbones: dict[tuple[str, str, str], Backbone] = field(default_factory=dict, repr=False)
    _cpu_flags: frozenset[str] | None = field(default=None, repr=False)
    """The CPU's flags that decide ``precision`` (tests inject them); None: read from ``/proc/cpuinfo``."""
    _detector: Detector | None = field(default=None, repr=False)
    _features: OrderedDict[tuple[str, str], MultiScaleFeatures] = field(default_factory=OrderedDict, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _loading: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Held while a backbone loads (seconds): the fetcher, the detector and the features, under ``_lock``,
    are not kept waiting by it."""

    @classmethod
    def create(
        cls,
        settings: Settings,
        *,
        redis: Redis | None = None,
        fetcher: Fetcher | None = None,
        backbones: dict[tuple[str, str, str], Backbone] | None = None,
        metrics: Metrics | None = None,
        cpu_flags: frozenset[str] | None = None,
    ) -> Runtime:
        """A runtime for ``settings``.

        Args:
            settings: the process's settings.
            redis: the Redis of the queues; from ``settings.redis_url`` unless given (None when unset).
            fetcher: the HTTP client; built from the settings on first use unless given.
            backbones: a cache of loaded backbones to share with other runtimes (a test session
                builds many runtimes and loads each backbone once); a new one by default.
            metrics: where the store, the fetcher, the jobs and the feature cache count (none by default).
            cpu_flags: the CPU's flags for ``precision``; read from ``/proc/cpuinfo`` unless given.
        """
        if redis is None and settings.redis_url:
            redis = Redis.from_url(settings.redis_url, socket_connect_timeout=5, health_check_interval=10)
        return cls(
            settings=settings,
            store=open_store(settings, metrics),
            redis=redis,
            metrics=metrics,
            _fetcher=fetcher,
            _backbones=backbones if backbones is not None else {},
            _cpu_flags=cpu_flags,
        )

    # ----------------------------------------------------------------------------------------------

    def connection(self) -> Redis:
        """The Redis of the queues.

        Raises:
            RuntimeError: no Redis is configured (``COLLATION_REDIS_URL``).
        """
        if self.redis is None:
            raise RuntimeError("no Redis is configured (COLLATION_REDIS_URL)")
        return self.redis

    def queue(self, kind: str) -> Queue:
        """The RQ queue of ``kind`` (``"io"`` or ``"compute"``, as ``StepKind.queue`` says)."""
        names = {"io": self.settings.workers.queue_io, "compute": self.settings.workers.queue_compute}
        if kind not in names:
            raise ValueError(f"unknown queue {kind!r}: use io or compute")
        return Queue(names[kind], connection=self.connection())

    @property
    def fetcher(self) -> Fetcher:
        """The process's polite, safe HTTP client (``settings.iiif``, ``settings.allowed_hosts``)."""
        from collation.net.http import fetcher_for

        with self._lock:
            if self._fetcher is None:
                self._fetcher = fetcher_for(self.settings, metrics=self.metrics)
            return self._fetcher

    @property
    def device(self) -> str:
        """The compute device from ``settings.device`` (``auto`` picks CUDA when present)."""
        from collation.engine.backbones import resolve_device

        return str(resolve_device(self.settings.device))

    @property
    def precision(self) -> str:
        """``settings.feature_precision`` resolved on this process's device: ``float32`` or ``bfloat16``
        (``collation.engine.feature_keys.resolve_precision``). The prepare step records it in the manuscript's
        document and key; the features step computes in the recorded one, whichever worker runs it."""
        from collation.engine.backbones import resolve_precision

        # The device as named, not ``self.device``: an io worker has no GPU to resolve, yet it records the
        # precision for the compute workers.
        return resolve_precision(self.settings.feature_precision, self.settings.device, cpu_flags=self._cpu_flags)

    def backbone(self, name: str, precision: str | None = None) -> Backbone:
        """The backbone ``name`` on this process's device computing in ``precision`` (``float32`` or
        ``bfloat16``; default ``self.precision``), loaded on first use and kept.

        A precision this process's rule would not choose is still honoured (a manuscript's features are
        what its key says): bfloat16 on a CPU without it is emulated, correct and slower.
        """
        from collation.engine.backbones import load_backbone

        own = self.precision
        key = (name, self.device, precision or own)
        with self._loading:
            if key not in self._backbones:
                if key[2] != own:
                    log.warning("Backbone %s in %s, recorded at prepare; this worker's own is %s", name, key[2], own)
                self._backbones[key] = load_backbone(
                    name, device=key[1], weights_dir=self.settings.weights_dir, precision=key[2]
                )
            return self._backbones[key]

    @property
    def detector(self) -> Detector:
        """The illustration detector of manifests without region annotations, loaded on first use and
        kept (``settings.detector_model``, else the built-in one; ``settings.detector_min_score``).

        Raises:
            InputError: the configured model file is missing or unusable.
        """
        from collation.engine.detection import load_detector

        with self._lock:
            if self._detector is None:
                self._detector = load_detector(self.settings.detector_model, min_score=self.settings.detector_min_score)
            return self._detector

    def features(self, key: str) -> MultiScaleFeatures:
        """Cached features ``key`` from the store on this process's device (an LRU of
        ``settings.workers.features_cached`` entries, so consecutive chunks of a pair skip the disk)."""
        cache_key = (key, self.device)
        with self._lock:
            found = self._features.get(cache_key)
            if found is not None:
                self._features.move_to_end(cache_key)
        if self.metrics is not None:
            self.metrics.feature_lookup(found is not None)
        if found is not None:
            return found
        return self.keep_features(key, self.store.load_features(key, device=cache_key[1]))

    def keep_features(self, key: str, feats: MultiScaleFeatures) -> MultiScaleFeatures:
        """Puts features this process computed (or loaded) in its LRU: the plan step that follows the
        features step on this worker uses them without reading them back and checking every value."""
        feats = feats.to(self.device)
        with self._lock:
            self._features[(key, self.device)] = feats
            self._features.move_to_end((key, self.device))
            while len(self._features) > self.settings.workers.features_cached:
                self._features.popitem(last=False)
        return feats

    def close(self) -> None:
        """Drops this runtime's references to cached models and features (a shared backbone cache
        stays intact for the other runtimes) and closes the Redis connection pool."""
        with self._lock:
            self._features = OrderedDict()
            self._backbones = {}
            self._detector = None
        if self.redis is not None:
            self.redis.close()


_current: contextvars.ContextVar[Runtime] = contextvars.ContextVar("collation_runtime")
"""The runtime of the job being run (set by the worker, like Flask's ``current_app``)."""


def current() -> Runtime:
    """The runtime of the running job.

    Raises:
        RuntimeError: called outside ``activate`` (no worker set one).
    """
    try:
        return _current.get()
    except LookupError:
        raise RuntimeError("no collation runtime is active: jobs run inside a worker (or `activate`)") from None


@contextlib.contextmanager
def activate(runtime: Runtime) -> Iterator[Runtime]:
    """Makes ``runtime`` the current one for the code inside the block (a worker's jobs, a test)."""
    token = _current.set(runtime)
    try:
        yield runtime
    finally:
        _current.reset(token)

"""Per-process resources of workers and the API: settings, data store, Redis, HTTP fetcher, backbones.

Everything is created lazily on first use and then kept for the life of the process; a compute
worker thus loads its backbone once and reuses it for every job (RQ's forking worker would reload it
for every job, and CUDA does not survive a fork).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from redis import Redis

from ..service.config import load_settings
from ..store.datastore import DataStore

if TYPE_CHECKING:
    from ..features import Backbone, MultiScaleFeatures
    from ..iiif.http import Fetcher

_lock = threading.RLock()
_settings: dict[str, Any] | None = None
_connections: dict[str, Redis] = {}
_fetcher: Fetcher | None = None
_backbones: dict[tuple[str, str], Backbone] = {}
_features: OrderedDict[tuple[str, str], MultiScaleFeatures] = OrderedDict()
FEATURES_CACHED = 8
"""Loaded feature sets a worker keeps in memory, so consecutive chunks of a pair skip the disk."""


def configure(overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """(Re)loads the settings from the environment plus ``overrides`` and drops cached resources."""
    global _settings, _fetcher
    with _lock:
        _settings = load_settings(overrides)
        _fetcher = None
        _features.clear()
        return _settings


def settings() -> dict[str, Any]:
    """The process's settings, loaded from the environment on first use."""
    global _settings
    with _lock:
        if _settings is None:
            _settings = load_settings()
        return _settings


def store() -> DataStore:
    return DataStore(settings()["DATA_DIR"])


def connection(url: str | None = None) -> Redis:
    """A Redis client for ``url`` (the settings' REDIS_URL by default), one per URL and process."""
    url = url or settings()["REDIS_URL"]
    if not url:
        raise RuntimeError("COLLATION_REDIS_URL is not set")
    with _lock:
        if url not in _connections:
            _connections[url] = Redis.from_url(url, socket_connect_timeout=5, health_check_interval=10)
        return _connections[url]


def fetcher() -> Fetcher:
    """The process's polite, safe HTTP client, with the configured ``ALLOWED_HOSTS`` and ``COLLATION_IIIF_*``."""
    global _fetcher
    from ..iiif.http import fetcher_from_env

    conf = settings()
    with _lock:
        if _fetcher is None:  # COLLATION_IIIF_* tune politeness per deployment (e.g. min_interval)
            _fetcher = fetcher_from_env(allowed_hosts=conf["ALLOWED_HOSTS"])
        return _fetcher


def device() -> str:
    """The compute device from ``COLLATION_DEVICE`` (auto picks CUDA when present)."""
    from ..features import resolve_device

    return str(resolve_device(settings()["DEVICE"]))


def backbone(name: str) -> Backbone:
    """The backbone ``name`` on this process's device, loaded on first use and kept."""
    from ..features import load_backbone

    key = (name, device())
    weights_dir = settings()["WEIGHTS_DIR"]
    with _lock:
        if key not in _backbones:
            _backbones[key] = load_backbone(name, device=key[1], weights_dir=weights_dir)
        return _backbones[key]


def features(key: str) -> MultiScaleFeatures:
    """Cached features ``key`` from the store, on this process's device (a small LRU)."""
    from ..features import MultiScaleFeatures

    cache_key = (key, device())
    with _lock:
        if cache_key in _features:
            _features.move_to_end(cache_key)
            return _features[cache_key]
    feats = MultiScaleFeatures.load(store().features_path(key), device=cache_key[1])
    with _lock:
        _features[cache_key] = feats
        while len(_features) > FEATURES_CACHED:
            _features.popitem(last=False)
    return feats

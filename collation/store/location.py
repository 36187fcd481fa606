"""Which data store a process uses: ``open_store(settings)``.

``COLLATION_STORE_URL`` unset: the folder ``COLLATION_DATA_DIR`` (``FolderStore``), as on one
machine. ``s3://bucket/prefix``: the object store (``ObjectStore``), with ``COLLATION_DATA_DIR`` as
this machine's local cache of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from collation.core.settings import Settings
from collation.store.datastore import DataStore
from collation.store.folder import FolderStore

if TYPE_CHECKING:
    from collation.core.metrics import Metrics


def open_store(settings: Settings, metrics: Metrics | None = None) -> DataStore:
    """The data store the settings name (nothing is read or written yet); it counts its operations in
    ``metrics`` when given (``collation.store.metering``)."""
    if settings.store.url:
        from collation.store.objects import ObjectStore  # boto3 only where an object store is used

        return ObjectStore(
            settings.store.url,
            settings.data_dir,
            settings.store.cache_bytes,
            endpoint=settings.store.endpoint,
            connect_timeout=settings.store.connect_timeout,
            read_timeout=settings.store.read_timeout,
            retries=settings.store.retries,
            metrics=metrics,
        )
    return FolderStore(settings.data_dir, metrics=metrics, min_free=settings.store.min_free_bytes)

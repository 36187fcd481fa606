"""A small thread-safe LRU of built documents, one per app (``ServiceState.documents``).

The annotation layers are built from the store on request; building them reads every result file of
a collation, so the last few are kept, keyed by what they depend on (see ``layers``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

DOCUMENTS_CACHED = 16
"""Prepared collations kept per app."""
RECORDS_CACHED = 4096
"""Collation records kept per app for ``GET /collations`` (a few kilobytes each), by version."""


class DocumentCache:
    """Values by key, the least recently used dropped beyond ``entries``."""

    def __init__(self, entries: int = DOCUMENTS_CACHED) -> None:
        self.entries = entries
        self._values: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_build(self, key: Hashable, build: Callable[[], Any]) -> Any:
        """The value of ``key``, built (outside the lock: builds are slow) when missing."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = build()
        with self._lock:
            self._values[key] = value
            while len(self._values) > self.entries:
                self._values.popitem(last=False)
        return value

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

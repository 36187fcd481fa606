"""Fetched bodies (``Response``) and their on-disk cache, so that nothing is fetched twice across runs.

One entry per URL, under ``cache_dir/<sha256[:2]>/``: ``<sha256>.body`` (the bytes as received) and
``<sha256>.meta.json`` (``url``, ``final_url``, ``status``, ``content_type``). Only successful
responses are written. API::

    response = read_cached(cache_dir, url)     # Response with from_cache=True, or None
    write_cached(cache_dir, response)          # never raises: a full or read-only cache is logged

``JsonCache`` keeps parsed documents in memory, bounded in entries and in bytes (``json_size``: what
the Python objects take, 10-25 times the JSON text); the fetcher puts only accepted documents in it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collation.core.atomic import write_bytes

log = logging.getLogger("collation.net.responses")


@dataclass(frozen=True)
class Response:
    """A fetched body with what we need of its headers."""

    url: str
    final_url: str
    status: int
    content_type: str
    content: bytes
    from_cache: bool = False


def cache_paths(cache_dir: Path, url: str) -> tuple[Path, Path]:
    """(body path, metadata path) of ``url``'s entry."""
    key = hashlib.sha256(url.encode("utf-8")).hexdigest()
    folder = cache_dir / key[:2]
    return folder / f"{key}.body", folder / f"{key}.meta.json"


def read_cached(cache_dir: Path | None, url: str) -> Response | None:
    """The cached response of ``url``, or None (no cache, no entry, or an unreadable one)."""
    if cache_dir is None:
        return None
    body, meta_path = cache_paths(cache_dir, url)
    if not body.is_file() or not meta_path.is_file():
        return None
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        content = body.read_bytes()
        if meta.get("url") != url:
            return None
        return Response(
            url=url,
            final_url=str(meta.get("final_url", url)),
            status=int(meta.get("status", 200)),
            content_type=str(meta.get("content_type", "")),
            content=content,
            from_cache=True,
        )
    except (OSError, ValueError, TypeError):
        return None


def write_cached(cache_dir: Path | None, response: Response) -> None:
    """Store ``response`` (atomically, body then metadata); does nothing without a cache."""
    if cache_dir is None:
        return
    body, meta_path = cache_paths(cache_dir, response.url)
    meta = {
        "url": response.url,
        "final_url": response.final_url,
        "status": response.status,
        "content_type": response.content_type,
    }
    try:
        body.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(body, response.content)
        write_bytes(meta_path, json.dumps(meta).encode("utf-8"))
    except OSError as exc:  # a full or read-only cache must not fail the fetch
        log.warning("cache: cannot write %s: %s", body, exc)


def json_size(doc: Any, limit: int) -> int:
    """Bytes the parsed JSON ``doc`` takes in memory (``sys.getsizeof`` of every object, shared
    strings counted each time), or a number above ``limit`` as soon as it is known to exceed it."""
    total = 0
    stack = [doc]
    while stack:
        item = stack.pop()
        total += sys.getsizeof(item)
        if total > limit:
            return total
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return total


class JsonCache:
    """Parsed JSON documents by URL, least recently used first out: at most ``max_entries`` documents
    and ``max_bytes`` bytes (``json_size``); a document larger than ``max_bytes`` is not kept."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.bytes = 0
        self._lock = threading.Lock()
        self._items: OrderedDict[str, tuple[Any, str, int]] = OrderedDict()

    def get(self, url: str) -> tuple[Any, str] | None:
        with self._lock:
            item = self._items.get(url)
            if item is None:
                return None
            self._items.move_to_end(url)
            return item[0], item[1]

    def put(self, url: str, doc: Any, final_url: str) -> bool:
        """Keep ``doc``; False when it is too large to keep at all."""
        size = json_size(doc, self.max_bytes)
        if size > self.max_bytes or self.max_entries < 1:
            return False
        with self._lock:
            old = self._items.pop(url, None)
            if old is not None:
                self.bytes -= old[2]
            self._items[url] = (doc, final_url, size)
            self.bytes += size
            while len(self._items) > self.max_entries or self.bytes > self.max_bytes:
                self.bytes -= self._items.popitem(last=False)[1][2]
        return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

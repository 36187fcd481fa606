"""Fetched bodies (``Response``) and their on-disk cache, so that nothing is fetched twice across runs.

One entry per URL, under ``cache_dir/<sha256[:2]>/``: ``<sha256>.body`` (the bytes as received) and
``<sha256>.meta.json`` (``url``, ``final_url``, ``status``, ``content_type``). Only successful
responses are written. API::

    response = read_cached(cache_dir, url)     # Response with from_cache=True, or None
    write_cached(cache_dir, response)          # never raises: a full or read-only cache is logged
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path

from collation.atomic import write_bytes

log = logging.getLogger("collation.iiif.cache")


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

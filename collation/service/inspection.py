"""``GET /inspect``: the service's dry run of a manifest (``collation.iiif.dryrun.inspect_manifest``).

It reads the manifest with the runtime's fetcher, so the address policy, caps, politeness and
cache are those of a collation, and answers the report synchronously (no job, no Redis). Errors
about the manifest itself name the ``manifest`` field: a URL the policy refuses is a 400, a
document that is not a usable manifest a 422, an upstream failure (HTTP error, timeout) a 502.

Inspect fetches for whoever asks, so it is bounded like any untrusted fetch (``InspectGate``): at
most ``inspect_concurrency`` run at once (then 503) and ``inspect_per_client`` per client address
(then 429), both with Retry-After; each runs in the gate's own threads, and the request is answered
504 once ``inspect_timeout`` seconds have passed (its thread keeps its slot until its last fetch
ends). Its fetcher has the runtime's policy with tighter caps: each fetch gets half the deadline,
no retries, ``inspect_max_json_bytes`` and ``inspect_max_json_items`` (a document of millions of
tiny objects is refused before it is parsed), and no ``info.json`` is started after half the
deadline. ``settings.inspection.needs_token`` makes it need a bearer token like POST (``app``).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates, validates_schema

from collation.core.errors import CollationError, ManifestError
from collation.core.settings import Settings
from collation.iiif.collections import collection_members
from collation.iiif.dryrun import inspect_manifest
from collation.iiif.manifests import load_manifest, parse_manifest
from collation.iiif.regions import RegionSelector
from collation.jobs.manuscripts import RuntimeDetector
from collation.jobs.runtime import Runtime
from collation.net.http import Fetcher
from collation.service.problems import Busy
from collation.service.schemas import HttpUrl


class UnusableManifest(CollationError):
    """The manifest was fetched but is not a IIIF manifest we can read (HTML, bad JSON, wrong type)."""

    http_status = 422


class InspectTimeout(CollationError):
    """The inspection took longer than ``settings.inspection.timeout``."""

    http_status = 504


class InspectGate:
    """Runs inspections in its own threads, a bounded number at once, in all and per client."""

    def __init__(self, settings: Settings) -> None:
        self.total = settings.inspection.concurrency
        self.per_client = settings.inspection.per_client
        self.timeout = settings.inspection.timeout
        self._lock = threading.Lock()
        self._running: dict[str, int] = {}
        self._pool = ThreadPoolExecutor(max_workers=self.total, thread_name_prefix="inspect")

    def run(self, client: str, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """``work()``'s report, or ``Busy`` (429/503) when full, ``InspectTimeout`` (504) when late."""
        self._enter(client)
        try:
            future = self._pool.submit(work)
        except BaseException:
            self._leave(client)
            raise
        future.add_done_callback(lambda _: self._leave(client))  # the slot is held until the work ends
        try:
            return future.result(timeout=self.timeout)
        except FutureTimeout:
            raise InspectTimeout(
                f"the inspection took longer than {self.timeout:g} s (COLLATION_INSPECT_TIMEOUT)", field="manifest"
            ) from None

    def _enter(self, client: str) -> None:
        retry = max(1, math.ceil(self.timeout))
        with self._lock:
            if sum(self._running.values()) >= self.total:
                raise Busy(f"{self.total} inspections are running; try again later", http_status=503, retry_after=retry)
            if self._running.get(client, 0) >= self.per_client:
                raise Busy(
                    f"{self.per_client} inspection(s) of this client are running; try again later",
                    http_status=429,
                    retry_after=retry,
                )
            self._running[client] = self._running.get(client, 0) + 1

    def _leave(self, client: str) -> None:
        with self._lock:
            self._running[client] -= 1
            if not self._running[client]:
                del self._running[client]

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def inspect_fetcher(runtime: Runtime) -> Fetcher:
    """The runtime's fetcher (policy, resolver, clocks) with inspect's tighter caps and deadline."""
    base, settings = runtime.fetcher, runtime.settings
    return base.with_limits(
        total_timeout=settings.inspection.timeout / 2,
        retries=0,
        max_json_bytes=min(base.conf.max_json_bytes, settings.inspection.max_json_bytes),
        max_json_items=min(base.conf.max_json_items, settings.inspection.max_json_items),
    )


class InspectQuerySchema(Schema):
    """Query of ``GET /inspect``: the options of ``collate inspect``."""

    manifest = HttpUrl(required=True)
    selector = fields.String(validate=validate.Length(min=1, max=500))
    whole_canvases = fields.Boolean(load_default=False)
    max_info = fields.Integer(load_default=20, validate=validate.Range(min=0, max=100))
    detect = fields.Boolean(load_default=None)
    detect_up_to = fields.Integer(validate=validate.Range(min=0, max=100_000))

    @validates("selector")
    def _parses(self, value: str, **kwargs: Any) -> None:
        try:
            RegionSelector.parse(value)
        except CollationError as exc:
            raise ValidationError(exc.message) from None

    @validates_schema
    def _one_way(self, data: dict[str, Any], **kwargs: Any) -> None:
        if data.get("selector") and data.get("whole_canvases"):
            raise ValidationError("give a selector or whole_canvases, not both", "whole_canvases")


def read_collection(url: str, fetcher: Fetcher) -> dict[str, Any] | None:
    """The members of the Collection at ``url``, or None when it is a manifest. The document is
    fetched once: accepted (a Collection, or a manifest that parses), it stays in the fetcher's
    cache for ``inspect_manifest``.

    Raises:
        ManifestError: neither a Collection nor a usable manifest.
    """
    found: list[dict[str, Any] | None] = []

    def accept(doc: Any) -> None:
        members = collection_members(doc, url=url)
        if members is None:
            parse_manifest(doc, url=url, max_canvases=fetcher.conf.max_canvases)  # raises when unusable
        found.append(members)

    doc, _final = fetcher.get_json(url, what="manifest", accept=accept)
    return found[0] if found else collection_members(doc, url=url)


def inspect(runtime: Runtime, query: dict[str, Any], fetcher: Fetcher | None = None) -> dict[str, Any]:
    """The ``inspect_manifest`` report of ``query["manifest"]`` (see ``collation.iiif.dryrun``),
    read with ``fetcher`` (default: ``inspect_fetcher(runtime)``); when the address is a IIIF
    Collection, the manifests it lists (``collation.iiif.collections.collection_members``).

    Raises:
        CollationError: naming the field ``manifest``: ``UnsafeURLError`` (400), ``UnusableManifest``
            (422), ``LimitError`` (422) or ``FetchError`` (502).
    """
    own = fetcher is None
    fetcher = inspect_fetcher(runtime) if fetcher is None else fetcher
    try:
        collection = read_collection(query["manifest"], fetcher)
        if collection is not None:
            return collection
        detect = query.get("detect")
        if detect is None and "detect_up_to" in query:  # a long manuscript: detected on the workers instead
            pages = load_manifest(query["manifest"], fetcher=fetcher).canvases  # the fetch is in its cache
            detect = None if len(pages) <= query["detect_up_to"] else False
        return inspect_manifest(
            query["manifest"],
            fetcher=fetcher,
            selector=RegionSelector.parse(query.get("selector")),
            whole_canvases=query["whole_canvases"],
            max_regions=runtime.settings.limits.max_regions,
            max_info=query["max_info"],
            info_deadline=time.monotonic() + runtime.settings.inspection.timeout / 2,
            detect=detect,
            detector=RuntimeDetector(runtime),  # the collations' (COLLATION_DETECTOR_MODEL), loaded if it is needed
        )
    except ManifestError as exc:
        raise UnusableManifest(exc.message, field="manifest") from exc
    except CollationError as exc:
        exc.field = "manifest"
        raise
    finally:
        if own:
            fetcher.session.close()

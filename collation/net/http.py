"""Polite, safe HTTP for IIIF: one ``Fetcher`` per process (or per job), shared by every request.

Libraries rate-limit and block bots, servers answer HTML error pages with status 200, and a
service that fetches URLs supplied by users can be turned against its own network. So every request
goes through ``Fetcher.get``, which:

- refuses anything but http/https, URLs that parsers read differently, and hosts that resolve to
  loopback, private, link-local, multicast or otherwise non-global addresses
  (``addresses.resolve_target``), unless ``allow_private`` is set or the host is in
  ``allowed_hosts``; redirects are followed by hand and each hop is resolved and checked again;
- connects to exactly the address it checked (``pinning.PinnedAdapter``: no second DNS answer is
  ever used, so DNS rebinding cannot reach a private address);
- sends a User-Agent naming the project, limits concurrent requests per host, applies connect/read
  timeouts and a wall-clock deadline on each whole response (``total_timeout``, headers and body:
  a server that trickles bytes is cut off), retries 429 and 5xx with exponential back-off honouring
  ``Retry-After`` (up to a cap), and retries connection errors;
- caps the bytes read (manifests, images) and the pixels decoded (decompression bombs, ``decode``);
  keeps the body of a 401/403 (up to ``max_json_bytes``) as ``FetchError.body``: IIIF Auth servers
  answer the info.json there, naming the login service;
- caches successful bodies on disk (``cache``) and accepted JSON documents in memory (bounded in
  bytes), so nothing is fetched twice, even by threads asking at the same moment.

The module is longer than 400 lines because the request loop, its policy, caps and retries are one
path that reads best in one place.

Every option is a field of ``collation.core.settings.FetchSettings`` (one default each, one
``COLLATION_IIIF_<NAME>`` variable each); nothing here reads the environment. API::

    fetcher = fetcher_for(settings, allowed_hosts=["127.0.0.1"], cache_dir=...)  # the usual way
    fetcher = Fetcher(settings.iiif, allowed_hosts=[...], per_host=2)  # FetchSettings + overrides
    doc, final_url = fetcher.get_json(url, what="manifest", accept=check_fn)  # Any, str
    image = fetcher.get_image(url, what="region")                  # PIL.Image.Image, RGB
    response = fetcher.get(url, what="...", max_bytes=...)         # Response (bytes + headers)
"""

from __future__ import annotations

import contextlib
import email.utils
import http.client
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

import requests
from PIL import Image
from requests.structures import CaseInsensitiveDict

from collation.core.errors import FetchError, LimitError, UnsafeURLError
from collation.core.settings import FetchSettings, Settings
from collation.net.addresses import Resolver, Target, check_url, resolve_target
from collation.net.credentials import Credentials
from collation.net.decode import decoded_bytes, finish_image, looks_like_image, open_image, parse_json_bytes
from collation.net.pinning import PinnedAdapter
from collation.net.responses import JsonCache, Response, read_cached, write_cached

if TYPE_CHECKING:
    from collation.core.metrics import Metrics

log = logging.getLogger("collation.net.http")

LARGE_DECODE = 64 * 2**20
"""Bytes decoded above which an image waits for the other large ones (``get_image``): a region of a
full-resolution folio that cannot be scaled at decode (a PNG, a small crop of a JPEG) takes hundreds
of MiB, and four fetch threads decoding four at once took gigabytes."""
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


def _retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now)


Clock = Callable[[], float]
"""``time.monotonic``-like (seconds, for intervals and deadlines) or ``time.time``-like (epoch
seconds, for Retry-After dates); injected in tests so that no test depends on the wall clock."""


def fetch_outcome(error: BaseException) -> str:
    """The ``outcome`` label of a failed fetch in ``collation_fetches_total``: ``refused`` (the address
    policy), ``too_large``, ``http_<status>``, ``timeout``, ``unreachable`` (no connection) or ``error``."""
    if isinstance(error, UnsafeURLError):
        return "refused"
    if isinstance(error, LimitError):
        return "too_large"
    if isinstance(error, FetchError) and error.status is not None:
        return f"http_{error.status}"
    cause = error.__context__  # the requests error a FetchError was raised from (``from None`` keeps it here)
    if isinstance(cause, requests.Timeout) or "took longer than" in str(error):
        return "timeout"
    if isinstance(cause, requests.ConnectionError):
        return "unreachable"
    return "error"


def fetch_settings(conf: FetchSettings | None, overrides: dict[str, Any]) -> FetchSettings:
    """``conf`` (default: ``FetchSettings()``) with ``overrides`` by field name; ``ValueError`` on
    unknown names or unusable values."""
    known = {f.name for f in fields(FetchSettings)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(f"unknown Fetcher options {unknown}; known: {sorted(known)}")
    if overrides.get("cache_dir") is not None:
        overrides = {**overrides, "cache_dir": Path(overrides["cache_dir"])}
    conf = replace(conf if conf is not None else FetchSettings(), **overrides)
    if conf.per_host < 1:
        raise ValueError("per_host must be at least 1")
    if conf.total_timeout <= 0:
        raise ValueError("total_timeout must be positive")
    return conf


class Fetcher:
    """HTTP client for IIIF documents and images; thread-safe, share one per process.

    ``conf`` holds every option (default ``FetchSettings()``); ``overrides`` replace fields of it by
    name (``Fetcher(allow_private=True)``). ``allowed_hosts`` are exempt from the address check.
    ``session``, ``resolve``, ``sleep``, ``clock`` (monotonic: intervals, deadlines) and
    ``wall_clock`` (epoch: Retry-After dates) are injectable for tests. ``metrics`` (the process's, when
    it counts) receives each fetch that reached the network: host, outcome and duration.
    """

    def __init__(
        self,
        conf: FetchSettings | None = None,
        *,
        allowed_hosts: Iterable[str] = (),
        session: requests.Session | None = None,
        resolve: Resolver = socket.getaddrinfo,
        sleep: Callable[[float], None] = time.sleep,
        clock: Clock = time.monotonic,
        wall_clock: Clock = time.time,
        metrics: Metrics | None = None,
        **overrides: Any,
    ) -> None:
        self.conf = fetch_settings(conf, overrides)
        self.allowed_hosts = tuple(allowed_hosts)
        self.session = session if session is not None else requests.Session()
        self.adapter = PinnedAdapter(pool_connections=8, pool_maxsize=max(4, self.conf.per_host))
        self.session.mount("http://", self.adapter)  # so that session.close() closes its pools
        self.session.mount("https://", self.adapter)
        self.resolve = resolve
        self.sleep = sleep
        self.clock = clock
        self.wall_clock = wall_clock
        self.cache_dir = self.conf.cache_dir
        self.region_long_side = self.conf.region_long_side  # what fetch_region asks for by default
        self._lock = threading.Lock()
        self._large_decodes = threading.Lock()  # one image over LARGE_DECODE decoded at a time (get_image)
        self._host_slots: dict[str, threading.BoundedSemaphore] = {}
        self._host_last: dict[str, float] = {}
        self._host_locks: dict[str, threading.Lock] = {}
        self._url_locks: dict[str, Any] = {}  # url -> RLock
        self.json_cache = JsonCache(self.conf.json_cache_entries, self.conf.json_cache_bytes)
        self.requests_sent = 0
        self.metrics = metrics
        self.credentials = Credentials()  # IIIF Auth 2 access tokens, and the hosts that get one

    def with_limits(self, **overrides: Any) -> Fetcher:
        """A new fetcher with this one's policy, allowed hosts, resolver and clocks, and ``overrides``
        of its ``FetchSettings`` (tighter caps or deadlines for one kind of request: inspect,
        callbacks). It has a session of its own: close it (``session.close()``) when done."""
        return Fetcher(
            replace(self.conf, **overrides),
            allowed_hosts=self.allowed_hosts,
            resolve=self.resolve,
            sleep=self.sleep,
            clock=self.clock,
            wall_clock=self.wall_clock,
            metrics=self.metrics,
        )

    def with_access_tokens(self, tokens: dict[str, str]) -> Fetcher:
        """A fetcher like this one holding IIIF Auth 2 access tokens by access service id (``credentials``);
        it caches nothing fetched with one. Close its session when done."""
        fetcher = self.with_limits()
        fetcher.credentials = Credentials(tokens)
        return fetcher

    # -- policy ---------------------------------------------------------------------------------

    def check(self, url: str, *, what: str = "URL") -> str:
        """``check_url`` with this fetcher's policy."""
        return check_url(
            url,
            resolve=self.resolve,
            allow_private=self.conf.allow_private,
            allowed_hosts=self.allowed_hosts,
            what=what,
        )

    def target(self, url: str, *, what: str = "URL") -> Target:
        """``resolve_target`` with this fetcher's policy: the checked address to connect to."""
        return resolve_target(
            url,
            resolve=self.resolve,
            allow_private=self.conf.allow_private,
            allowed_hosts=self.allowed_hosts,
            what=what,
        )

    # -- public API -----------------------------------------------------------------------------

    def get(self, url: str, *, what: str = "document", max_bytes: int | None = None) -> Response:
        """GET ``url`` with retries, redirects checked hop by hop, caps and the disk cache.

        Raises ``UnsafeURLError`` (policy), ``LimitError`` (too large) or ``FetchError``
        (network, HTTP status, timeout); never a ``requests`` exception.
        """
        url = self._normalize(url, what)
        cap = max_bytes if max_bytes is not None else self.conf.max_image_bytes
        private = self.credentials.bearer(url) is not None  # fetched with an access token: never cached
        with self._url_lock(url):
            cached = None if private else read_cached(self.cache_dir, url)
            if cached is not None:
                return cached
            started = self.clock()
            try:
                response = self._get_uncached(url, what=what, max_bytes=cap)
            except Exception as exc:
                self._count(url, fetch_outcome(exc), started)
                raise
            self._count(url, "ok", started)
            if not private:
                write_cached(self.cache_dir, response)
            return response

    def get_json(
        self,
        url: str,
        *,
        what: str = "document",
        max_bytes: int | None = None,
        accept: Callable[[Any], object] | None = None,
    ) -> tuple[Any, str]:
        """Fetch and parse a JSON document; returns ``(document, final URL after redirects)``.

        An HTML page or a body that is not JSON raises ``ManifestError`` naming the URL. ``accept``
        is the reader's check (it raises on a document it cannot use); only documents it accepted
        are kept in the in-memory cache (without ``accept``, none is).
        """
        url = self._normalize(url, what)
        with self._url_lock(url):  # threads asking for one info.json at once fetch and parse it once
            cached = self.json_cache.get(url) if self.credentials.bearer(url) is None else None
            if cached is not None:
                return cached
            response = self.get(url, what=what, max_bytes=max_bytes or self.conf.max_json_bytes)
            doc = parse_json_bytes(
                response.content,
                url=url,
                what=what,
                content_type=response.content_type,
                max_items=self.conf.max_json_items,
            )
            if accept is not None:
                accept(doc)
                if self.credentials.bearer(url) is None:  # nothing fetched with a token is kept
                    self.json_cache.put(url, doc, response.final_url)
            return doc, response.final_url

    def get_image(
        self, url: str, *, what: str = "image", need: Callable[[tuple[int, int]], tuple[int, int]] | None = None
    ) -> Image.Image:
        """Fetch an image and decode it to RGB, after checking Content-Type, magic bytes, pixel count and
        the memory it takes decoded (``open_image``). ``need(full size)``: the fewest pixels the caller
        needs of it, so that a JPEG decodes at a fraction of its size (``image.info["full_size"]`` keeps
        the full one). An image that takes over ``LARGE_DECODE`` bytes decoded waits for the one being
        decoded: large images are decoded one at a time, however many threads fetch."""
        response = self.get(url, what=what, max_bytes=self.conf.max_image_bytes)
        content_type = response.content_type.split(";", 1)[0].strip().lower()
        if not content_type.startswith("image/"):
            raise FetchError(
                f"{what} {url}: expected an image, got Content-Type {content_type or 'none'}",
                url=url,
                status=response.status,
            )
        if not looks_like_image(response.content):
            raise FetchError(
                f"{what} {url}: the body is not an image although labelled {content_type} (probably an error page)",
                url=url,
                status=response.status,
            )
        image = open_image(
            response.content,
            url=url,
            what=what,
            max_pixels=self.conf.max_image_pixels,
            max_decoded_bytes=self.conf.max_decoded_bytes,
            need=need,
        )
        if decoded_bytes(image) <= LARGE_DECODE:
            return finish_image(image, url=url, what=what)
        with self._large_decodes:
            return finish_image(image, url=url, what=what)

    def post_json(self, url: str, payload: Any, *, what: str = "callback URL") -> int:
        """POST ``payload`` as JSON to ``url`` once, pinned to its checked address like every GET
        (no redirect followed, no retry, ``total_timeout`` for the whole exchange); returns the status.

        Raises ``UnsafeURLError`` (policy) or ``FetchError`` (network, timeout).
        """
        target = self.target(self._normalize(url, what), what=what)
        prepared = requests.Request(
            "POST", target.url, json=payload, headers={"User-Agent": self.conf.user_agent}
        ).prepare()
        try:
            with self.adapter.deadlines.within(self.conf.total_timeout):
                raw = self.adapter.send_pinned(
                    prepared,
                    target,
                    timeout=(self.conf.connect_timeout, self.conf.read_timeout),
                    verify=self.session.verify,
                    cert=self.session.cert,
                )
                raw.close()
        except (requests.RequestException, OSError, http.client.HTTPException) as exc:
            raise FetchError(f"{what} {url}: {_describe(exc)}", url=url) from None
        return raw.status_code

    # -- internals ------------------------------------------------------------------------------

    def _normalize(self, url: str, what: str) -> str:
        if not isinstance(url, str):
            raise UnsafeURLError(f"{what} {url!r} is not a URL", url=str(url))
        url = url.strip()
        if url.startswith("//"):
            url = "https:" + url
        return url.replace(" ", "%20")

    def _count(self, url: str, outcome: str, started: float) -> None:
        """Counts a fetch of ``url`` (by the host asked for, before any redirect) in ``self.metrics``.
        An address the policy refused is not counted: nothing was fetched, and what anyone asks for
        must not add to the metrics (the refusal is the request's 400, or the step's failure)."""
        if self.metrics is not None and outcome != "refused":
            host = (urlsplit(url).hostname or "unknown").lower()
            self.metrics.fetched(host, outcome, max(0.0, self.clock() - started))

    @contextlib.contextmanager
    def _url_lock(self, url: str) -> Iterator[None]:
        with self._lock:
            lock = self._url_locks.setdefault(url, threading.RLock())
        with lock:
            yield

    @contextlib.contextmanager
    def _host_slot(self, host: str) -> Iterator[None]:
        with self._lock:
            slots = self._host_slots.setdefault(host, threading.BoundedSemaphore(self.conf.per_host))
            host_lock = self._host_locks.setdefault(host, threading.Lock())
        with slots:
            interval = self.conf.min_interval
            if interval > 0:
                with host_lock:
                    last = self._host_last.get(host)
                    wait = 0.0 if last is None else last + interval - self.clock()
                    if wait > 0:
                        self.sleep(wait)
                    self._host_last[host] = self.clock()
            yield

    def _get_uncached(self, url: str, *, what: str, max_bytes: int) -> Response:
        current = url
        redirects = 0
        attempt = 0
        while True:
            target = self.target(current, what=what)  # resolved once per hop; we connect to target.address
            host = f"{target.host}:{target.port}"
            try:
                with self._host_slot(host), self.adapter.deadlines.within(self.conf.total_timeout) as deadline:
                    with self._lock:
                        self.requests_sent += 1
                    sent = {"User-Agent": self.conf.user_agent, "Accept": "*/*"}
                    bearer = self.credentials.bearer(current)  # per hop: a redirect elsewhere carries none
                    if bearer is not None:
                        sent["Authorization"] = f"Bearer {bearer}"
                    prepared = requests.Request("GET", current, headers=sent).prepare()
                    raw = self.adapter.send_pinned(
                        prepared,
                        target,
                        stream=True,
                        timeout=(self.conf.connect_timeout, min(self.conf.read_timeout, self.conf.total_timeout)),
                        verify=self.session.verify,
                        cert=self.session.cert,
                    )
                    try:
                        status = raw.status_code
                        if status in REDIRECT_STATUSES and raw.headers.get("Location"):
                            location = raw.headers["Location"]
                            body = None
                        elif status >= 400:
                            location = None
                            body = self._auth_body(raw, status, current, what)
                        else:
                            location = None
                            body = self._read_body(raw, current, what=what, max_bytes=max_bytes)
                        headers = CaseInsensitiveDict(raw.headers)  # servers vary the case
                    finally:
                        raw.close()
            except (requests.RequestException, OSError, ValueError, http.client.HTTPException) as exc:
                if deadline.expired:  # never retried: a trickling server would hold us (retries + 1) times
                    raise FetchError(
                        f"{what} {current}: took longer than {self.conf.total_timeout} s", url=current
                    ) from None
                if not isinstance(exc, requests.Timeout | requests.ConnectionError):
                    raise FetchError(f"{what} {current}: {_describe(exc)}", url=current) from None
                if attempt < self.conf.retries:
                    delay = self.conf.backoff * 2**attempt
                    log.info("%s %s: %s; retrying in %.1f s", what, current, type(exc).__name__, delay)
                    attempt += 1
                    self.sleep(delay)
                    continue
                raise FetchError(f"{what} {current}: {_describe(exc)}", url=current) from None
            if location is not None:
                redirects += 1
                if redirects > self.conf.max_redirects:
                    raise FetchError(f"{what} {url}: more than {self.conf.max_redirects} redirects", url=url)
                current = self._normalize(urljoin(current, location), what)
                continue
            if status in RETRY_STATUSES and attempt < self.conf.retries:
                delay = self._retry_delay(headers, attempt, current, what, status)
                log.info("%s %s: HTTP %d; retrying in %.1f s", what, current, status, delay)
                attempt += 1
                self.sleep(delay)
                continue
            if status >= 400 or body is None:
                error = FetchError(f"{what} {current}: HTTP {status}", url=current, status=status)
                error.body = body  # a 401/403's own body (IIIF Auth: the info.json naming its login service)
                raise error
            if status != 200:
                raise FetchError(f"{what} {current}: unexpected HTTP {status}", url=current, status=status)
            return Response(
                url=url,
                final_url=current,
                status=status,
                content_type=str(headers.get("Content-Type", "")),
                content=body,
            )

    def _retry_delay(self, headers: CaseInsensitiveDict, attempt: int, url: str, what: str, status: int) -> float:
        delay = _retry_after(headers.get("Retry-After"), self.wall_clock())
        if delay is None:
            return self.conf.backoff * 2**attempt
        if delay > self.conf.max_retry_after:
            raise FetchError(
                f"{what} {url}: HTTP {status}, and the server asks to wait {delay:.0f} s "
                f"(more than max_retry_after={self.conf.max_retry_after} s)",
                url=url,
                status=status,
            )
        return delay

    def _auth_body(self, raw: requests.Response, status: int, url: str, what: str) -> bytes | None:
        """The body of a 401/403, up to ``max_json_bytes`` (None for other errors or when unreadable)."""
        if status not in (401, 403):
            return None
        try:
            return self._read_body(raw, url, what=what, max_bytes=self.conf.max_json_bytes)
        except (LimitError, FetchError, requests.RequestException, OSError, ValueError, http.client.HTTPException):
            return None

    def _read_body(self, raw: requests.Response, url: str, *, what: str, max_bytes: int) -> bytes:
        length = raw.headers.get("Content-Length")
        if length and length.isdigit() and int(length) > max_bytes:
            raise LimitError(f"{what} {url} is {int(length)} bytes, more than the cap of {max_bytes}", url=url)
        deadline = self.clock() + self.conf.total_timeout  # also enforced by the socket watchdog (pinning)
        chunks: list[bytes] = []
        size = 0
        for chunk in raw.iter_content(chunk_size=65536):
            size += len(chunk)
            if size > max_bytes:
                raise LimitError(f"{what} {url} is more than the cap of {max_bytes} bytes", url=url)
            if self.clock() > deadline:
                raise FetchError(f"{what} {url}: took longer than {self.conf.total_timeout} s", url=url)
            chunks.append(chunk)
        return b"".join(chunks)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, requests.Timeout):
        return "timed out"
    if isinstance(exc, requests.ConnectionError):
        return "cannot connect"
    return f"{type(exc).__name__}: {exc}"


def fetcher_for(
    settings: Settings, *, allowed_hosts: Sequence[str] = (), cache_dir: str | Path | None = None, **injected: Any
) -> Fetcher:
    """The fetcher of a process with these settings (``settings.iiif``, ``settings.allowed_hosts``).

    ``allowed_hosts`` adds hosts (the command line's ``--allow-host``), ``cache_dir`` replaces the
    cache folder; ``injected`` passes ``session``, ``resolve``, ``sleep``, ``clock`` or
    ``wall_clock`` through (tests), and ``FetchSettings`` fields as overrides.
    """
    conf = settings.iiif if cache_dir is None else replace(settings.iiif, cache_dir=Path(cache_dir))
    return Fetcher(conf, allowed_hosts=(*settings.allowed_hosts, *allowed_hosts), **injected)

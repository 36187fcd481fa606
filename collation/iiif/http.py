"""Polite, safe HTTP for IIIF: one ``Fetcher`` per process (or per job), shared by every request.

Libraries rate-limit and block bots, servers answer HTML error pages with status 200, and a
service that fetches URLs supplied by users can be turned against its own network. So every request
goes through ``Fetcher.get``, which:

- refuses anything but http/https, and hosts that resolve to loopback, private, link-local,
  multicast or otherwise non-global addresses, unless ``allow_private`` is set or the host is in
  ``allowed_hosts``; redirects are followed by hand and each hop is checked again;
- sends a User-Agent naming the project, limits concurrent requests per host, applies connect/read
  timeouts and a total deadline, retries 429 and 5xx with exponential back-off honouring
  ``Retry-After`` (up to a cap), and retries connection errors;
- caps the bytes read (manifests, images) and the pixels decoded (decompression bombs);
- caches successful bodies on disk (``cache_dir``) and parsed JSON in memory, so nothing is
  fetched twice, even by threads asking at the same moment.

API::

    fetcher = Fetcher(cache_dir=..., allowed_hosts=["127.0.0.1"], per_host=4)
    doc, final_url = fetcher.get_json(url, what="manifest")       # Any, str
    image = fetcher.get_image(url, what="region")                  # PIL.Image.Image, RGB
    response = fetcher.get(url, what="...", max_bytes=...)         # Response (bytes + headers)
    check_url(url, resolve=socket.getaddrinfo, allow_private=False, allowed_hosts=())  # -> str

Known limit: the address check and the connection resolve the host separately, so a DNS server
that answers differently within milliseconds (DNS rebinding) is not stopped here; deployments that
fetch untrusted URLs should also block private ranges at the network level.
"""

from __future__ import annotations

import contextlib
import email.utils
import hashlib
import http.client
import io
import ipaddress
import json
import logging
import os
import socket
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urljoin, urlsplit

import requests
from PIL import Image
from requests.structures import CaseInsensitiveDict

from collation import __version__
from collation.atomic import write_bytes
from collation.iiif.errors import FetchError, LimitError, ManifestError, UnsafeURLError
from collation.settings import Settings

log = logging.getLogger("collation.iiif.http")

PROJECT_URL = "https://github.com/image-collation/image-collation"
"""Where the project lives; named in the User-Agent and in the annotations' creator."""

USER_AGENT = f"image-collation/{__version__} (+{PROJECT_URL})"

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
IMAGE_MAGIC = (
    b"\xff\xd8\xff",  # JPEG
    b"\x89PNG\r\n\x1a\n",
    b"GIF87a",
    b"GIF89a",
    b"II*\x00",  # TIFF little-endian
    b"MM\x00*",  # TIFF big-endian
    b"\x00\x00\x00\x0cjP  \r\n\x87\n",  # JPEG 2000 (jp2)
    b"\xff\x4f\xff\x51",  # JPEG 2000 codestream
)

Resolver = Callable[..., Iterable[Any]]
"""A ``socket.getaddrinfo``-like callable: ``resolve(host, port, type=...) -> [(family, type, proto,
canonname, sockaddr), ...]``; injected in tests so that no test depends on real DNS."""


@dataclass(frozen=True)
class Response:
    """A fetched body with what we need of its headers."""

    url: str
    final_url: str
    status: int
    content_type: str
    content: bytes
    from_cache: bool = False


def _address_problem(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why an address must not be fetched from, or None when it is a public unicast address."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if address.is_unspecified:
        return "unspecified"
    if address.is_private:
        return "private"
    if address.is_reserved or not address.is_global:
        return "not globally routable"
    return None


def _parse_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None


def check_url(
    url: str,
    *,
    resolve: Resolver = socket.getaddrinfo,
    allow_private: bool = False,
    allowed_hosts: Iterable[str] = (),
    what: str = "URL",
) -> str:
    """Return ``url`` if policy allows fetching it, else raise ``UnsafeURLError`` naming the reason.

    Only http and https are allowed. Unless ``allow_private`` is set or the host is listed in
    ``allowed_hosts``, every address the host resolves to must be a public unicast address: one
    private address is enough to refuse (a host may resolve to several).
    """
    if not isinstance(url, str) or not url:
        raise UnsafeURLError(f"{what} {url!r} is not a URL", url=str(url))
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError as exc:
        raise UnsafeURLError(f"{what} {url} is not a valid URL: {exc}", url=url) from None
    if parts.scheme not in ("http", "https"):
        raise UnsafeURLError(
            f"{what} {url} is refused: only http and https URLs are fetched, not {parts.scheme or 'no'} scheme",
            url=url,
        )
    if not host:
        raise UnsafeURLError(f"{what} {url} is refused: it names no host", url=url)
    allowed = {h.lower().strip("[]") for h in allowed_hosts}
    if host.lower() in allowed or allow_private:
        return url
    literal = _parse_ip(host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            infos = list(resolve(host, port or (443 if parts.scheme == "https" else 80), type=socket.SOCK_STREAM))
        except (OSError, UnicodeError, ValueError) as exc:
            raise FetchError(f"{what} {url}: cannot resolve host {host}: {exc}", url=url) from None
        addresses = [a for a in (_parse_ip(str(info[4][0])) for info in infos) if a is not None]
        if not addresses:
            raise FetchError(f"{what} {url}: host {host} resolves to no address", url=url)
    for address in addresses:
        problem = _address_problem(address)
        if problem is not None:
            raise UnsafeURLError(
                f"{what} {url} is refused: host {host} resolves to {problem} address {address} "
                "(set allow_private or list the host in allowed_hosts to fetch from it)",
                url=url,
            )
    return url


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


def looks_like_image(content: bytes) -> bool:
    """Whether ``content`` starts like an image file (JPEG, PNG, GIF, TIFF, WebP, JPEG 2000)."""
    if content[:4] == b"RIFF" and content[8:12] == b"WEBP":
        return True
    return any(content.startswith(magic) for magic in IMAGE_MAGIC)


class Fetcher:
    """HTTP client for IIIF documents and images; thread-safe, share one per process.

    Configuration is ``default_conf`` merged with keyword arguments; ``session``, ``resolve`` and
    ``sleep`` are injectable for tests.
    """

    default_conf: ClassVar[dict[str, Any]] = {
        "user_agent": USER_AGENT,  # sent with every request
        "connect_timeout": 10.0,  # seconds to open a connection
        "read_timeout": 30.0,  # seconds between two reads of the body
        "total_timeout": 120.0,  # seconds for one response, all reads together
        "retries": 3,  # further attempts after a 429, a 5xx or a connection error
        "backoff": 1.0,  # first back-off in seconds, doubled on each retry
        "max_retry_after": 60.0,  # longest Retry-After we honour; longer ones fail at once
        "max_redirects": 5,  # redirects followed per request, each checked like the first URL
        "per_host": 4,  # concurrent requests per host
        "min_interval": 0.0,  # seconds between two request starts on one host (e.g. 12 for Gallica)
        "cache_dir": None,  # directory of the on-disk cache; None keeps only the in-memory JSON cache
        "json_cache_entries": 512,  # parsed JSON documents kept in memory
        "max_json_bytes": 32 * 2**20,  # cap of a manifest, annotation list or info.json
        "max_image_bytes": 64 * 2**20,  # cap of one image response
        "max_image_pixels": 100_000_000,  # cap of one decoded image (decompression bombs)
        "allow_private": False,  # fetch from private/loopback/link-local addresses too
        "allowed_hosts": (),  # host names or literal addresses exempt from the address check
    }

    def __init__(
        self,
        *,
        session: requests.Session | None = None,
        resolve: Resolver = socket.getaddrinfo,
        sleep: Callable[[float], None] = time.sleep,
        **conf: Any,
    ) -> None:
        unknown = sorted(set(conf) - set(self.default_conf))
        if unknown:
            raise ValueError(f"unknown Fetcher options {unknown}; known: {sorted(self.default_conf)}")
        self.conf = {**self.default_conf, **conf}
        self.conf["allowed_hosts"] = tuple(self.conf["allowed_hosts"])
        if int(self.conf["per_host"]) < 1:
            raise ValueError("per_host must be at least 1")
        self.session = session if session is not None else requests.Session()
        self.resolve = resolve
        self.sleep = sleep
        self.cache_dir = Path(self.conf["cache_dir"]) if self.conf["cache_dir"] else None
        self._lock = threading.Lock()
        self._host_slots: dict[str, threading.BoundedSemaphore] = {}
        self._host_last: dict[str, float] = {}
        self._host_locks: dict[str, threading.Lock] = {}
        self._url_locks: dict[str, Any] = {}  # url -> RLock
        self._json: OrderedDict[str, tuple[Any, str]] = OrderedDict()
        self.requests_sent = 0
        self.region_long_side = 352  # the features' 22 cells of 16 px; fetcher_for sets the configured one

    # -- policy ---------------------------------------------------------------------------------

    def check(self, url: str, *, what: str = "URL") -> str:
        """``check_url`` with this fetcher's policy."""
        return check_url(
            url,
            resolve=self.resolve,
            allow_private=bool(self.conf["allow_private"]),
            allowed_hosts=self.conf["allowed_hosts"],
            what=what,
        )

    # -- public API -----------------------------------------------------------------------------

    def get(self, url: str, *, what: str = "document", max_bytes: int | None = None) -> Response:
        """GET ``url`` with retries, redirects checked hop by hop, caps and the disk cache.

        Raises ``UnsafeURLError`` (policy), ``LimitError`` (too large) or ``FetchError``
        (network, HTTP status, timeout); never a ``requests`` exception.
        """
        url = self._normalize(url, what)
        cap = int(max_bytes if max_bytes is not None else self.conf["max_image_bytes"])
        with self._url_lock(url):
            cached = self._cache_read(url)
            if cached is not None:
                return cached
            response = self._get_uncached(url, what=what, max_bytes=cap)
            self._cache_write(response)
            return response

    def get_json(self, url: str, *, what: str = "document", max_bytes: int | None = None) -> tuple[Any, str]:
        """Fetch and parse a JSON document; returns ``(document, final URL after redirects)``.

        An HTML page or a body that is not JSON raises ``ManifestError`` naming the URL.
        """
        url = self._normalize(url, what)
        with self._url_lock(url):  # threads asking for one info.json at once fetch and parse it once
            with self._lock:
                if url in self._json:
                    self._json.move_to_end(url)
                    return self._json[url]
            response = self.get(url, what=what, max_bytes=max_bytes or int(self.conf["max_json_bytes"]))
            doc = parse_json_bytes(response.content, url=url, what=what, content_type=response.content_type)
            with self._lock:
                self._json[url] = (doc, response.final_url)
                while len(self._json) > int(self.conf["json_cache_entries"]):
                    self._json.popitem(last=False)
            return doc, response.final_url

    def get_image(self, url: str, *, what: str = "image") -> Image.Image:
        """Fetch an image and decode it to RGB, after checking Content-Type, magic bytes and pixel count."""
        response = self.get(url, what=what, max_bytes=int(self.conf["max_image_bytes"]))
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
        return decode_image(response.content, url=url, what=what, max_pixels=int(self.conf["max_image_pixels"]))

    # -- internals ------------------------------------------------------------------------------

    def _normalize(self, url: str, what: str) -> str:
        if not isinstance(url, str):
            raise UnsafeURLError(f"{what} {url!r} is not a URL", url=str(url))
        url = url.strip()
        if url.startswith("//"):
            url = "https:" + url
        return url.replace(" ", "%20")

    @contextlib.contextmanager
    def _url_lock(self, url: str) -> Iterator[None]:
        with self._lock:
            lock = self._url_locks.setdefault(url, threading.RLock())
        with lock:
            yield

    @contextlib.contextmanager
    def _host_slot(self, host: str) -> Iterator[None]:
        with self._lock:
            slots = self._host_slots.setdefault(host, threading.BoundedSemaphore(int(self.conf["per_host"])))
            host_lock = self._host_locks.setdefault(host, threading.Lock())
        with slots:
            interval = float(self.conf["min_interval"])
            if interval > 0:
                with host_lock:
                    wait = self._host_last.get(host, -1e18) + interval - time.monotonic()
                    if wait > 0:
                        self.sleep(wait)
                    self._host_last[host] = time.monotonic()
            yield

    def _get_uncached(self, url: str, *, what: str, max_bytes: int) -> Response:
        current = url
        redirects = 0
        attempt = 0
        while True:
            self.check(current, what=what)
            host = urlsplit(current).netloc.lower()
            try:
                with self._host_slot(host):
                    with self._lock:
                        self.requests_sent += 1
                    raw = self.session.get(
                        current,
                        headers={"User-Agent": self.conf["user_agent"], "Accept": "*/*"},
                        timeout=(float(self.conf["connect_timeout"]), float(self.conf["read_timeout"])),
                        allow_redirects=False,
                        stream=True,
                    )
                    try:
                        status = raw.status_code
                        if status in REDIRECT_STATUSES and raw.headers.get("Location"):
                            location = raw.headers["Location"]
                            body = None
                        elif status >= 400:
                            location = None
                            body = None
                        else:
                            location = None
                            body = self._read_body(raw, current, what=what, max_bytes=max_bytes)
                        headers = CaseInsensitiveDict(raw.headers)  # servers vary the case
                    finally:
                        raw.close()
            except (requests.Timeout, requests.ConnectionError) as exc:
                if attempt < int(self.conf["retries"]):
                    delay = float(self.conf["backoff"]) * 2**attempt
                    log.info("%s %s: %s; retrying in %.1f s", what, current, type(exc).__name__, delay)
                    attempt += 1
                    self.sleep(delay)
                    continue
                raise FetchError(f"{what} {current}: {_describe(exc)}", url=current) from None
            except (requests.RequestException, OSError, ValueError, http.client.HTTPException) as exc:
                raise FetchError(f"{what} {current}: {_describe(exc)}", url=current) from None
            if location is not None:
                redirects += 1
                if redirects > int(self.conf["max_redirects"]):
                    raise FetchError(f"{what} {url}: more than {self.conf['max_redirects']} redirects", url=url)
                current = self._normalize(urljoin(current, location), what)
                continue
            if status in RETRY_STATUSES and attempt < int(self.conf["retries"]):
                delay = self._retry_delay(headers, attempt, current, what, status)
                log.info("%s %s: HTTP %d; retrying in %.1f s", what, current, status, delay)
                attempt += 1
                self.sleep(delay)
                continue
            if status >= 400 or body is None:
                raise FetchError(f"{what} {current}: HTTP {status}", url=current, status=status)
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
        delay = _retry_after(headers.get("Retry-After"), time.time())
        if delay is None:
            return float(self.conf["backoff"]) * 2**attempt
        if delay > float(self.conf["max_retry_after"]):
            raise FetchError(
                f"{what} {url}: HTTP {status}, and the server asks to wait {delay:.0f} s "
                f"(more than max_retry_after={self.conf['max_retry_after']} s)",
                url=url,
                status=status,
            )
        return delay

    def _read_body(self, raw: requests.Response, url: str, *, what: str, max_bytes: int) -> bytes:
        length = raw.headers.get("Content-Length")
        if length and length.isdigit() and int(length) > max_bytes:
            raise LimitError(f"{what} {url} is {int(length)} bytes, more than the cap of {max_bytes}", url=url)
        deadline = time.monotonic() + float(self.conf["total_timeout"])
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in raw.iter_content(chunk_size=65536):
                size += len(chunk)
                if size > max_bytes:
                    raise LimitError(f"{what} {url} is more than the cap of {max_bytes} bytes", url=url)
                if time.monotonic() > deadline:
                    raise FetchError(f"{what} {url}: took longer than {self.conf['total_timeout']} s", url=url)
                chunks.append(chunk)
        except requests.RequestException as exc:
            raise FetchError(f"{what} {url}: {_describe(exc)}", url=url) from None
        return b"".join(chunks)

    # -- cache ----------------------------------------------------------------------------------

    def _cache_paths(self, url: str) -> tuple[Path, Path] | None:
        if self.cache_dir is None:
            return None
        key = hashlib.sha256(url.encode("utf-8")).hexdigest()
        folder = self.cache_dir / key[:2]
        return folder / f"{key}.body", folder / f"{key}.meta.json"

    def _cache_read(self, url: str) -> Response | None:
        paths = self._cache_paths(url)
        if paths is None or not paths[0].is_file() or not paths[1].is_file():
            return None
        try:
            meta = json.loads(paths[1].read_text(encoding="utf-8"))
            content = paths[0].read_bytes()
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

    def _cache_write(self, response: Response) -> None:
        paths = self._cache_paths(response.url)
        if paths is None:
            return
        meta = {
            "url": response.url,
            "final_url": response.final_url,
            "status": response.status,
            "content_type": response.content_type,
        }
        try:
            paths[0].parent.mkdir(parents=True, exist_ok=True)
            write_bytes(paths[0], response.content)
            write_bytes(paths[1], json.dumps(meta).encode("utf-8"))
        except OSError as exc:  # a full or read-only cache must not fail the fetch
            log.warning("cache: cannot write %s: %s", paths[0], exc)


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/image-collation/iiif`` (``~/.cache/...`` when unset): where the command line
    keeps fetched manifests and images between runs."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "image-collation" / "iiif"


def conf_from_env(environ: dict[str, str] | None = None, prefix: str = "COLLATION_IIIF_") -> dict[str, Any]:
    """Fetcher options from environment variables, e.g. ``COLLATION_IIIF_ALLOW_PRIVATE=1``,
    ``COLLATION_IIIF_ALLOWED_HOSTS=iiif.internal,10.0.0.5``, ``COLLATION_IIIF_PER_HOST=2``,
    ``COLLATION_IIIF_CACHE_DIR=/var/cache/collation``; typed after ``Fetcher.default_conf``.
    Pass the result as ``Fetcher(**conf)``; bad values raise ``ValueError`` naming the variable."""
    environ = dict(os.environ if environ is None else environ)
    conf: dict[str, Any] = {}
    for key, default in Fetcher.default_conf.items():
        name = prefix + key.upper()
        if name not in environ:
            continue
        raw = environ[name].strip()
        try:
            if isinstance(default, bool):
                if raw.lower() not in ("1", "0", "true", "false", "yes", "no", "on", "off", ""):
                    raise ValueError(raw)
                conf[key] = raw.lower() in ("1", "true", "yes", "on")
            elif isinstance(default, tuple):
                conf[key] = tuple(h.strip() for h in raw.split(",") if h.strip())
            elif isinstance(default, int):
                conf[key] = int(raw)
            elif isinstance(default, float):
                conf[key] = float(raw)
            else:
                conf[key] = raw or None
        except ValueError:
            raise ValueError(f"{name}={raw!r} is not a valid value for {key}") from None
    return conf


def _describe(exc: BaseException) -> str:
    if isinstance(exc, requests.Timeout):
        return "timed out"
    if isinstance(exc, requests.ConnectionError):
        return "cannot connect"
    return f"{type(exc).__name__}: {exc}"


def parse_json_bytes(content: bytes, *, url: str, what: str = "document", content_type: str = "") -> Any:
    """Decode a JSON body, with errors that say when the body was HTML instead of JSON."""
    head = content[:512].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html", b"<?xml", b"<")) or "html" in content_type.lower():
        raise ManifestError(f"{what} {url} is HTML (or XML), not JSON: probably an error or login page", url=url)
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ManifestError(f"{what} {url} is not UTF-8 text, so not JSON", url=url) from None
    try:
        return json.loads(text)
    except RecursionError:
        raise ManifestError(f"{what} {url} is nested too deeply to read", url=url) from None
    except ValueError as exc:
        raise ManifestError(f"{what} {url} is not valid JSON: {exc}", url=url) from None


def decode_image(content: bytes, *, url: str, what: str = "image", max_pixels: int = 100_000_000) -> Image.Image:
    """Decode image bytes to an RGB image, refusing more than ``max_pixels`` before decoding them."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(content))
            width, height = image.size
            if width * height > max_pixels:
                raise LimitError(f"{what} {url} is {width}×{height} pixels, more than the cap of {max_pixels}", url=url)
            image.load()
            return image.convert("RGB")
    except LimitError:
        raise
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError, MemoryError) as exc:
        raise FetchError(f"{what} {url}: cannot decode the image: {exc}", url=url) from None


def fetcher_from_env(*, allowed_hosts: Sequence[str] = (), cache_dir: str | Path | None = None,
                     fallback_cache_dir: str | Path | None = None, environ: dict[str, str] | None = None) -> Fetcher:
    """The one way the command line and the service build their fetcher from the environment.

    ``COLLATION_ALLOWED_HOSTS`` (comma-separated) lists hosts that may resolve to private or
    loopback addresses; every other ``Fetcher`` option comes from ``COLLATION_IIIF_*``
    (``conf_from_env``). ``allowed_hosts`` adds hosts; ``cache_dir`` overrides the cache folder,
    ``fallback_cache_dir`` applies when neither it nor ``COLLATION_IIIF_CACHE_DIR`` is set.
    """
    environ = dict(os.environ if environ is None else environ)
    conf = conf_from_env(environ)
    listed = [h.strip() for h in environ.get("COLLATION_ALLOWED_HOSTS", "").split(",") if h.strip()]
    conf["allowed_hosts"] = (*conf.get("allowed_hosts", ()), *listed, *allowed_hosts)
    if cache_dir is not None:
        conf["cache_dir"] = str(cache_dir)
    elif conf.get("cache_dir") is None and fallback_cache_dir is not None:
        conf["cache_dir"] = str(fallback_cache_dir)
    return Fetcher(**conf)



def fetcher_for(settings: Settings, *, allowed_hosts: Sequence[str] = (), cache_dir: str | Path | None = None,
                **injected: Any) -> Fetcher:
    """The fetcher of a process with these settings (``settings.iiif``, ``settings.allowed_hosts``).

    ``allowed_hosts`` adds hosts (the command line's ``--allow-host``), ``cache_dir`` replaces the
    cache folder; ``injected`` passes ``session``, ``resolve`` or ``sleep`` through (tests).
    """
    iiif = settings.iiif
    conf = {key: getattr(iiif, key) for key in Fetcher.default_conf if hasattr(iiif, key)}
    conf["cache_dir"] = str(cache_dir) if cache_dir is not None else (str(iiif.cache_dir) if iiif.cache_dir else None)
    conf["allowed_hosts"] = (*settings.allowed_hosts, *allowed_hosts)
    fetcher = Fetcher(**conf, **injected)
    fetcher.region_long_side = iiif.region_long_side
    return fetcher

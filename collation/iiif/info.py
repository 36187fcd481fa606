"""Image API ``info.json``: what a service offers (size, level, sizes, tiles, caps), read leniently.

Image API 1.1, 2.x and 3.0 documents are read into one ``ServiceInfo``; features the level implies
count as declared. API::

    info = read_info(service_id, fetcher=fetcher)     # ServiceInfo, fetched once per fetcher
    info = parse_info(doc, url=...)                    # ServiceInfo from parsed JSON
    info.supports("regionByPx") -> bool
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from collation.core.errors import FetchError, ManifestError
from collation.iiif.model import MAX_SIDE, as_list, json_id, json_type, service_base

if TYPE_CHECKING:
    from collation.net.http import Fetcher

_LEVEL_FEATURES = {
    1: {"regionByPx", "sizeByW", "sizeByH"},
    2: {"regionByPx", "regionByPct", "sizeByW", "sizeByH", "sizeByPct", "sizeByWh", "sizeByConfinedWh"},
}


@dataclass(frozen=True)
class TileSpec:
    """One ``tiles`` entry of info.json."""

    width: int
    height: int
    scale_factors: tuple[int, ...]


@dataclass(frozen=True)
class ServiceInfo:
    """What we use of an Image API ``info.json``."""

    id: str
    version: int  # 1, 2 or 3
    level: int  # 0, 1 or 2 (0 when undeclared: the safe assumption)
    width: int
    height: int
    sizes: tuple[tuple[int, int], ...] = ()
    tiles: tuple[TileSpec, ...] = ()
    max_width: int | None = None
    max_height: int | None = None
    max_area: int | None = None
    features: frozenset[str] = frozenset()
    login: str | None = None  # IIIF Auth login page declared in info.json, when access is restricted

    def supports(self, feature: str) -> bool:
        """Whether the service declares ``feature`` through its level or an extra feature."""
        if feature in self.features:
            return True
        return any(feature in _LEVEL_FEATURES.get(level, set()) for level in range(1, self.level + 1))

    @property
    def quality(self) -> str:
        return "native" if self.version == 1 else "default"


# -- info.json -----------------------------------------------------------------------------------


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    number = int(value)
    return number if 0 < number <= MAX_SIDE * MAX_SIDE else None


def parse_info(doc: Any, *, url: str, version_hint: int | None = None) -> ServiceInfo:
    """Read an info.json (Image API 1.1, 2.x or 3.0). ``url`` is the service base we fetched it from.

    The declared id is used only when it is on the same host as ``url``: servers behind proxies
    often declare an id without the port or with the wrong scheme.
    """
    where = f"info.json of {url}"
    if not isinstance(doc, dict):
        raise ManifestError(f"{where} is not a JSON object", url=url)
    contexts = " ".join(c for c in as_list(doc.get("@context")) if isinstance(c, str))
    profiles = as_list(doc.get("profile"))
    profile_texts = [p for p in profiles if isinstance(p, str)]
    kind = json_type(doc)
    version = version_hint
    for text in [contexts, kind, *profile_texts]:
        match = re.search(r"image/(\d)|ImageService(\d)|image-api/(\d)", text)
        if match:
            version = int(next(g for g in match.groups() if g))
            break
    if version not in (1, 2, 3):
        version = 3 if "id" in doc and "@id" not in doc else 2
    width, height = _positive_int(doc.get("width")), _positive_int(doc.get("height"))
    if width is None or height is None or width > MAX_SIDE or height > MAX_SIDE:
        raise ManifestError(f"{where} has no usable width and height", url=url, field="width")
    level = 0
    for text in profile_texts:
        match = re.search(r"level([0-2])", text)
        if match:
            level = int(match.group(1))
            break
    features: set[str] = set()
    caps: dict[str, int | None] = {"maxWidth": None, "maxHeight": None, "maxArea": None}
    for source in [doc, *(p for p in profiles if isinstance(p, dict))]:
        for key in ("supports", "extraFeatures"):
            features.update(f for f in as_list(source.get(key)) if isinstance(f, str))
        for key in caps:
            value = _positive_int(source.get(key))
            if value is not None:
                caps[key] = value
    sizes = []
    for entry in as_list(doc.get("sizes"))[:100]:
        if isinstance(entry, dict):
            w, h = _positive_int(entry.get("width")), _positive_int(entry.get("height"))
            if w and h and w <= width * 2 and h <= height * 2:
                sizes.append((w, h))
    tiles = []
    for entry in as_list(doc.get("tiles"))[:10]:
        if not isinstance(entry, dict):
            continue
        tw = _positive_int(entry.get("width"))
        th = _positive_int(entry.get("height")) or tw
        factors = tuple(
            sorted({f for f in (_positive_int(s) for s in as_list(entry.get("scaleFactors"))[:30]) if f and f < 2**16})
        )
        if tw and th and tw <= MAX_SIDE and th <= MAX_SIDE:
            tiles.append(TileSpec(tw, th, factors or (1,)))
    base = service_base(url)
    declared = json_id(doc)
    if declared:
        declared = service_base(declared, url)
        if urlsplit(declared)[:2] == urlsplit(base)[:2]:
            base = declared
    max_height = caps["maxHeight"]
    if caps["maxWidth"] is not None and max_height is None:
        max_height = caps["maxWidth"]  # the spec: maxHeight defaults to maxWidth
    return ServiceInfo(
        id=base,
        version=version,
        level=level,
        width=width,
        height=height,
        sizes=tuple(sorted(set(sizes))),
        tiles=tuple(tiles),
        max_width=caps["maxWidth"],
        max_height=max_height,
        max_area=caps["maxArea"],
        features=frozenset(features),
        login=auth_login(doc),
    )


def read_info(service_id: str, *, fetcher: Fetcher, version_hint: int | None = None) -> ServiceInfo:
    """Fetch (once per fetcher) and parse ``{service_id}/info.json``.

    A 401 or 403 whose body is an info.json declaring a IIIF Auth service raises ``FetchError``
    "login required at <login URL>" with that URL as ``login``; any other failure is re-raised.
    """
    base = service_base(service_id)
    url = f"{base}/info.json"
    accept = lambda d: parse_info(d, url=base, version_hint=version_hint)  # noqa: E731
    try:
        doc, _final = fetcher.get_json(url, what="info.json", accept=accept)
    except FetchError as exc:
        login = _login_in(getattr(exc, "body", None)) if exc.status in (401, 403) else None
        if login is None:
            raise
        token = fetcher.credentials.tokens.get(login)
        if token is None:
            error = FetchError(
                f"image service {base}: login required at {login} (HTTP {exc.status})", url=exc.url, status=exc.status
            )
            error.login = login
            raise error from None
        doc = _with_token(fetcher, url, token, login, accept)
        info = parse_info(doc, url=base, version_hint=version_hint)
        fetcher.credentials.authorize(info.id, token)  # the images, at the id the service declares (its host)
        return info
    return parse_info(doc, url=base, version_hint=version_hint)


def _with_token(fetcher: Fetcher, url: str, token: str, login: str, accept: Any) -> Any:
    """The info.json at ``url`` fetched again with the access token of ``login``, on ``url``'s host only
    (the host that answered 401 naming that access service): IIIF Auth 2.0."""
    fetcher.credentials.authorize(url, token)
    try:
        doc, _final = fetcher.get_json(url, what="info.json", accept=accept)
    except FetchError as exc:
        if exc.status not in (401, 403):
            raise
        error = FetchError(
            f"image service {url}: the access token given for {login} was refused (HTTP {exc.status}); "
            f"log in at {login} again for a new one",
            url=exc.url,
            status=exc.status,
        )
        error.login = login
        raise error from None
    return doc


def _login_in(body: bytes | None) -> str | None:
    """The login service named by the info.json of a 401/403 body, or None."""
    try:
        doc = json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError):
        return None
    return auth_login(doc)


_AUTH_LOGIN = re.compile(r"iiif\.io/api/auth/[01]/(login|clickthrough|kiosk|external)")


def auth_login(service: Any, depth: int = 0) -> str | None:
    """The login page of a IIIF Auth service declared on an image service or info.json, or None.

    Auth 1: a ``service`` entry whose profile is ``…/auth/1/login`` (or clickthrough, kiosk,
    external); Auth 2: an ``AuthProbeService2`` whose ``service`` holds an ``AuthAccessService2``.
    """
    if depth > 3 or not isinstance(service, dict):
        return None
    for entry in as_list(service.get("service"))[:20]:
        if not isinstance(entry, dict):
            continue
        kind = json_type(entry)
        profiles = " ".join(p for p in as_list(entry.get("profile")) if isinstance(p, str))
        if _AUTH_LOGIN.search(profiles) or kind == "AuthAccessService2":
            return json_id(entry)
        if kind == "AuthProbeService2" or "auth/1/" in profiles or "auth/2/" in profiles:
            inner = auth_login(entry, depth + 1)
            if inner:
                return inner
    return None

"""What we keep of a IIIF manifest, and the small helpers that read lenient JSON-LD values.

``Manifest``, ``Canvas``, ``ImageSource`` and ``AnnotationSource`` are the reduced model every other
module works on (parsing in ``manifests``, coordinates in ``geometry``, painting bodies in
``painting``). The helpers accept anything JSON can hold and never raise on odd input:

    as_list(value) -> list                 # one value or a list, always a list
    json_id(obj) -> str | None             # ``id`` (3.0) or ``@id`` (2.x)
    json_type(obj) -> str                  # ``type`` or ``@type``, first of a list
    bare("oa:Choice") -> "choice"          # no JSON-LD prefix, lower case
    label_text(value) -> str               # display text of any label form
    normalize_url(value, base) -> str      # protocol-relative ids made fetchable
    service_base(value, base) -> str       # Image API base URI from a declared service id
    dimension(value, name, url) -> int | None   # a positive pixel size, capped at MAX_SIDE
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from collation.core.errors import LimitError

MAX_SIDE = 1_000_000
"""Cap on a canvas or image side, in pixels; larger values are treated as broken, not as data."""

MAX_LABEL = 500
"""Labels are for display: longer ones are cut."""

_REQUEST_SUFFIX = re.compile(
    r"/(?:full|square|\d+,\d+,\d+,\d+|pct:[\d.,]+)/(?:full|max|\^?\d*,\d*|!\d+,\d+|\^?pct:[\d.]+|\^?max)"
    r"/!?\d+(?:\.\d+)?/(?:default|native|color|colour|gray|grey|bitonal)(?:\.\w+)?$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ImageSource:
    """Where a canvas's pixels come from: an Image API service, or a static image, or both.

    ``target`` is the part of the canvas the image paints (canvas units; None = whole canvas) and
    ``selector`` the part of the image shown there (image pixels; None = whole image), so that
    coordinates map both ways even for composite or cropped canvases.
    """

    service_id: str | None = None
    service_version: int | None = None  # Image API 1, 2 or 3; None when unknown
    level: int | None = None  # compliance level 0..2 declared in the manifest; info.json decides
    profile: dict[str, Any] = field(default_factory=dict, compare=False)
    static_url: str | None = None
    format: str | None = None
    width: int | None = None
    height: int | None = None
    target: tuple[float, float, float, float] | None = None
    selector: tuple[float, float, float, float] | None = None
    choice: str | None = None  # label or id of the item picked from a Choice body
    rotation: int = 0  # clockwise degrees (0, 90, 180, 270) of an ImageApiSelector on the body
    mirrored: bool = False  # ImageApiSelector rotation "!n": mirrored before rotating
    layers: tuple[str, ...] = ()  # ids of every item of a Choice body (annotations may target one)
    annotation_id: str | None = None  # the painting annotation, for reports
    login: str | None = None  # IIIF Auth login (or access) service declared on the image service


@dataclass(frozen=True)
class AnnotationSource:
    """One entry of a canvas's ``otherContent`` (2.1) or ``annotations`` (3.0): embedded or by URL."""

    url: str | None
    embedded: Any = field(default=None, compare=False)


@dataclass(frozen=True)
class Canvas:
    """A canvas as declared; ``index`` is its position among the manifest's canvases (0-based)."""

    id: str
    index: int
    label: str
    width: int | None
    height: int | None
    image: ImageSource | None
    annotation_sources: tuple[AnnotationSource, ...] = ()
    images: tuple[ImageSource, ...] = ()  # every painting image, in order; ``image`` is the first
    problems: tuple[str, ...] = ()  # painting annotations or bodies that were not used, and why

    def painted(self) -> tuple[ImageSource, ...]:
        """Every image painted on this canvas (``images``, or ``image`` alone when built by hand)."""
        if self.images:
            return self.images
        return (self.image,) if self.image is not None else ()


@dataclass(frozen=True)
class Manifest:
    """A manifest reduced to what collation needs, plus the parsed JSON for derived manifests."""

    id: str
    url: str | None
    version: int  # Presentation 2 (2.0/2.1) or 3
    label: str
    canvases: tuple[Canvas, ...]
    raw: dict[str, Any] = field(compare=False, repr=False)
    problems: tuple[str, ...] = ()
    annotation_sources: tuple[AnnotationSource, ...] = ()  # manifest-level (3.0 ``annotations``)

    def canvas(self, canvas_id: str) -> Canvas | None:
        """The canvas with this id as published, or None."""
        for canvas in self.canvases:
            if canvas.id == canvas_id:
                return canvas
        return None


# -- small JSON helpers --------------------------------------------------------------------------


def as_list(value: Any) -> list[Any]:
    """IIIF allows one value or a list almost everywhere; always get a list."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    return [value]


def json_id(obj: Any) -> str | None:
    """``id`` (3.0) or ``@id`` (2.x) of an object, or the string itself."""
    if isinstance(obj, str):
        return obj.strip() or None
    if isinstance(obj, dict):
        for key in ("id", "@id"):
            value = obj.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
    return None


def json_type(obj: Any) -> str:
    """``type`` or ``@type`` of an object (the first one when it is a list), or ''."""
    if not isinstance(obj, dict):
        return ""
    for key in ("type", "@type"):
        for value in as_list(obj.get(key)):
            if isinstance(value, str):
                return value
    return ""


def bare(name: str) -> str:
    """A type or motivation without its JSON-LD prefix, lower-cased: ``oa:Choice`` -> ``choice``."""
    return name.rsplit(":", 1)[-1].rsplit("#", 1)[-1].rsplit("/", 1)[-1].strip().lower()


def label_text(value: Any, languages: tuple[str, ...] = ("en", "none")) -> str:
    """Display text of a label: a string, a 3.0 language map, or a 2.x ``@value`` (list)."""
    text = _label_text(value, languages, depth=0)
    text = " ".join(text.split())
    return text[:MAX_LABEL]


def _label_text(value: Any, languages: tuple[str, ...], depth: int) -> str:
    if depth > 4 or value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return ""
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict):
        if "@value" in value:
            return _label_text(value["@value"], languages, depth + 1)
        keys = [k for k in languages if k in value] + [k for k in value if k not in languages]
        for key in keys:
            text = "; ".join(t for t in (_label_text(v, languages, depth + 1) for v in as_list(value[key])) if t)
            if text:
                return text
        return ""
    if isinstance(value, list):
        tagged = [v for v in value if isinstance(v, dict) and "@value" in v]
        for lang in languages:
            for v in tagged:
                if v.get("@language") == lang:
                    return _label_text(v, languages, depth + 1)
        return "; ".join(t for t in (_label_text(v, languages, depth + 1) for v in value[:20]) if t)
    return ""


def normalize_url(value: str, base: str | None = None) -> str:
    """Make protocol-relative ids fetchable and encode spaces; everything else is kept as is."""
    value = value.strip()
    if value.startswith("//"):
        scheme = base.split(":", 1)[0] if base and base.startswith(("http:", "https:")) else "https"
        value = f"{scheme}:{value}"
    return value.replace(" ", "%20")


def service_base(value: str, base: str | None = None) -> str:
    """An Image API base URI from a declared service id: strip ``/info.json``, a trailing slash, or a
    whole image request (``/full/full/0/default.jpg``) that some manifests put there."""
    value = normalize_url(value, base)
    value = _REQUEST_SUFFIX.sub("", value)
    if value.endswith("/info.json"):
        value = value[: -len("/info.json")]
    return value.rstrip("/")


def dimension(value: Any, name: str, url: str | None) -> int | None:
    """A positive pixel size from an int, an integral float or a numeric string; None when absent or
    unusable; ``LimitError`` when absurdly large (a broken manifest, or a trap)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, int | float) or not math.isfinite(value):
        return None
    if value > MAX_SIDE:
        raise LimitError(
            f"{url or 'manifest'}: {name} is {value:g} pixels, more than the cap of {MAX_SIDE}",
            url=url,
            field=name,
        )
    size = round(value)
    return size if size > 0 else None

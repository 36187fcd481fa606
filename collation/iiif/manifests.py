"""Lenient reading of IIIF Presentation 2.1 and 3.0 manifests into a few dataclasses of our own.

Real manifests from many libraries break the specs in many small ways (services as objects or
lists, 1.1 contexts, protocol-relative ids, Choice bodies, canvases larger than their images), so
parsing keeps only what collation needs and survives everything else: a document is either read,
possibly with ``Manifest.problems`` listing canvases it skipped, or refused with a ``ManifestError``
(or ``LimitError``) naming the URL and the reason. No other exception leaves this module.

API::

    manifest = load_manifest(source, fetcher=fetcher)            # URL or local .json path
    manifest = parse_manifest(doc, url=...)                      # already-parsed JSON
    version = detect_version(doc)                                # 2 or 3
    text = label_text(value)                                     # str from any IIIF label form
    unit, (x, y, w, h) = parse_xywh("xywh=percent:1,2,3,4")      # or None
    x, y, w, h = canvas_to_image(xywh, canvas)                   # floats, image pixels
    x, y, w, h = image_to_canvas(xywh, canvas, image_size)       # floats, canvas units

Canvas ids are kept byte for byte as published: they are the keys of every annotation we write.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collation.iiif.errors import LimitError, ManifestError

if TYPE_CHECKING:
    from collation.iiif.http import Fetcher

MAX_CANVASES = 10_000
"""Cap on canvases per manifest; the largest real codices have about 1,500."""

MAX_SIDE = 1_000_000
"""Cap on a canvas or image side, in pixels; larger values are treated as broken, not as data."""

MAX_LABEL = 500
"""Labels are for display: longer ones are cut."""

_XYWH = re.compile(
    r"xywh\s*=\s*(?:(pixel|percent)\s*:)?\s*"
    r"([-+]?[\d.]+(?:[eE][-+]?\d+)?)\s*,\s*([-+]?[\d.]+(?:[eE][-+]?\d+)?)\s*,\s*"
    r"([-+]?[\d.]+(?:[eE][-+]?\d+)?)\s*,\s*([-+]?[\d.]+(?:[eE][-+]?\d+)?)",
    re.IGNORECASE,
)
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


def parse_xywh(value: Any) -> tuple[str, tuple[float, float, float, float]] | None:
    """Parse a media-fragment ``xywh`` (``pixel:`` or ``percent:``) into (unit, numbers), or None.

    Accepts a bare fragment, ``xywh=…`` or a URI ending in ``#xywh=…``; negative or non-finite
    widths and heights are refused (None).
    """
    if not isinstance(value, str):
        return None
    text = value if "xywh" in value.lower() else f"xywh={value}"
    match = _XYWH.search(text)
    if match is None:
        return None
    try:
        numbers = tuple(float(g) for g in match.groups()[1:])
    except ValueError:
        return None
    if not all(math.isfinite(n) for n in numbers) or numbers[2] <= 0 or numbers[3] <= 0:
        return None
    unit = (match.group(1) or "pixel").lower()
    return unit, (numbers[0], numbers[1], numbers[2], numbers[3])


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


# -- coordinates ---------------------------------------------------------------------------------


def canvas_to_image(
    xywh: tuple[float, float, float, float],
    canvas: Canvas,
    image_size: tuple[int, int] | None = None,
) -> tuple[float, float, float, float]:
    """Map a canvas rectangle to image pixels (x_img = x_canvas · image.width / canvas.width, plus the
    offsets of the painting target and the image selector). ``image_size`` overrides the declared
    image size (info.json or the decoded static image is the authority)."""
    ix, iy, iw, ih = _image_rect(canvas, image_size)
    tx, ty, tw, th = _target_rect(canvas)
    sx, sy = iw / tw, ih / th
    x, y, w, h = xywh
    return ix + (x - tx) * sx, iy + (y - ty) * sy, w * sx, h * sy


def image_to_canvas(
    xywh: tuple[float, float, float, float],
    canvas: Canvas,
    image_size: tuple[int, int] | None = None,
) -> tuple[float, float, float, float]:
    """Inverse of ``canvas_to_image``: image pixels to canvas units."""
    ix, iy, iw, ih = _image_rect(canvas, image_size)
    tx, ty, tw, th = _target_rect(canvas)
    sx, sy = tw / iw, th / ih
    x, y, w, h = xywh
    return tx + (x - ix) * sx, ty + (y - iy) * sy, w * sx, h * sy


def _image_rect(canvas: Canvas, image_size: tuple[int, int] | None) -> tuple[float, float, float, float]:
    image = canvas.image
    if image is not None and image.selector is not None:
        return image.selector
    if image_size is not None:
        return 0.0, 0.0, float(image_size[0]), float(image_size[1])
    if image is not None and image.width and image.height:
        return 0.0, 0.0, float(image.width), float(image.height)
    if canvas.width and canvas.height:
        return 0.0, 0.0, float(canvas.width), float(canvas.height)
    raise ManifestError(f"canvas {canvas.id} has no known size", field="width")


def _target_rect(canvas: Canvas) -> tuple[float, float, float, float]:
    if canvas.image is not None and canvas.image.target is not None:
        return canvas.image.target
    if canvas.width and canvas.height:
        return 0.0, 0.0, float(canvas.width), float(canvas.height)
    if canvas.image is not None and canvas.image.width and canvas.image.height:
        return 0.0, 0.0, float(canvas.image.width), float(canvas.image.height)
    raise ManifestError(f"canvas {canvas.id} has no known size", field="width")


# -- version and type ----------------------------------------------------------------------------


def detect_version(doc: Any, *, url: str | None = None) -> int:
    """Presentation version of a document: from ``@context``, else from its structure."""
    where = url or "document"
    if not isinstance(doc, dict):
        raise ManifestError(f"{where} is not a JSON object but {_kind(doc)}", url=url)
    for context in as_list(doc.get("@context")):
        if not isinstance(context, str):
            continue
        match = re.search(r"iiif\.io/api/presentation/(\d+)", context)
        if match:
            version = int(match.group(1))
            if version in (2, 3):
                return version
            raise ManifestError(
                f"{where} uses IIIF Presentation {version}, which is not supported (only 2.x and 3.0)",
                url=url,
                field="@context",
            )
        if "shared-canvas.org" in context:
            return 2
    if "sequences" in doc or ("@id" in doc and "id" not in doc):
        return 2
    if "items" in doc or "id" in doc:
        return 3
    raise ManifestError(f"{where} is not a IIIF manifest: no Presentation @context, no sequences and no items", url=url)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(type(value), "a number")


def _check_type(doc: dict[str, Any], version: int, url: str | None) -> None:
    where = url or "document"
    kind = bare(json_type(doc))
    label = label_text(doc.get("label"))
    named = f" {label!r}" if label else ""
    if kind == "collection" or (version == 2 and not kind and ("manifests" in doc or "collections" in doc)):
        members = [json_id(m) for m in as_list(doc.get("manifests")) + as_list(doc.get("items"))]
        members = [m for m in members if m][:3]
        hint = f"; its first members: {', '.join(members)}" if members else ""
        raise ManifestError(
            f"{where} is a IIIF Collection{named} ({json_id(doc) or 'no id'}), not a Manifest: "
            f"pass the URL of one of its manifests{hint}",
            url=url,
            field="type",
        )
    if kind and kind != "manifest":
        raise ManifestError(
            f"{where} is of type {json_type(doc)}, not a IIIF Manifest",
            url=url,
            field="type" if version == 3 else "@type",
        )


# -- parsing -------------------------------------------------------------------------------------


def parse_manifest(doc: Any, *, url: str | None = None, max_canvases: int = MAX_CANVASES) -> Manifest:
    """Read a parsed manifest (2.x or 3.0). Raises ``ManifestError``/``LimitError`` when unusable.

    Canvases that cannot be used at all (no id, not an object) are skipped and listed in
    ``problems``; a manifest with no usable canvas is refused.
    """
    try:
        return _parse_manifest(doc, url=url, max_canvases=max_canvases)
    except RecursionError:
        raise ManifestError(f"{url or 'document'} is nested too deeply to read", url=url) from None


def _parse_manifest(doc: Any, *, url: str | None, max_canvases: int) -> Manifest:
    version = detect_version(doc, url=url)
    _check_type(doc, version, url)
    where = url or "manifest"
    manifest_id = json_id(doc)
    if manifest_id is None:
        if url is None:
            raise ManifestError(f"{where} has no id", url=url, field="id" if version == 3 else "@id")
        manifest_id = url
    if version == 2:
        raw_canvases, path = _v2_canvases(doc, where, url)
    else:
        raw_canvases, path = doc.get("items"), "items"
        if not isinstance(raw_canvases, list):
            raise ManifestError(f"{where} has no canvases ({path} is missing or not a list)", url=url, field=path)
    if len(raw_canvases) > max_canvases:
        raise LimitError(
            f"{where} has {len(raw_canvases)} canvases, more than the cap of {max_canvases}",
            url=url,
            field=path,
        )
    canvases: list[Canvas] = []
    problems: list[str] = []
    for position, raw in enumerate(raw_canvases):
        name = f"{path}[{position}]"
        if not isinstance(raw, dict):
            problems.append(f"{name} is {_kind(raw)}, not a canvas: skipped")
            continue
        if version == 3 and json_type(raw) and bare(json_type(raw)) != "canvas":
            problems.append(f"{name} is of type {json_type(raw)}, not a Canvas: skipped")
            continue
        canvas_id = json_id(raw)
        if canvas_id is None:
            problems.append(f"{name} has no id: skipped")
            continue
        canvases.append(_parse_canvas(raw, len(canvases), version, url, name))
    if not canvases:
        detail = f" ({'; '.join(problems[:3])})" if problems else ""
        raise ManifestError(f"{where} has no usable canvases{detail}", url=url, field=path)
    manifest_sources = _annotation_sources(doc.get("annotations"), url) if version == 3 else ()
    return Manifest(
        id=manifest_id,
        url=url,
        version=version,
        label=label_text(doc.get("label")),
        canvases=tuple(canvases),
        raw=doc,
        problems=tuple(problems),
        annotation_sources=manifest_sources,
    )


def _v2_canvases(doc: dict[str, Any], where: str, url: str | None) -> tuple[list[Any], str]:
    sequences = doc.get("sequences")
    if isinstance(sequences, dict):
        sequences = [sequences]
    if not isinstance(sequences, list) or not sequences or not isinstance(sequences[0], dict):
        raise ManifestError(f"{where} has no canvases (no sequences)", url=url, field="sequences")
    canvases = sequences[0].get("canvases")
    if not isinstance(canvases, list):
        raise ManifestError(
            f"{where} has no canvases (sequences[0].canvases is missing or not a list)",
            url=url,
            field="sequences[0].canvases",
        )
    return canvases, "sequences[0].canvases"


def _dimension(value: Any, name: str, url: str | None) -> int | None:
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


def _parse_canvas(raw: dict[str, Any], index: int, version: int, url: str | None, name: str) -> Canvas:
    canvas_id = json_id(raw)
    assert canvas_id is not None
    width = _dimension(raw.get("width"), f"{name}.width", url)
    height = _dimension(raw.get("height"), f"{name}.height", url)
    if width is None or height is None:
        width = height = None
    image = _v2_image(raw, url, name) if version == 2 else _v3_image(raw, url, name)
    if width is None and image is not None and image.width and image.height and image.target is None:
        width, height = image.width, image.height
    sources_key = "otherContent" if version == 2 else "annotations"
    return Canvas(
        id=canvas_id,
        index=index,
        label=label_text(raw.get("label")) or f"canvas {index + 1}",
        width=width,
        height=height,
        image=image,
        annotation_sources=_annotation_sources(raw.get(sources_key), url),
    )


def _annotation_sources(value: Any, url: str | None) -> tuple[AnnotationSource, ...]:
    sources = []
    for entry in as_list(value):
        if isinstance(entry, str):
            sources.append(AnnotationSource(url=normalize_url(entry, url)))
        elif isinstance(entry, dict):
            embedded = any(isinstance(entry.get(k), list) for k in ("items", "resources"))
            ref = json_id(entry)
            if embedded:
                sources.append(AnnotationSource(url=ref, embedded=entry))
            elif ref:
                sources.append(AnnotationSource(url=normalize_url(ref, url)))
    return tuple(sources)


def _target_xywh(target: Any) -> tuple[float, float, float, float] | None:
    """The canvas area a painting annotation covers, when it says (pixel ``#xywh`` only)."""
    for value in as_list(target)[:1]:
        if isinstance(value, str) and "#" in value:
            parsed = parse_xywh(value.split("#", 1)[1])
            return parsed[1] if parsed and parsed[0] == "pixel" else None
        if isinstance(value, dict):
            for selector in as_list(value.get("selector")):
                if isinstance(selector, dict) and bare(json_type(selector)) == "fragmentselector":
                    parsed = parse_xywh(selector.get("value"))
                    return parsed[1] if parsed and parsed[0] == "pixel" else None
    return None


def _is_painting(annotation: dict[str, Any]) -> bool:
    motivations = [bare(m) for m in as_list(annotation.get("motivation")) if isinstance(m, str)]
    return not motivations or "painting" in motivations


def _v2_image(raw: dict[str, Any], url: str | None, name: str) -> ImageSource | None:
    for annotation in as_list(raw.get("images")):
        if not isinstance(annotation, dict) or not _is_painting(annotation):
            continue
        image = _image_from_body(annotation.get("resource"), url)
        if image is not None:
            target = _target_xywh(annotation.get("on"))
            return replace(image, target=target) if target else image
    return None


def _v3_image(raw: dict[str, Any], url: str | None, name: str) -> ImageSource | None:
    for page in as_list(raw.get("items")):
        if not isinstance(page, dict):
            continue
        for annotation in as_list(page.get("items")):
            if not isinstance(annotation, dict) or not _is_painting(annotation):
                continue
            for body in as_list(annotation.get("body")):
                image = _image_from_body(body, url)
                if image is not None:
                    target = _target_xywh(annotation.get("target"))
                    return replace(image, target=target) if target else image
    return None


_NOT_IMAGES = {"video", "sound", "audio", "text", "dataset", "model", "textualbody", "model3d"}


def _image_from_body(body: Any, url: str | None, depth: int = 0) -> ImageSource | None:
    """An image from a painting body, through Choice (default or first item) and SpecificResource."""
    if depth > 5 or not isinstance(body, dict):
        return None
    kind = bare(json_type(body))
    if kind == "choice":
        default = body.get("default")
        items = [default] if isinstance(default, dict) else []
        items += [i for i in as_list(body.get("items")) + as_list(body.get("item")) if isinstance(i, dict)]
        for item in items:
            image = _image_from_body(item, url, depth + 1)
            if image is not None:
                choice = label_text(item.get("label")) or json_id(item)
                return replace(image, choice=choice)
        return None
    if kind == "specificresource":
        inner = body.get("full", body.get("source"))
        image = _image_from_body(inner, url, depth + 1) if isinstance(inner, dict) else None
        if image is None and isinstance(inner, str):
            image = ImageSource(static_url=normalize_url(inner, url))
        if image is None:
            return None
        if image.service_id is None and body.get("service") is not None:
            service = _parse_service(body.get("service"), url)
            if service is not None:
                image = replace(image, **service)
        selector = _image_selector(body.get("selector"))
        return replace(image, selector=selector) if selector else image
    fmt = body.get("format") if isinstance(body.get("format"), str) else None
    if kind in _NOT_IMAGES or (fmt and not fmt.lower().startswith("image/") and kind != "image"):
        return None
    service = _parse_service(body.get("service"), url)
    static = json_id(body)
    if service is None and static is None:
        return None
    if kind not in ("image", "") and service is None and not (fmt or "").lower().startswith("image/"):
        return None
    width = _dimension(body.get("width"), "image width", url)
    height = _dimension(body.get("height"), "image height", url)
    if width is None or height is None:
        width = height = None
    return ImageSource(
        static_url=normalize_url(static, url) if static else None,
        format=fmt,
        width=width,
        height=height,
        **(service or {}),
    )


def _image_selector(value: Any) -> tuple[float, float, float, float] | None:
    for selector in as_list(value):
        if not isinstance(selector, dict):
            continue
        kind = bare(json_type(selector))
        if kind == "fragmentselector":
            parsed = parse_xywh(selector.get("value"))
            if parsed and parsed[0] == "pixel":
                return parsed[1]
        if kind == "imageapiselector" and isinstance(selector.get("region"), str):
            parsed = parse_xywh(selector["region"])
            if parsed and parsed[0] == "pixel":
                return parsed[1]
    return None


def _parse_service(value: Any, url: str | None) -> dict[str, Any] | None:
    """The first Image API service among ``value`` (object, list or bare URL) as ImageSource fields."""
    for service in as_list(value)[:20]:
        if isinstance(service, str):
            return {"service_id": service_base(service, url)}
        if not isinstance(service, dict):
            continue
        service_id = json_id(service)
        if service_id is None:
            continue
        version, level = _service_version_and_level(service)
        if version is None and level is None:
            continue  # an auth, search or other non-image service
        extras: dict[str, Any] = {}
        for profile in as_list(service.get("profile")):
            if isinstance(profile, dict):
                extras.update(profile)
        for key in ("extraFeatures", "extraFormats", "extraQualities", "maxWidth", "maxHeight", "maxArea"):
            if key in service:
                extras[key] = service[key]
        return {
            "service_id": service_base(service_id, url),
            "service_version": version,
            "level": level,
            "profile": extras,
        }
    return None


def _service_version_and_level(service: dict[str, Any]) -> tuple[int | None, int | None]:
    version = None
    texts = [str(c) for c in as_list(service.get("@context")) if isinstance(c, str)]
    texts.append(json_type(service))
    profiles = [p for p in as_list(service.get("profile")) if isinstance(p, str)]
    for text in texts + profiles:
        match = re.search(r"image/(\d)|ImageService(\d)|image-api/(\d)", text)
        if match:
            version = int(next(g for g in match.groups() if g))
            break
    level = None
    for profile in profiles:
        match = re.search(r"level([0-2])", profile)
        if match:
            level = int(match.group(1))
            if version is None:
                version = 3 if profile.startswith("level") else (1 if "stanford" in profile else 2)
            break
    if version is not None and version not in (1, 2, 3):
        return None, None
    if version is None and json_type(service).lower() in ("iiif:imageservice", "imageservice"):
        version = 2
    return version, level


# -- loading -------------------------------------------------------------------------------------


def is_url(source: str) -> bool:
    """Whether a command-line argument names a URL rather than a local path."""
    return isinstance(source, str) and source.strip().lower().startswith(("http://", "https://", "//"))


def load_manifest(source: str, *, fetcher: Fetcher | None = None, max_canvases: int = MAX_CANVASES) -> Manifest:
    """Load a manifest from a URL (through ``fetcher``) or a local JSON file and parse it.

    ``Manifest.url`` is the URL or absolute path as given; ``Manifest.id`` is the declared id.
    """
    from collation.iiif.http import parse_json_bytes

    if is_url(source):
        if fetcher is None:
            raise ManifestError(f"manifest {source}: a URL needs a fetcher", url=source)
        doc, _final = fetcher.get_json(source, what="manifest")
        return parse_manifest(doc, url=source.strip(), max_canvases=max_canvases)
    path = Path(source)
    limit = int(fetcher.conf["max_json_bytes"]) if fetcher is not None else 32 * 2**20
    try:
        size = path.stat().st_size
        if size > limit:
            raise LimitError(f"manifest {path} is {size} bytes, more than the cap of {limit}", url=str(path))
        content = path.read_bytes()
    except FileNotFoundError:
        raise ManifestError(f"manifest {path}: no such file", url=str(path)) from None
    except OSError as exc:
        raise ManifestError(f"manifest {path}: cannot read it: {exc.strerror or exc}", url=str(path)) from None
    doc = parse_json_bytes(content, url=str(path), what="manifest")
    return parse_manifest(doc, url=str(path.resolve()), max_canvases=max_canvases)

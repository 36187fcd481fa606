"""The images a canvas paints: its painting annotations' bodies reduced to ``ImageSource``s.

Presentation 2.1 puts painting annotations in ``images`` (pre-2.0 "shared canvas" manifests in
``resources``; body in ``resource``, target in ``on``), 3.0 in ``items[*].items`` (body in ``body``,
target in ``target``). Bodies are alike: an image with an Image API service, a static image, a
Choice (default or first item; the other layers are reported) or a SpecificResource (an
``ImageApiSelector`` region and rotation, or a ``FragmentSelector`` on the image). Every painting
annotation is either read into an image or named in the problems with the reason. API::

    images, problems = painted_images(raw_canvas, url, version=2, canvas_size=(w, h))
    pages = body_annotations(raw_canvas)     # annotation pages embedded on painting bodies (Choice layers)
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from collation.iiif.geometry import parse_xywh
from collation.iiif.info import auth_login
from collation.iiif.model import (
    ImageSource,
    as_list,
    bare,
    dimension,
    json_id,
    json_type,
    label_text,
    normalize_url,
    service_base,
)

Rect = tuple[float, float, float, float]
_NOT_IMAGES = {"video", "sound", "audio", "text", "dataset", "model", "textualbody", "model3d"}


def painted_images(
    raw: dict[str, Any], url: str | None, *, version: int, canvas_size: tuple[int, int] | None
) -> tuple[list[ImageSource], list[str]]:
    """(images, problems) of a canvas: one image per usable painting annotation, in order."""
    images: list[ImageSource] = []
    problems: list[str] = []
    canvas_id = json_id(raw) or "(no id)"
    for name, annotation in _painting_annotations(raw, version):
        where = f"canvas {canvas_id}: painting annotation {json_id(annotation) or name}"
        if not _is_painting(annotation):
            motivation = ", ".join(str(m) for m in as_list(annotation.get("motivation")))
            problems.append(f"{where} has motivation {motivation!r}, not painting: not used")
            continue
        bodies = as_list(annotation.get("resource") if version == 2 else annotation.get("body"))
        target = as_list(annotation.get("on") if version == 2 else annotation.get("target"))
        area, trouble = _painted_area(target[0] if target else None, canvas_size)
        if trouble:
            problems.append(f"{where}: {trouble}: not used")
            continue
        if not bodies:
            problems.append(f"{where} has no body: not used")
        for body in bodies:
            notes: list[str] = []
            image = _image_from_body(body, url, notes)
            problems.extend(f"{where}: {note}" for note in notes)
            if image is None:
                kind = json_type(body) or type(body).__name__
                problems.append(f"{where}: its body ({kind} {json_id(body) or ''}) is not an image: not used")
                continue
            images.append(replace(image, target=area, annotation_id=json_id(annotation)))
    return images, problems


def _painting_annotations(raw: dict[str, Any], version: int) -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    if version == 2:
        key = "images" if "images" in raw else "resources"  # pre-2.0 shared canvas: ``resources``
        for position, annotation in enumerate(as_list(raw.get(key))):
            if isinstance(annotation, dict):
                found.append((f"{key}[{position}]", annotation))
        return found
    for p, page in enumerate(as_list(raw.get("items"))):
        if isinstance(page, dict):
            for a, annotation in enumerate(as_list(page.get("items"))):
                if isinstance(annotation, dict):
                    found.append((f"items[{p}].items[{a}]", annotation))
    return found


def _is_painting(annotation: dict[str, Any]) -> bool:
    """Painting, or no motivation at all (``""`` or absent, as some libraries write it)."""
    motivations = [bare(m) for m in as_list(annotation.get("motivation")) if isinstance(m, str) and m.strip()]
    return not motivations or "painting" in motivations


def _painted_area(target: Any, canvas_size: tuple[int, int] | None) -> tuple[Rect | None, str | None]:
    """(canvas area, None), (None, None) for the whole canvas, or (None, why) when unusable."""
    fragment = None
    if isinstance(target, str):
        fragment = target.partition("#")[2] or None
    elif isinstance(target, dict):
        for selector in as_list(target.get("selector")):
            if isinstance(selector, dict) and bare(json_type(selector)) == "fragmentselector":
                fragment = selector.get("value")
        source = json_id(target.get("source", target.get("full")))
        if fragment is None and source:
            fragment = source.partition("#")[2] or None
    if not fragment or "xywh" not in str(fragment):
        return None, None
    parsed = parse_xywh(fragment)
    if parsed is None:
        return None, f"its target fragment {fragment!r} is not a usable xywh"
    unit, (x, y, w, h) = parsed
    if unit == "percent":
        if canvas_size is None:
            return None, f"its target {fragment!r} is in percent of a canvas of unknown size"
        cw, ch = canvas_size
        return (x * cw / 100, y * ch / 100, w * cw / 100, h * ch / 100), None
    return (x, y, w, h), None


def _image_from_body(body: Any, url: str | None, notes: list[str], depth: int = 0) -> ImageSource | None:
    """An image from a painting body, through Choice (default or first item) and SpecificResource."""
    if depth > 5 or not isinstance(body, dict):
        return None
    kind = bare(json_type(body))
    if kind == "choice":
        default = body.get("default")
        items = [default] if isinstance(default, dict) else []
        items += [i for i in as_list(body.get("items")) + as_list(body.get("item")) if isinstance(i, dict)]
        refs = [json_id(item) for item in items]
        refs += [service_base(json_id(sv) or "", url) for item in items for sv in as_list(item.get("service"))[:3]]
        layers = tuple(dict.fromkeys(r for r in refs if r))
        for item in items:
            image = _image_from_body(item, url, notes, depth + 1)
            if image is not None:
                choice = label_text(item.get("label")) or json_id(item)
                others = [label_text(i.get("label")) or json_id(i) or "?" for i in items if i is not item]
                others = list(dict.fromkeys(o for o in others if o != choice))
                if others:
                    notes.append(f"Choice: {choice!r} used, other layers not used: {', '.join(map(repr, others))}")
                return replace(image, choice=choice, layers=layers)
        return None
    if kind == "specificresource":
        return _specific_resource(body, url, notes, depth)
    fmt = body.get("format") if isinstance(body.get("format"), str) else None
    if kind in _NOT_IMAGES or (fmt and not fmt.lower().startswith("image/") and kind != "image"):
        return None
    service = _parse_service(body.get("service"), url)
    static = json_id(body)
    if service is None and static is None:
        return None
    if kind not in ("image", "") and service is None and not (fmt or "").lower().startswith("image/"):
        return None
    width = dimension(body.get("width"), "image width", url)
    height = dimension(body.get("height"), "image height", url)
    if width is None or height is None:
        width = height = None
    return ImageSource(
        static_url=normalize_url(static, url) if static else None,
        format=fmt,
        width=width,
        height=height,
        **(service or {}),
    )


def _specific_resource(body: dict[str, Any], url: str | None, notes: list[str], depth: int) -> ImageSource | None:
    inner = body.get("full", body.get("source"))
    image = _image_from_body(inner, url, notes, depth + 1) if isinstance(inner, dict) else None
    if image is None and isinstance(inner, str):
        image = ImageSource(static_url=normalize_url(inner, url))
    if image is None:
        return None
    if image.service_id is None and body.get("service") is not None:
        service = _parse_service(body.get("service"), url)
        if service is not None:
            image = replace(image, **service)
    for selector in as_list(body.get("selector")):
        if not isinstance(selector, dict):
            continue
        kind = bare(json_type(selector))
        if kind == "fragmentselector":
            parsed = parse_xywh(selector.get("value"))
            if parsed and parsed[0] == "pixel":
                image = replace(image, selector=parsed[1])
            elif parsed:
                image = _percent_selector(image, parsed[1], notes)
        elif kind == "imageapiselector":
            image = _image_api_selector(image, selector, notes)
            if image is None:
                return None
    return image


def _percent_selector(image: ImageSource, pct: Rect, notes: list[str]) -> ImageSource:
    if not image.width or not image.height:
        notes.append(f"percent region {pct} of an image of unknown size: the whole image is used")
        return image
    x, y, w, h = pct
    return replace(
        image, selector=(x * image.width / 100, y * image.height / 100, w * image.width / 100, h * image.height / 100)
    )


def _image_api_selector(image: ImageSource, selector: dict[str, Any], notes: list[str]) -> ImageSource | None:
    """Region (``x,y,w,h``, ``pct:``, ``full``, ``square``) and rotation (``90``, ``!180``) of the body."""
    region = str(selector.get("region") or "full").strip()
    if region.startswith("pct:"):
        parsed = parse_xywh(region[4:])
        if parsed is None:
            notes.append(f"ImageApiSelector region {region!r} is not usable: not used")
            return None
        image = _percent_selector(image, parsed[1], notes)
    elif region == "square" and image.width and image.height:
        side = min(image.width, image.height)
        image = replace(image, selector=((image.width - side) / 2, (image.height - side) / 2, side, side))
    elif region not in ("full", "square"):
        parsed = parse_xywh(region)
        if parsed is None:
            notes.append(f"ImageApiSelector region {region!r} is not usable: not used")
            return None
        image = replace(image, selector=parsed[1])
    rotation = str(selector.get("rotation") or "0").strip()
    match = re.fullmatch(r"(!?)(\d+(?:\.\d+)?)", rotation)
    degrees = float(match.group(2)) % 360 if match else -1.0
    if degrees not in (0.0, 90.0, 180.0, 270.0):
        notes.append(f"ImageApiSelector rotation {rotation!r} is not a multiple of 90 degrees: not used")
        return None
    return replace(image, rotation=int(degrees), mirrored=bool(match and match.group(1)))


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
            "login": auth_login(service),
        }
    return None


def _service_version_and_level(service: dict[str, Any]) -> tuple[int | None, int | None]:
    version = None
    texts = [str(c) for c in as_list(service.get("@context")) if isinstance(c, str)]
    texts.append(json_type(service))
    for key in ("dcterms:conformsTo", "conformsTo"):  # pre-2.0 manifests declare the API this way
        texts += [json_id(c) or "" for c in as_list(service.get(key))]
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


def body_annotations(raw: dict[str, Any]) -> list[Any]:
    """``annotations`` declared on painting bodies or their Choice items (cookbook recipe 0326)."""
    found: list[Any] = []
    queue = [a.get("body") for _, a in _painting_annotations(raw, 3)]
    for _ in range(200):
        if not queue:
            break
        body = queue.pop(0)
        for item in as_list(body):
            if isinstance(item, dict):
                found += as_list(item.get("annotations"))
                queue += [item.get("items"), item.get("source")]
    return found

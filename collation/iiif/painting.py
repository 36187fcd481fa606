"""The image a canvas paints: its painting annotation's body reduced to an ``ImageSource``.

Presentation 2.1 puts painting annotations in ``images`` (body in ``resource``, target in ``on``),
3.0 in ``items[*].items`` (body in ``body``, target in ``target``); the bodies are alike: an image
with an Image API service, a static image, a Choice (default or first item) or a SpecificResource
(a selector on the image). API::

    image = painted_image_v2(raw_canvas, url)     # ImageSource or None
    image = painted_image_v3(raw_canvas, url)     # ImageSource or None
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from collation.iiif.geometry import parse_xywh
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


def painted_image_v2(raw: dict[str, Any], url: str | None) -> ImageSource | None:
    for annotation in as_list(raw.get("images")):
        if not isinstance(annotation, dict) or not _is_painting(annotation):
            continue
        image = _image_from_body(annotation.get("resource"), url)
        if image is not None:
            target = _target_xywh(annotation.get("on"))
            return replace(image, target=target) if target else image
    return None


def painted_image_v3(raw: dict[str, Any], url: str | None) -> ImageSource | None:
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

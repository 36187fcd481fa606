"""Builders of the manifests and annotation lists the tests write, and an image comparison."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageFilter

REPO = Path(__file__).resolve().parents[2]


def validator_root() -> Path:
    """``$COLLATION_IIIF_VALIDATOR``, else ``../shared/data/iiif-validator`` beside the repository."""
    return Path(os.environ.get("COLLATION_IIIF_VALIDATOR", REPO.parent / "shared" / "data" / "iiif-validator"))


P2 = "http://iiif.io/api/presentation/2/context.json"
P3 = "http://iiif.io/api/presentation/3/context.json"
IMAGE2 = "http://iiif.io/api/image/2/context.json"


def mean_abs_diff(fetched: Image.Image, folio: Image.Image, box: Sequence[int], blur: float = 0.0) -> float:
    """Mean absolute grey-level difference between a fetched region and the local crop of ``box``
    (image pixels) resized to the fetched size.

    ``blur`` (a Gaussian radius in pixels, applied to both) takes out the difference between the
    server's and Pillow's resampling kernels, which alone gives 3-10 grey levels on these folios at
    352 px (0.9-2.4 with a radius of 2), while keeping geometry errors visible (a box shifted by
    5 folio pixels: 7-16 grey levels; by a tenth of its size: over 27).
    """
    x, y, w, h = box
    fetched = fetched.convert("L")
    local = folio.crop((x, y, x + w, y + h)).convert("L").resize(fetched.size, Image.Resampling.LANCZOS)
    if blur:
        fetched, local = fetched.filter(ImageFilter.GaussianBlur(blur)), local.filter(ImageFilter.GaussianBlur(blur))
    a = np.asarray(fetched, dtype=np.float64)
    b = np.asarray(local, dtype=np.float64)
    return float(np.abs(a - b).mean())


def v2_manifest(manifest_id: str, canvases: list[dict[str, Any]], label: Any = "Test manuscript") -> dict[str, Any]:
    return {
        "@context": P2,
        "@id": manifest_id,
        "@type": "sc:Manifest",
        "label": label,
        "sequences": [{"@type": "sc:Sequence", "canvases": canvases}],
    }


def v2_canvas(
    canvas_id: str,
    size: tuple[int, int],
    *,
    service: Any = None,
    image_url: str | None = None,
    image_size: tuple[int, int] | None = None,
    other_content: list[Any] | None = None,
    label: Any = None,
) -> dict[str, Any]:
    resource: dict[str, Any] = {
        "@id": image_url or f"{canvas_id}/image.jpg",
        "@type": "dctypes:Image",
        "format": "image/jpeg",
    }
    if image_size:
        resource["width"], resource["height"] = image_size
    if service is not None:
        resource["service"] = service
    canvas: dict[str, Any] = {
        "@id": canvas_id,
        "@type": "sc:Canvas",
        "label": label or canvas_id.rsplit("/", 1)[-1],
        "width": size[0],
        "height": size[1],
        "images": [{"@type": "oa:Annotation", "motivation": "sc:painting", "resource": resource, "on": canvas_id}],
    }
    if other_content is not None:
        canvas["otherContent"] = other_content
    return canvas


def v2_service(service_id: str, level: int = 1) -> dict[str, Any]:
    return {"@context": IMAGE2, "@id": service_id, "profile": f"http://iiif.io/api/image/2/level{level}.json"}


def v3_manifest(manifest_id: str, canvases: list[dict[str, Any]], label: str = "Test manuscript") -> dict[str, Any]:
    return {"@context": P3, "id": manifest_id, "type": "Manifest", "label": {"en": [label]}, "items": canvases}


def v3_canvas(
    canvas_id: str,
    size: tuple[int, int],
    *,
    body: dict[str, Any],
    annotations: list[Any] | None = None,
    label: str | None = None,
) -> dict[str, Any]:
    canvas: dict[str, Any] = {
        "id": canvas_id,
        "type": "Canvas",
        "label": {"none": [label or canvas_id.rsplit("/", 1)[-1]]},
        "width": size[0],
        "height": size[1],
        "items": [
            {
                "id": f"{canvas_id}/page",
                "type": "AnnotationPage",
                "items": [
                    {
                        "id": f"{canvas_id}/painting",
                        "type": "Annotation",
                        "motivation": "painting",
                        "body": body,
                        "target": canvas_id,
                    }
                ],
            }
        ],
    }
    if annotations is not None:
        canvas["annotations"] = annotations
    return canvas


def v3_image_body(
    url: str, size: tuple[int, int] | None = None, service: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"id": url, "type": "Image", "format": "image/jpeg"}
    if size:
        body["width"], body["height"] = size
    if service is not None:
        body["service"] = service
    return body


def v3_region_annotation(
    annotation_id: str, target: Any, motivation: str = "tagging", text: str = "illustration"
) -> dict[str, Any]:
    purpose = "tagging" if motivation == "tagging" else "commenting"
    return {
        "id": annotation_id,
        "type": "Annotation",
        "motivation": motivation,
        "body": {"type": "TextualBody", "value": text, "purpose": purpose},
        "target": target,
    }


def svg_rect_path(x: float, y: float, w: float, h: float) -> str:
    return (
        '<svg xmlns="http://www.w3.org/2000/svg"><path xmlns="http://www.w3.org/2000/svg" '
        f'd="M{x},{y}h{w}v{h}h{-w}z" fill="none" stroke="#00bfff"/></svg>'
    )


# -- a tiny Image API 3 server (level 1), for ImageService3 ----------------------------------------


def image_api3_route(server: Any, prefix: str, images: dict[str, Path]) -> str:
    """Register ``{prefix}{identifier}/...`` answering Image API 3 info.json and region requests from
    local files; returns the base URL of the prefix."""

    def route(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        parts = handler.path.split("?", 1)[0][len(prefix) :].split("/")
        identifier = parts[0]
        if identifier not in images:
            return 404, {"Content-Type": "text/plain"}, b"no such image"
        with Image.open(images[identifier]) as opened:
            image = opened.convert("RGB")
        if parts[1:] == ["info.json"]:
            info = {
                "@context": "http://iiif.io/api/image/3/context.json",
                "id": f"{server.url}{prefix}{identifier}",
                "type": "ImageService3",
                "protocol": "http://iiif.io/api/image",
                "profile": "level1",
                "width": image.width,
                "height": image.height,
                "maxWidth": 1000,
            }
            return 200, {"Content-Type": "application/ld+json"}, json.dumps(info).encode()
        if len(parts) != 5:
            return 400, {"Content-Type": "text/plain"}, b"bad request"
        region, size = parts[1], parts[2]
        if region != "full":
            x, y, w, h = (int(v) for v in region.split(","))
            image = image.crop((x, y, min(image.width, x + w), min(image.height, y + h)))
        if size == "full":
            return 400, {"Content-Type": "text/plain"}, b"size full is not valid in Image API 3"
        if size != "max":
            w_text, h_text = size.split(",")
            w = int(w_text) if w_text else round(image.width * int(h_text) / image.height)
            h = int(h_text) if h_text else round(image.height * w / image.width)
            if w > image.width or h > image.height:
                return 400, {"Content-Type": "text/plain"}, b"upscaling needs ^"
            image = image.resize((w, h), Image.Resampling.LANCZOS)
        out = io.BytesIO()
        image.save(out, "JPEG", quality=92)
        return 200, {"Content-Type": "image/jpeg"}, out.getvalue()

    server.routes[prefix] = route
    return f"{server.url}{prefix}"

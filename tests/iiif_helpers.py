"""Helpers of the IIIF tests: an image comparison, the validator's fixtures, a tiny Image API 3 server
(the manifests they write come from ``tests/builders.py``)."""

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

REPO = Path(__file__).resolve().parents[1]


def validator_root() -> Path:
    """``$COLLATION_IIIF_VALIDATOR``, else ``../shared/data/iiif-validator`` beside the repository."""
    return Path(os.environ.get("COLLATION_IIIF_VALIDATOR", REPO.parent / "shared" / "data" / "iiif-validator"))


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

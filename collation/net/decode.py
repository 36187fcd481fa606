"""Bodies to values: JSON documents and images, with errors that say what the body really was.

Servers answer HTML error pages with status 200 and label them ``image/jpeg``, and a few kilobytes
of PNG can decode to gigapixels, so nothing is decoded before it has been recognised. API::

    doc = parse_json_bytes(content, url=url, what="manifest", content_type="application/json")
    looks_like_image(content) -> bool                    # magic bytes of the formats we decode
    image = decode_image(content, url=url, max_pixels=100_000_000)   # PIL.Image.Image, RGB
"""

from __future__ import annotations

import io
import json
import warnings
from typing import Any

from PIL import Image

from collation.core.errors import FetchError, LimitError, ManifestError
from collation.core.settings import FetchSettings

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

MAX_JSON_DEPTH = 100
"""Nesting of a JSON document beyond which it is refused: real manifests nest about 15 levels, and
copying or serving a document nested near the interpreter's recursion limit fails."""


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def json_depth(doc: Any) -> int:
    """Nesting depth of a parsed JSON value (a scalar is 0), computed without recursion."""
    deepest, stack = 0, [(doc, 0)]
    while stack:
        value, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return deepest


def looks_like_image(content: bytes) -> bool:
    """Whether ``content`` starts like an image file (JPEG, PNG, GIF, TIFF, WebP, JPEG 2000)."""
    if content[:4] == b"RIFF" and content[8:12] == b"WEBP":
        return True
    return any(content.startswith(magic) for magic in IMAGE_MAGIC)


def parse_json_bytes(
    content: bytes, *, url: str, what: str = "document", content_type: str = "", max_items: int | None = None
) -> Any:
    """Decode a JSON body, with errors that say when the body was HTML instead of JSON.

    ``max_items`` bounds the values the parse may build: the body's ``{``, ``[`` and ``,`` bytes are
    counted first (an upper bound, strings included), and a body with more is a ``LimitError``
    before any Python object is made (a few MB of ``[{},{},...]`` would take GBs once parsed).
    """
    head = content[:512].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html", b"<?xml", b"<")) or "html" in content_type.lower():
        raise ManifestError(f"{what} {url} is HTML (or XML), not JSON: probably an error or login page", url=url)
    if max_items is not None:
        items = content.count(b"{") + content.count(b"[") + content.count(b",")
        if items > max_items:
            raise LimitError(f"{what} {url} holds more than {max_items} JSON values ({items})", url=url)
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ManifestError(f"{what} {url} is not UTF-8 text, so not JSON", url=url) from None
    try:
        doc = json.loads(text, parse_constant=_refuse_constant)  # NaN, Infinity: not JSON, not served back
    except RecursionError:
        raise ManifestError(f"{what} {url} is nested too deeply to read", url=url) from None
    except ValueError as exc:
        raise ManifestError(f"{what} {url} is not valid JSON: {exc}", url=url) from None
    if json_depth(doc) > MAX_JSON_DEPTH:
        raise ManifestError(f"{what} {url} is nested more than {MAX_JSON_DEPTH} levels deep", url=url)
    return doc


def decode_image(
    content: bytes, *, url: str, what: str = "image", max_pixels: int = FetchSettings.max_image_pixels
) -> Image.Image:
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

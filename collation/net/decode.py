"""Bodies to values: JSON documents and images, with errors that say what the body really was.

Servers answer HTML error pages with status 200 and label them ``image/jpeg``, and a few kilobytes
of PNG can decode to gigapixels, so nothing is decoded before it has been recognised. API::

    doc = parse_json_bytes(content, url=url, what="manifest", content_type="application/json")
    looks_like_image(content) -> bool                    # magic bytes of the formats we decode
    image = decode_image(content, url=url, max_pixels=100_000_000)   # PIL.Image.Image, RGB
    image = open_image(content, url=url, need=lambda full: (352, 430))   # checked, JPEG scaled, not decoded
    image = finish_image(image, url=url)                                 # RGB
"""

from __future__ import annotations

import io
import json
import warnings
from collections.abc import Callable
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


def open_image(
    content: bytes,
    *,
    url: str,
    what: str = "image",
    max_pixels: int = FetchSettings.max_image_pixels,
    max_decoded_bytes: int | None = None,
    need: Callable[[tuple[int, int]], tuple[int, int]] | None = None,
) -> Image.Image:
    """Image bytes opened (the header read, no pixel decoded yet), checked and, for a JPEG, set to
    decode at the smallest of libjpeg's scales (1/1, 1/2, 1/4, 1/8) that still gives ``need(full
    size)`` pixels: a region of a 9,000 x 11,000 folio at 352 pixels decodes a 1,125 x 1,375 image,
    not 99 megapixels.

    Raises:
        LimitError: more than ``max_pixels``, or decoding it would take more than ``max_decoded_bytes``
            (``decoded_bytes``, after the JPEG scaling), before anything is decoded.
        FetchError: not an image PIL reads.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(content))
            width, height = image.size
            if width * height > max_pixels:
                raise LimitError(f"{what} {url} is {width}×{height} pixels, more than the cap of {max_pixels}", url=url)
            if need is not None and image.format == "JPEG":
                image.draft("RGB", need((width, height)))
            if max_decoded_bytes is not None and decoded_bytes(image) > max_decoded_bytes:
                raise LimitError(
                    f"{what} {url}: {width}×{height} pixels would take {decoded_bytes(image) / 2**20:.0f} MiB "
                    f"decoded, more than COLLATION_IIIF_MAX_DECODED_BYTES ({max_decoded_bytes / 2**20:.0f} MiB)",
                    url=url,
                )
            image.info["full_size"] = (width, height)  # before any JPEG scaling: where the crop boxes point
            return image
    except LimitError:
        raise
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError, MemoryError) as exc:
        raise FetchError(f"{what} {url}: cannot decode the image: {exc}", url=url) from None


def decoded_bytes(image: Image.Image) -> int:
    """Bytes an opened image takes once decoded and made RGB: its pixels in its own mode, plus the RGB
    copy when it has another mode (a palette PNG of 10,000 x 10,000 is 100 MB, then 300 MB more)."""
    width, height = image.size
    own = width * height * len(image.getbands())
    return own if image.mode == "RGB" else own + width * height * 3


def finish_image(image: Image.Image, *, url: str, what: str = "image") -> Image.Image:
    """Decodes an image of ``open_image`` to RGB (no copy when it is RGB already)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image.load()
            return image if image.mode == "RGB" else image.convert("RGB")
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError, MemoryError) as exc:
        raise FetchError(f"{what} {url}: cannot decode the image: {exc}", url=url) from None


def decode_image(
    content: bytes, *, url: str, what: str = "image", max_pixels: int = FetchSettings.max_image_pixels
) -> Image.Image:
    """Decode image bytes to an RGB image, refusing more than ``max_pixels`` before decoding them."""
    return finish_image(open_image(content, url=url, what=what, max_pixels=max_pixels), url=url, what=what)

"""Where to see a region: an Image API request that the library's own server cuts.

Shared by the API (the concordance's region links) and the viewer (thumbnails), so that no image is
copied into our responses.
"""

from __future__ import annotations

from collections.abc import Sequence

from PIL import Image

from collation.core.errors import InputError
from collation.iiif.geometry import canvas_to_image
from collation.iiif.links import is_web_link
from collation.iiif.model import Canvas
from collation.service.urls import collation_url
from collation.store.datastore import CollationNotFound, DataStore
from collation.store.stored import PreparedManuscript

THUMBNAIL_WIDTH = 160
"""Width requested for list thumbnails (never more than the region's own width: no upscaling)."""

FULL_WIDTH = 10**6
"""A width no region reaches: ``region_image_url(..., FULL_WIDTH)`` asks for the region at full size."""


def region_image_url(canvas: Canvas, xywh: Sequence[int], width: int = THUMBNAIL_WIDTH) -> str | None:
    """An Image API request for a canvas region, or None when the canvas's image cannot cut regions.

    The region is in canvas units; the request is in image pixels (the canvas may be larger than
    the image, as at the Vatican, or painted by a cropped image), so it goes through
    ``canvas_to_image``. Level-0 services and plain images cannot cut regions, so they get None
    rather than a whole folio; so does a service that is not http(s) (no ``javascript:`` link). The
    width is at most the region's own (no upscaling).
    """
    image = canvas.image
    if image is None or not image.service_id or image.level == 0 or not is_web_link(image.service_id):
        return None
    try:
        x, y, w, h = canvas_to_image(tuple(float(v) for v in xywh), canvas)  # type: ignore[arg-type]
    except InputError:
        return None
    x0, y0 = max(0, round(x)), max(0, round(y))
    x1, y1 = round(x + w), round(y + h)
    if image.width and image.height:
        x1, y1 = min(image.width, x1), min(image.height, y1)
    if x1 <= x0 or y1 <= y0:
        return None
    quality = "native" if image.service_version == 1 else "default"
    return f"{image.service_id}/{x0},{y0},{x1 - x0},{y1 - y0}/{min(width, x1 - x0)},/0/{quality}.jpg"


def stored_region_url(base: str, cid: str, m: int, index: int) -> str:
    """The service's own copy of a region (``GET /collations/{id}/regions/{m}/{index}.jpg``): for an
    image the library's server cannot cut (a plain image, a level-0 service), the service fetched and
    cropped it itself, so it can show it."""
    return f"{collation_url(base, cid)}/regions/{m}/{index}.jpg"


def region_from_store(store: DataStore, cid: str, m: int, index: int) -> Image.Image:
    """The stored image of region ``index`` of manuscript ``m`` (404 when there is none)."""
    return stored_region_image(store, store.load_manuscript(cid, m) if store.exists(cid) else None, m, index)


def stored_region_image(store: DataStore, doc: PreparedManuscript | None, m: int, index: int) -> Image.Image:
    """The stored image of region ``index`` of manuscript ``m``, whose document ``doc`` the caller read
    (once for many regions: a manuscript of 400 regions is a document of 400 regions)."""
    region = doc.region(index) if doc else None
    if region is None or not region.digest:
        raise CollationNotFound(f"the collation has no region {index} in manuscript {m}")
    try:
        return store.load_image(region.digest)
    except FileNotFoundError:
        raise CollationNotFound(f"the image of region {index} of manuscript {m} is not in the store") from None

"""Fetch the pixels of illustration regions through the IIIF Image API, at the size the features need.

The engine describes each illustration at about 352 px on its long side (22 cells of 16 px), so
downloading full-resolution folios would waste the libraries' bandwidth and ours. The strategy,
per region:

1. read the service's ``info.json`` (cached) for the image size, level, sizes, tiles and caps;
2. level 1 and up (or ``regionByPx`` declared): request the region directly, scaled so that its
   long side is ``long_side`` (never upscaled, never beyond ``maxWidth``/``maxHeight``/``maxArea``):
   ``{id}/{x},{y},{w},{h}/{w'},/0/default.jpg`` (``native`` for Image API 1.1);
3. level 0, or when the region request fails or returns the wrong shape: fetch the tiles covering
   the region at the coarsest declared scale factor that still gives ``long_side`` pixels, stitch
   and crop locally; else the smallest listed full-image size that is large enough; else the full
   image;
4. a canvas with no service: download the static image and crop locally.

Every response is checked to be an image (Content-Type and magic bytes) before decoding.

API::

    info = read_info(service_id, fetcher=fetcher)                 # ServiceInfo
    info = parse_info(doc, url=...)                                # ServiceInfo from parsed JSON
    image = fetch_region(region, canvas, long_side=352, fetcher=fetcher)   # PIL.Image.Image, RGB
    w, h = target_size(width, height, long_side, max_width=..., max_height=..., max_area=...)
    url = region_url(info, (x, y, w, h), width)                    # the level >= 1 request
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from PIL import Image

from collation.iiif.errors import FetchError, ManifestError
from collation.iiif.http import Fetcher
from collation.iiif.manifests import (
    MAX_SIDE,
    Canvas,
    ImageSource,
    as_list,
    canvas_to_image,
    json_id,
    json_type,
    service_base,
)
from collation.iiif.regions import Region

log = logging.getLogger("collation.iiif.fetch")

LONG_SIDE = 352
"""Pixels on the long side of a fetched region: 22 cells × 16 px, the engine's largest scale."""

MAX_TILES = 64
"""Most tiles stitched for one region before trying a listed size instead."""

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
    )


def read_info(service_id: str, *, fetcher: Fetcher, version_hint: int | None = None) -> ServiceInfo:
    """Fetch (once per fetcher) and parse ``{service_id}/info.json``."""
    base = service_base(service_id)
    doc, _final = fetcher.get_json(f"{base}/info.json", what="info.json")
    return parse_info(doc, url=base, version_hint=version_hint)


# -- geometry ------------------------------------------------------------------------------------


def target_size(
    width: int,
    height: int,
    long_side: int,
    *,
    max_width: int | None = None,
    max_height: int | None = None,
    max_area: int | None = None,
) -> tuple[int, int]:
    """Output size for a region of width × height pixels: long side ``long_side``, never upscaled,
    within the server's caps."""
    scale = min(1.0, long_side / max(width, height))
    if max_width:
        scale = min(scale, max_width / width)
    if max_height:
        scale = min(scale, max_height / height)
    if max_area:
        scale = min(scale, math.sqrt(max_area / (width * height)))
    w, h = max(1, round(width * scale)), max(1, round(height * scale))
    if max_width:
        w = min(w, max_width)
    if max_height:
        h = min(h, max_height)
    while max_area and w * h > max_area and max(w, h) > 1:
        w, h = max(1, w - 1), max(1, h - 1)
    return w, h


def image_rect(
    xywh: tuple[int, int, int, int], canvas: Canvas, image_size: tuple[int, int]
) -> tuple[int, int, int, int]:
    """A canvas region in integer image pixels, clipped to the image; FetchError when empty."""
    x, y, w, h = canvas_to_image(tuple(float(v) for v in xywh), canvas, image_size)  # type: ignore[arg-type]
    x0, y0 = max(0, round(x)), max(0, round(y))
    x1, y1 = min(image_size[0], round(x + w)), min(image_size[1], round(y + h))
    if x1 <= x0 or y1 <= y0:
        raise FetchError(
            f"region {list(xywh)} of canvas {canvas.id} falls outside its image ({image_size[0]}×{image_size[1]})"
        )
    return x0, y0, x1 - x0, y1 - y0


def region_url(info: ServiceInfo, rect: tuple[int, int, int, int], width: int) -> str:
    """The Image API request for a region of the image scaled to ``width`` pixels wide."""
    x, y, w, h = rect
    return f"{info.id}/{x},{y},{w},{h}/{width},/0/{info.quality}.jpg"


def _size_param(info: ServiceInfo, width: int, height: int) -> str:
    """Size of a level-0 request: ``w,`` up to 2.x, ``w,h`` in 3.0 (what static tile sets use)."""
    return f"{width},{height}" if info.version == 3 else f"{width},"


def _fit(image: Image.Image, size: tuple[int, int], url: str) -> Image.Image:
    """Accept a server's answer when its shape matches the request (servers may be 1 px off),
    resizing to the exact size; a different aspect ratio means the request was not honoured."""
    got_w, got_h = image.size
    want_w, want_h = size
    if (got_w, got_h) == (want_w, want_h):
        return image
    if abs(got_w / got_h - want_w / want_h) > 0.03 * (want_w / want_h) + 2 / min(got_h, want_h):
        raise FetchError(f"{url}: the server returned {got_w}×{got_h} pixels for a {want_w}×{want_h} request", url=url)
    return image.resize((want_w, want_h), Image.Resampling.LANCZOS)


# -- strategies ----------------------------------------------------------------------------------


def _by_region(
    info: ServiceInfo, rect: tuple[int, int, int, int], size: tuple[int, int], fetcher: Fetcher
) -> Image.Image:
    url = region_url(info, rect, size[0])
    return _fit(fetcher.get_image(url, what="region"), size, url)


def _by_tiles(
    info: ServiceInfo, rect: tuple[int, int, int, int], size: tuple[int, int], fetcher: Fetcher
) -> Image.Image | None:
    """Stitch the tiles covering ``rect`` at the coarsest scale factor that keeps enough pixels."""
    x, y, w, h = rect
    for spec in info.tiles:
        usable = [s for s in spec.scale_factors if max(w, h) / s >= max(size)] or [min(spec.scale_factors)]
        scale = max(usable)
        step_x, step_y = spec.width * scale, spec.height * scale
        cols = range(x // step_x, (x + w - 1) // step_x + 1)
        rows = range(y // step_y, (y + h - 1) // step_y + 1)
        if len(cols) * len(rows) > MAX_TILES:
            continue
        origin_x, origin_y = cols[0] * step_x, rows[0] * step_y
        mosaic_w = math.ceil((min(info.width, cols[-1] * step_x + step_x) - origin_x) / scale)
        mosaic_h = math.ceil((min(info.height, rows[-1] * step_y + step_y) - origin_y) / scale)
        mosaic = Image.new("RGB", (mosaic_w, mosaic_h))
        for row in rows:
            for col in cols:
                tx, ty = col * step_x, row * step_y
                tw, th = min(step_x, info.width - tx), min(step_y, info.height - ty)
                out_w, out_h = math.ceil(tw / scale), math.ceil(th / scale)
                url = f"{info.id}/{tx},{ty},{tw},{th}/{_size_param(info, out_w, out_h)}/0/{info.quality}.jpg"
                tile = _fit(fetcher.get_image(url, what="tile"), (out_w, out_h), url)
                mosaic.paste(tile, ((tx - origin_x) // scale, (ty - origin_y) // scale))
        box = (
            (x - origin_x) / scale,
            (y - origin_y) / scale,
            (x + w - origin_x) / scale,
            (y + h - origin_y) / scale,
        )
        return _crop_resize(mosaic, box, size)
    return None


def _by_size(
    info: ServiceInfo, rect: tuple[int, int, int, int], size: tuple[int, int], fetcher: Fetcher
) -> Image.Image:
    """Download a full image at a listed size (or the full image) and crop locally."""
    x, y, w, h = rect
    allowed = [
        (sw, sh)
        for sw, sh in info.sizes
        if (not info.max_width or sw <= info.max_width)
        and (not info.max_height or sh <= info.max_height)
        and (not info.max_area or sw * sh <= info.max_area)
    ]
    enough = [s for s in allowed if max(w * s[0] / info.width, h * s[1] / info.height) >= max(size) - 0.5]
    if enough:
        chosen: tuple[int, int] | None = min(enough)
    elif allowed:
        chosen = max(allowed)
    else:
        chosen = None
    if chosen is None:
        if (info.max_width and info.width > info.max_width) or (
            info.max_area and info.width * info.height > info.max_area
        ):
            raise FetchError(f"image service {info.id}: no listed size fits its maxWidth/maxArea", url=info.id)
        full = "max" if info.version == 3 else "full"
        url = f"{info.id}/full/{full}/0/{info.quality}.jpg"
        chosen = (info.width, info.height)
    else:
        url = f"{info.id}/full/{_size_param(info, *chosen)}/0/{info.quality}.jpg"
    image = fetcher.get_image(url, what="image")
    sx, sy = image.size[0] / info.width, image.size[1] / info.height
    if abs(sx - sy) > 0.03 * max(sx, sy) + 2 / min(image.size):
        raise FetchError(f"{url}: the server returned {image.size[0]}×{image.size[1]} pixels, not {chosen}", url=url)
    return _crop_resize(image, (x * sx, y * sy, (x + w) * sx, (y + h) * sy), size)


def _crop_resize(image: Image.Image, box: tuple[float, float, float, float], size: tuple[int, int]) -> Image.Image:
    left, top, right, bottom = (round(v) for v in box)
    left, top = max(0, left), max(0, top)
    right, bottom = min(image.size[0], max(right, left + 1)), min(image.size[1], max(bottom, top + 1))
    crop = image.crop((left, top, right, bottom))
    if crop.size != size:
        crop = crop.resize(size, Image.Resampling.LANCZOS)
    return crop


def _from_service(image: ImageSource, region: Region, canvas: Canvas, long_side: int, fetcher: Fetcher) -> Image.Image:
    assert image.service_id is not None
    info = read_info(image.service_id, fetcher=fetcher, version_hint=image.service_version)
    rect = image_rect(region.xywh, canvas, (info.width, info.height))
    size = target_size(
        rect[2],
        rect[3],
        long_side,
        max_width=info.max_width,
        max_height=info.max_height,
        max_area=info.max_area,
    )
    failures: list[str] = []
    if info.supports("regionByPx") and info.supports("sizeByW"):
        try:
            return _by_region(info, rect, size, fetcher)
        except FetchError as exc:
            log.info("region request failed, falling back to tiles or sizes: %s", exc.message)
            failures.append(exc.message)
    if info.tiles:
        try:
            tiled = _by_tiles(info, rect, size, fetcher)
            if tiled is not None:
                return tiled
        except FetchError as exc:
            log.info("tiles failed, falling back to a listed size: %s", exc.message)
            failures.append(exc.message)
    try:
        return _by_size(info, rect, size, fetcher)
    except FetchError as exc:
        if failures:
            raise FetchError(f"{'; '.join(failures)}; then {exc.message}", url=exc.url, status=exc.status) from None
        raise


def _from_static(image: ImageSource, region: Region, canvas: Canvas, long_side: int, fetcher: Fetcher) -> Image.Image:
    assert image.static_url is not None
    full = fetcher.get_image(image.static_url, what="image")
    rect = image_rect(region.xywh, canvas, full.size)
    size = target_size(rect[2], rect[3], long_side)
    x, y, w, h = rect
    return _crop_resize(full, (x, y, x + w, y + h), size)


def fetch_region(region: Region, canvas: Canvas, *, long_side: int = LONG_SIDE, fetcher: Fetcher) -> Image.Image:
    """The pixels of one region as an RGB image whose long side is ``long_side`` (or less for small
    regions). Raises ``FetchError``, ``UnsafeURLError``, ``LimitError`` or ``ManifestError``."""
    if canvas.id != region.canvas_id:
        raise ValueError(f"region {region.index} is on {region.canvas_id}, not on canvas {canvas.id}")
    image = canvas.image
    if image is None:
        raise ManifestError(f"canvas {canvas.id} has no image", field="canvas")
    if image.service_id:
        try:
            return _from_service(image, region, canvas, long_side, fetcher)
        except (FetchError, ManifestError) as exc:
            if not image.static_url or service_base(image.static_url) == image.service_id:
                raise
            log.info("image service failed, trying the static image: %s", exc.message)
            try:
                return _from_static(image, region, canvas, long_side, fetcher)
            except (FetchError, ManifestError) as static_exc:
                raise FetchError(
                    f"{exc.message}; the static image failed too: {static_exc.message}", url=image.static_url
                ) from None
    if image.static_url:
        return _from_static(image, region, canvas, long_side, fetcher)
    raise ManifestError(f"canvas {canvas.id} has neither an image service nor an image URL", field="canvas")

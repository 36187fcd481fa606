"""Fetch the pixels of illustration regions through the IIIF Image API, at the size the features need.

The engine describes each illustration at ``FetchSettings.region_long_side`` pixels on its long
side (352: 22 cells of 16 px), so downloading full-resolution folios would waste the libraries'
bandwidth and ours. The strategy, per region:

1. read the service's ``info.json`` (cached) for the image size, level, sizes, tiles and caps;
2. level 1 and up (or ``regionByPx`` declared): request the region directly, scaled so that its
   long side is ``long_side`` (never upscaled, never beyond ``maxWidth``/``maxHeight``/``maxArea``):
   ``{id}/{x},{y},{w},{h}/{w'},/0/default.jpg`` (``native`` for Image API 1.1);
3. level 0, or when the region request fails or returns the wrong shape: fetch the tiles covering
   the region at the coarsest declared scale factor that still gives ``long_side`` pixels, stitch
   them into a mosaic at the resolution needed (never more) and crop locally; else the smallest
   listed full-image size that is large enough; else the full image;
4. a canvas with no service: download the static image and crop locally.

Every response is checked to be an image (Content-Type and magic bytes) before decoding, and
``max_image_pixels`` applies to the declared sizes before anything is requested or allocated: a tile,
a mosaic or a full image larger than the cap raises ``LimitError``.

API::

    image = fetch_region(region, canvas, fetcher=fetcher)   # PIL.Image.Image, RGB, fetcher.region_long_side
    image = fetch_region(region, canvas, long_side=224, fetcher=fetcher)
    w, h = target_size(width, height, long_side, max_width=..., max_height=..., max_area=...)
    url = region_url(info, (x, y, w, h), width)                    # the level >= 1 request

``info.json`` is read in ``collation.iiif.info``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import replace

from PIL import Image

from collation.core.errors import FetchError, LimitError, ManifestError
from collation.iiif.geometry import canvas_to_image, image_for_region
from collation.iiif.info import ServiceInfo, read_info
from collation.iiif.model import Canvas, ImageSource, service_base
from collation.iiif.regions import Region
from collation.net.http import Fetcher

log = logging.getLogger("collation.iiif.fetch")


MAX_TILES = 64
"""Most tiles stitched for one region before trying a listed size instead."""


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


def _fit(image: Image.Image, size: tuple[int, int], url: str, *, out: tuple[int, int] | None = None) -> Image.Image:
    """Accept a server's answer when its shape matches the request ``size`` (servers may be 1 px
    off), resized to ``out`` (default: ``size``); a different aspect ratio means the request was not
    honoured."""
    got_w, got_h = image.size
    want_w, want_h = size
    out = size if out is None else out
    if (got_w, got_h) == out:
        return image
    if abs(got_w / got_h - want_w / want_h) > 0.03 * (want_w / want_h) + 2 / min(got_h, want_h):
        raise FetchError(f"{url}: the server returned {got_w}×{got_h} pixels for a {want_w}×{want_h} request", url=url)
    return image.resize(out, Image.Resampling.LANCZOS)


def _check_pixels(width: int, height: int, cap: int, what: str, url: str) -> None:
    """``LimitError`` before requesting or allocating ``width`` × ``height`` pixels above ``cap``."""
    if width * height > cap:
        raise LimitError(f"{what} of {url} would be {width}×{height} pixels, more than the cap of {cap}", url=url)


# -- strategies ----------------------------------------------------------------------------------


def _by_region(
    info: ServiceInfo, rect: tuple[int, int, int, int], size: tuple[int, int], fetcher: Fetcher
) -> Image.Image:
    url = region_url(info, rect, size[0])
    return _fit(fetcher.get_image(url, what="region"), size, url)


def _at(offset: int, origin: int, scale: int, f: float) -> int:
    """Mosaic pixel of image coordinate ``offset``: tiles from ``origin`` at ``scale``, reduced by ``f``."""
    return math.ceil((offset - origin) / scale * f)


def _by_tiles(
    info: ServiceInfo, rect: tuple[int, int, int, int], size: tuple[int, int], fetcher: Fetcher
) -> Image.Image | None:
    """Stitch the tiles covering ``rect`` at the coarsest scale factor that keeps enough pixels."""
    x, y, w, h = rect
    cap = fetcher.conf.max_image_pixels
    for spec in info.tiles:
        usable = [s for s in spec.scale_factors if max(w, h) / s >= max(size)] or [min(spec.scale_factors)]
        scale = max(usable)
        step_x, step_y = spec.width * scale, spec.height * scale
        cols = range(x // step_x, (x + w - 1) // step_x + 1)
        rows = range(y // step_y, (y + h - 1) // step_y + 1)
        if len(cols) * len(rows) > MAX_TILES:
            continue
        _check_pixels(min(spec.width, info.width), min(spec.height, info.height), cap, "a tile", info.id)
        origin_x, origin_y = cols[0] * step_x, rows[0] * step_y
        # the mosaic holds the tiles at the resolution the output needs (f <= 1), never more
        f = min(1.0, max(size) / (max(w, h) / scale))
        mosaic_w = max(1, _at(min(info.width, cols[-1] * step_x + step_x), origin_x, scale, f))
        mosaic_h = max(1, _at(min(info.height, rows[-1] * step_y + step_y), origin_y, scale, f))
        _check_pixels(mosaic_w, mosaic_h, cap, "the tile mosaic", info.id)
        mosaic = Image.new("RGB", (mosaic_w, mosaic_h))
        for row in rows:
            for col in cols:
                tx, ty = col * step_x, row * step_y
                tw, th = min(step_x, info.width - tx), min(step_y, info.height - ty)
                out_w, out_h = math.ceil(tw / scale), math.ceil(th / scale)
                left, top = _at(tx, origin_x, scale, f), _at(ty, origin_y, scale, f)
                slot = (max(1, _at(tx + tw, origin_x, scale, f) - left), max(1, _at(ty + th, origin_y, scale, f) - top))
                url = f"{info.id}/{tx},{ty},{tw},{th}/{_size_param(info, out_w, out_h)}/0/{info.quality}.jpg"
                tile = _fit(fetcher.get_image(url, what="tile"), (out_w, out_h), url, out=slot)
                mosaic.paste(tile, (left, top))
        box = (
            (x - origin_x) / scale * f,
            (y - origin_y) / scale * f,
            (x + w - origin_x) / scale * f,
            (y + h - origin_y) / scale * f,
        )
        return _crop_resize(mosaic, box, size)
    return None


def _by_size(
    info: ServiceInfo, rect: tuple[int, int, int, int], size: tuple[int, int], fetcher: Fetcher
) -> Image.Image:
    """Download a full image at a listed size (or the full image) and crop locally."""
    x, y, w, h = rect
    cap = fetcher.conf.max_image_pixels
    allowed = [
        (sw, sh)
        for sw, sh in info.sizes
        if sw * sh <= cap
        and (not info.max_width or sw <= info.max_width)
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
        _check_pixels(info.width, info.height, cap, "the full image", info.id)
        full = "max" if info.version == 3 else "full"
        url = f"{info.id}/full/{full}/0/{info.quality}.jpg"
        chosen = (info.width, info.height)
    else:
        url = f"{info.id}/full/{_size_param(info, *chosen)}/0/{info.quality}.jpg"

    def need(got: tuple[int, int]) -> tuple[int, int]:  # the crop of ``rect`` in the image as served
        return needed_size(got, (w * got[0] / info.width, h * got[1] / info.height), size)

    image = fetcher.get_image(url, what="image", need=need)
    sx, sy = image.size[0] / info.width, image.size[1] / info.height
    if abs(sx - sy) > 0.03 * max(sx, sy) + 2 / min(image.size):
        raise FetchError(f"{url}: the server returned {image.size[0]}×{image.size[1]} pixels, not {chosen}", url=url)
    return _crop_resize(image, (x * sx, y * sy, (x + w) * sx, (y + h) * sy), size)


def needed_size(full: tuple[int, int], crop: tuple[float, float], size: tuple[int, int]) -> tuple[int, int]:
    """The size of the whole image at which a crop of ``crop`` pixels (at full size) still has ``size``
    pixels: what a JPEG may be scaled to at decode (``net.decode.open_image``), never more than ``full``."""
    scale = min(1.0, max(size[0] / max(crop[0], 1), size[1] / max(crop[1], 1)))
    return (min(full[0], math.ceil(full[0] * scale)), min(full[1], math.ceil(full[1] * scale)))


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
    try:
        info = read_info(image.service_id, fetcher=fetcher, version_hint=image.service_version)
    except FetchError as exc:
        if exc.status in (401, 403):  # IIIF Auth: say where to log in, never read the HTML page
            where = (
                image.login or getattr(exc, "login", None) or "the library's login page (no IIIF Auth service declared)"
            )
            raise FetchError(
                f"image service {image.service_id}: login required at {where} (HTTP {exc.status})",
                url=exc.url,
                status=exc.status,
            ) from None
        raise
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

    def need(full_size: tuple[int, int]) -> tuple[int, int]:
        _, _, w, h = image_rect(region.xywh, canvas, full_size)
        return needed_size(full_size, (w, h), target_size(w, h, long_side))

    full = fetcher.get_image(image.static_url, what="image", need=need)
    width, height = full.info.get("full_size", full.size)  # a JPEG decoded at 1/2 to 1/8 of its size
    x, y, w, h = image_rect(region.xywh, canvas, (width, height))
    size = target_size(w, h, long_side)
    sx, sy = full.size[0] / width, full.size[1] / height
    return _crop_resize(full, (x * sx, y * sy, (x + w) * sx, (y + h) * sy), size)


def fetch_region(region: Region, canvas: Canvas, *, long_side: int | None = None, fetcher: Fetcher) -> Image.Image:
    """The pixels of one region as an RGB image whose long side is ``long_side`` pixels (default
    ``fetcher.region_long_side``; less for small regions, never upscaled). Raises ``FetchError``,
    ``UnsafeURLError``, ``LimitError`` or ``ManifestError``."""
    long_side = fetcher.region_long_side if long_side is None else long_side
    if canvas.id != region.canvas_id:
        raise ValueError(f"region {region.index} is on {region.canvas_id}, not on canvas {canvas.id}")
    if canvas.image is None:
        raise ManifestError(f"canvas {canvas.id} has no image", field="canvas")
    canvas, xywh = image_for_region(canvas, region.xywh)  # composite canvases: the image under the region
    if xywh != region.xywh:
        region = replace(region, xywh=tuple(round(v) for v in xywh))  # type: ignore[arg-type]
    return _upright(_fetch_pixels(region, canvas, long_side, fetcher), canvas.image)


def _upright(pixels: Image.Image, image: ImageSource | None) -> Image.Image:
    """The crop as the canvas shows it: mirrored, then turned clockwise, like the painting body."""
    if image is None:
        return pixels
    if image.mirrored:
        pixels = pixels.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    turn = {90: Image.Transpose.ROTATE_270, 180: Image.Transpose.ROTATE_180, 270: Image.Transpose.ROTATE_90}
    return pixels.transpose(turn[image.rotation]) if image.rotation in turn else pixels


def _fetch_pixels(region: Region, canvas: Canvas, long_side: int, fetcher: Fetcher) -> Image.Image:
    image = canvas.image
    assert image is not None
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

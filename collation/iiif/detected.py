"""Regions by detection: the illustrations found on each canvas of a manifest without annotations.

For each canvas with an image, ONE reduced-size request (``fetch_region`` of the area the image
paints, long side ``DETECT_LONG_SIDE``: an Image API region request at that size, the tiles or a
listed size of a level-0 service, or the static image within the pixel caps), then the detector
(``collation.engine.detection``; built-in unless one is given), then each box mapped from the fetched
pixels to canvas units. The fetched image shows the canvas area upright (rotation and mirroring
applied), so the mapping is a scale and an offset. API::

    found = detect_regions(manifest, fetcher=fetcher, detector=None, long_side=1200, workers=4,
                           max_regions=None)
    found.regions        # list[Region], canvas order then reading order, each with ``score``
    found.problems       # canvases without an image or whose image failed to load, and why
    found.canvases, found.searched, found.with_regions   # counts for the record line
    detection_note(found, reason="no region annotations")
    # 'no region annotations: 37 illustrations detected on 29 of 51 canvases'
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from PIL import Image

from collation.core.errors import CollationError, LimitError, ManifestError
from collation.core.settings import LimitSettings
from collation.iiif.annotation_pages import RegionProblem
from collation.iiif.fetch import fetch_region
from collation.iiif.geometry import image_for_region
from collation.iiif.model import Canvas, Manifest
from collation.iiif.regions import Region
from collation.net.http import Fetcher

if TYPE_CHECKING:  # torch is imported when detection runs, not by the API process
    from collation.engine.detection import Detection, Detector

DETECT_LONG_SIDE = 1200
"""Long side of the image fetched per canvas for detection (the built-in detector works at 512)."""


@dataclass
class DetectedRegions:
    """What detection found on a manifest, and what it could not look at."""

    regions: list[Region] = field(default_factory=list)
    problems: list[RegionProblem] = field(default_factory=list)
    canvases: int = 0  # canvases of the manifest
    searched: int = 0  # canvases whose image was loaded and searched
    with_regions: int = 0  # canvases where something was found


def canvas_area(canvas: Canvas) -> tuple[int, int, int, int]:
    """The canvas rectangle (canvas units) that the detection image shows: the whole canvas, or on
    a composite canvas the part painted by its main image. ``ManifestError`` when unknown."""
    if not canvas.width or not canvas.height:
        raise ManifestError(f"canvas {canvas.id} has no size", field="width")
    _, box = image_for_region(canvas, (0.0, 0.0, float(canvas.width), float(canvas.height)))
    x, y, w, h = (round(v) for v in box)
    return x, y, max(1, w), max(1, h)


def to_canvas(
    detection: Detection, area: tuple[int, int, int, int], size: tuple[int, int], canvas: Canvas
) -> tuple[int, int, int, int] | None:
    """A box in the pixels of the fetched image (``size``, showing ``area``) in integer canvas
    units, clipped to the canvas; None when empty."""
    ax, ay, aw, ah = area
    sx, sy = aw / size[0], ah / size[1]
    x, y, w, h = detection.xywh
    x0, y0 = max(0, round(ax + x * sx)), max(0, round(ay + y * sy))
    x1 = min(canvas.width or ax + aw, round(ax + (x + w) * sx))
    y1 = min(canvas.height or ay + ah, round(ay + (y + h) * sy))
    if x1 <= x0 or y1 <= y0:
        return None
    return x0, y0, x1 - x0, y1 - y0


def search_canvas(
    canvas: Canvas, detector: Detector | None, long_side: int, fetcher: Fetcher
) -> list[tuple[tuple[int, int, int, int], Detection]] | CollationError:
    """(canvas box, detection) of one canvas, or the error that kept its image from loading."""
    try:
        area = canvas_area(canvas)
        whole = Region(0, canvas.id, canvas.index, area, canvas.label)
        image: Image.Image = fetch_region(whole, canvas, long_side=long_side, fetcher=fetcher)
    except CollationError as exc:
        return exc
    from collation.engine.detection import detect_illustrations

    found = []
    for detection in detect_illustrations(image, detector=detector):
        box = to_canvas(detection, area, image.size, canvas)
        if box is not None:
            found.append((box, detection))
    return found


def detect_regions(
    manifest: Manifest,
    *,
    fetcher: Fetcher,
    detector: Detector | None = None,
    long_side: int = DETECT_LONG_SIDE,
    workers: int = 4,
    max_regions: int | None = None,
) -> DetectedRegions:
    """Regions found by ``detector`` (default: the built-in one) on every canvas with an image.

    Canvases without an image or a size, and canvases whose image fails to load, are problems;
    more than ``max_regions`` (default ``LimitSettings.max_regions``) raises ``LimitError``.
    """
    max_regions = LimitSettings.max_regions if max_regions is None else max_regions
    result = DetectedRegions(canvases=len(manifest.canvases))
    usable = []
    for canvas in manifest.canvases:
        if canvas.image is None or not canvas.width or not canvas.height:
            result.problems.append(
                RegionProblem(f"canvas {canvas.id} has no image or no size: not searched for illustrations", canvas.id)
            )
        else:
            usable.append(canvas)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        outcomes = list(pool.map(lambda c: search_canvas(c, detector, long_side, fetcher), usable))
    found: list[tuple[Canvas, tuple[int, int, int, int], Detection]] = []
    for canvas, outcome in zip(usable, outcomes, strict=True):
        if isinstance(outcome, CollationError):
            result.problems.append(
                RegionProblem(
                    f"canvas {canvas.id}: its image could not be loaded for detection: {outcome.message}", canvas.id
                )
            )
            continue
        result.searched += 1
        result.with_regions += bool(outcome)
        found += [(canvas, box, detection) for box, detection in outcome]
    if len(found) > max_regions:
        raise LimitError(
            f"{manifest.url or manifest.id}: {len(found)} illustrations detected, more than the cap of {max_regions}",
            url=manifest.url,
        )
    per_canvas = Counter(canvas.index for canvas, _, _ in found)
    numbered: Counter[int] = Counter()
    for canvas, box, detection in found:
        numbered[canvas.index] += 1
        on_canvas, number = per_canvas[canvas.index], numbered[canvas.index]
        label = f"{canvas.label}: detected illustration" + (f" {number}" if on_canvas > 1 else "")
        result.regions.append(
            Region(len(result.regions), canvas.id, canvas.index, box, label, score=round(float(detection.score), 4))
        )
    return result


def detection_note(found: DetectedRegions, reason: str) -> str:
    """The record line: ``'<reason>: 37 illustrations detected on 29 of 51 canvases'``, saying
    how many canvases could not be searched."""
    n = len(found.regions)
    line = (
        f"{reason}: {n} illustration{'s' if n != 1 else ''} detected on {found.with_regions} of "
        f"{found.canvases} canvas{'es' if found.canvases != 1 else ''}"
    )
    if found.searched < found.canvases:
        line += f" ({found.canvases - found.searched} could not be searched)"
    return line

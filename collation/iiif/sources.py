"""Manifests as inputs of a collation: what ``collate match`` and ``collate regions`` call.

API::

    looks_like_manifest(arg) -> bool            # a URL, or a local .json file
    manifest, regions, problems = list_regions(source, fetcher=fetcher, selector=..., given=None,
                                               whole_canvases=False, max_regions=None, detect=False)
    choice = select_regions(source, fetcher=fetcher, ..., detect=None, detector=None)
    choice.manifest, choice.regions, choice.problems, choice.source, choice.note
    result = load_manuscript_regions(source, fetcher=fetcher, long_side=None, selector=...,
                                     given=None, whole_canvases=False, max_regions=None,
                                     detect=None, detector=None,
                                     workers=4, strict=False, require_regions=True)
    result.manifest, result.regions, result.images, result.problems, result.source, result.note
    print(format_regions_report(manifest, regions, problems))

Where the regions come from (``source``, one of ``REGION_SOURCES``): ``given`` regions, one per
canvas (``whole_canvases``), the manifest's ``annotations``, or ``detected`` by an illustration
detector (``collation.iiif.detected``: one reduced-size image request per canvas). ``detect=None``
(the default of ``select_regions`` and ``load_manuscript_regions``) detects when the manifest
yields no annotated region and neither regions nor whole canvases were asked for; ``True``
detects even when annotations exist; ``False`` never. When detection is used, ``note`` says so
(``"no region annotations: 37 illustrations detected on 29 of 51 canvases"``); when it finds
nothing, the note is also a problem, next to the canvases whose image could not be loaded.

``load_manuscript_regions`` returns only the regions whose pixels it could fetch, with
``images[i]`` the pixels of ``regions[i]``; ``regions[i].index`` keeps the region's position in
the manifest's full list, and every failure is a line in ``problems``. This is the one path from
a manifest to region pixels: the command line and the service's jobs both call it. Defaults come
from the settings: ``long_side`` from ``fetcher.region_long_side``, ``max_regions`` from
``LimitSettings.max_regions``, the canvas cap from the fetcher's ``FetchSettings.max_canvases``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from PIL import Image

from collation.core.errors import CollationError, InputError
from collation.iiif.detected import detect_regions, detection_note
from collation.iiif.fetch import fetch_region
from collation.iiif.manifests import is_url, load_manifest
from collation.iiif.model import Manifest
from collation.iiif.regions import NO_ANNOTATIONS, Region, RegionProblem, RegionSelector, find_regions
from collation.net.http import Fetcher

if TYPE_CHECKING:
    from collation.engine.detection import Detector

REGION_SOURCES = ("annotations", "detected", "given", "whole_canvases")
"""Where a manuscript's regions come from (``RegionChoice.source``)."""


class ManuscriptRegions(NamedTuple):
    """A manuscript read from a manifest: its regions and their pixels, in manuscript order."""

    manifest: Manifest
    regions: list[Region]
    images: list[Image.Image]
    problems: list[RegionProblem]
    source: str = "annotations"  # one of REGION_SOURCES
    note: str | None = None  # the record line when detection was used


class RegionChoice(NamedTuple):
    """The regions of a manifest, before any region pixels are fetched, and where they come from."""

    manifest: Manifest
    regions: list[Region]
    problems: list[RegionProblem]
    source: str
    note: str | None = None


def looks_like_manifest(argument: str) -> bool:
    """Whether a command-line argument is a manifest (URL or local ``.json`` file), not a folder."""
    if is_url(argument):
        return True
    path = Path(argument)
    return path.suffix.lower() in (".json", ".jsonld") and path.is_file()


def list_regions(
    source: str,
    *,
    fetcher: Fetcher,
    selector: RegionSelector | None = None,
    given: Sequence[Any] | None = None,
    whole_canvases: bool = False,
    max_regions: int | None = None,
    detect: bool | None = False,
    detector: Detector | None = None,
) -> tuple[Manifest, list[Region], list[RegionProblem]]:
    """Load a manifest and find its regions; without ``detect``, no pixels are fetched. With
    detection, its note is the last problem."""
    choice = select_regions(
        source,
        fetcher=fetcher,
        selector=selector,
        given=given,
        whole_canvases=whole_canvases,
        max_regions=max_regions,
        detect=detect,
        detector=detector,
    )
    problems = choice.problems + ([RegionProblem(choice.note)] if choice.note and choice.regions else [])
    return choice.manifest, choice.regions, problems


def select_regions(
    source: str,
    *,
    fetcher: Fetcher,
    selector: RegionSelector | None = None,
    given: Sequence[Any] | None = None,
    whole_canvases: bool = False,
    max_regions: int | None = None,
    detect: bool | None = None,
    detector: Detector | None = None,
    workers: int = 4,
) -> RegionChoice:
    """Load a manifest and choose its regions: given, whole canvases, annotated or detected (see
    the module doc for ``detect``)."""
    if detect and (given is not None or whole_canvases):
        raise InputError("detect illustrations, give regions or ask for whole canvases: one of them", field="detect")
    manifest = load_manifest(source, fetcher=fetcher)
    if not detect:
        regions, problems = find_regions(
            manifest,
            fetcher=fetcher,
            selector=selector,
            given=given,
            whole_canvases=whole_canvases,
            max_regions=max_regions,
        )
        kind = "given" if given is not None else "whole_canvases" if whole_canvases else "annotations"
        if regions or detect is False or kind != "annotations":
            return RegionChoice(manifest, regions, problems, kind)
        problems = [p for p in problems if p.message != NO_ANNOTATIONS]
        reason = "no region annotations"
    else:
        problems = [RegionProblem(p, source=manifest.url) for p in manifest.problems]
        reason = "illustrations detected as asked (annotations not used)"
    found = detect_regions(manifest, fetcher=fetcher, detector=detector, workers=workers, max_regions=max_regions)
    problems += found.problems
    note = detection_note(found, reason)
    if not found.regions:
        why = " (no canvas image could be loaded)" if found.canvases and not found.searched else ""
        problems.append(RegionProblem(note + why))
    return RegionChoice(manifest, found.regions, problems, "detected", note)


def load_manuscript_regions(
    source: str,
    *,
    fetcher: Fetcher,
    long_side: int | None = None,
    selector: RegionSelector | None = None,
    given: Sequence[Any] | None = None,
    whole_canvases: bool = False,
    max_regions: int | None = None,
    detect: bool | None = None,
    detector: Detector | None = None,
    workers: int = 4,
    strict: bool = False,
    require_regions: bool = True,
    on_regions: Callable[[Sequence[Region]], None] | None = None,
) -> ManuscriptRegions:
    """Load a manifest, find its regions and fetch each region at ``long_side`` pixels.

    ``on_regions`` is called with the regions found before any of their images is fetched: what it
    raises stops the load (the service's budget: a manifest of 60 canvases over it costs no image fetch).

    Raises ``InputError`` when the manifest yields no region at all (with the problems met), or,
    with ``strict``, at the first region that cannot be fetched. With ``require_regions=False``
    (the service, which records problems per manuscript) it returns what it found instead, with
    a problem saying why nothing could be used.
    """
    manifest, regions, problems, kind, note = select_regions(
        source,
        fetcher=fetcher,
        selector=selector,
        given=given,
        whole_canvases=whole_canvases,
        max_regions=max_regions,
        detect=detect,
        detector=detector,
        workers=workers,
    )
    if not regions and not require_regions:
        if kind != "detected":  # detection has said why already
            problems.append(RegionProblem("no illustration regions found in this manifest"))
        return ManuscriptRegions(manifest, [], [], problems, kind, note)
    if not regions:
        detail = "; ".join(p.message for p in problems[:3])
        raise InputError(
            f"manifest {source}: no illustration regions found"
            + (f" ({detail})" if detail else "")
            + "; give regions with the request, change the region selector, or use whole canvases",
            field="regions",
        )
    if on_regions is not None:
        on_regions(regions)
    canvases = {canvas.id: canvas for canvas in manifest.canvases}
    side = fetcher.region_long_side if long_side is None else long_side

    def fetch(region: Region) -> Image.Image | CollationError:
        try:
            return fetch_region(region, canvases[region.canvas_id], long_side=side, fetcher=fetcher)
        except CollationError as exc:
            if strict:
                raise
            return exc

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(pool.map(fetch, regions))
    kept: list[Region] = []
    images: list[Image.Image] = []
    for region, result in zip(regions, results, strict=True):
        if isinstance(result, CollationError):
            problems.append(
                RegionProblem(
                    f"region {region.index} ({region.label}): {result.message}", region.canvas_id, region=region.index
                )
            )
        else:
            kept.append(region)
            images.append(result)
    if not kept and require_regions:
        raise InputError(
            f"manifest {source}: none of its {len(regions)} regions could be fetched ({problems[-1].message})",
            field="regions",
        )
    return ManuscriptRegions(manifest, kept, images, problems, kind, note)


def format_regions_report(manifest: Manifest, regions: Sequence[Region], problems: Sequence[RegionProblem]) -> str:
    """A plain-text listing for ``collate regions``: one line per region (index, canvas, xywh,
    label), then the problems."""
    lines = [
        f"manifest: {manifest.id}"
        + (f" (read from {manifest.url})" if manifest.url and manifest.url != manifest.id else ""),
        f"label: {manifest.label or '(none)'}",
        f"IIIF Presentation {manifest.version}, {len(manifest.canvases)} canvases, {len(regions)} regions",
    ]
    if regions:
        width = max(len(r.canvas_id) for r in regions)
        lines.append(f"{'index':>5}  {'canvas':<{width}}  {'xywh':<19}  label")
        for region in regions:
            xywh = ",".join(str(v) for v in region.xywh)
            lines.append(f"{region.index:>5}  {region.canvas_id:<{width}}  {xywh:<19}  {region.label}")
    if problems:
        lines.append(f"problems ({len(problems)}):")
        lines.extend(f"  - {problem.message}" for problem in problems)
    return "\n".join(lines) + "\n"

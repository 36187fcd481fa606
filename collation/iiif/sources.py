"""Manifests as inputs of a collation: what ``collate match`` and ``collate regions`` call.

API::

    looks_like_manifest(arg) -> bool            # a URL, or a local .json file
    manifest, regions, problems = list_regions(source, fetcher=fetcher, selector=..., given=None,
                                               whole_canvases=False, max_regions=None)
    result = load_manuscript_regions(source, fetcher=fetcher, long_side=None, selector=...,
                                     given=None, whole_canvases=False, max_regions=None,
                                     workers=4, strict=False, require_regions=True)
    result.manifest, result.regions, result.images, result.problems
    print(format_regions_report(manifest, regions, problems))

``load_manuscript_regions`` returns only the regions whose pixels it could fetch, with
``images[i]`` the pixels of ``regions[i]``; ``regions[i].index`` keeps the region's position in
the manifest's full list, and every failure is a line in ``problems``. This is the one path from
a manifest to region pixels: the command line and the service's jobs both call it. Defaults come
from the settings: ``long_side`` from ``fetcher.region_long_side``, ``max_regions`` from
``Settings.max_regions``, the canvas cap from the fetcher's ``FetchSettings.max_canvases``.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

from PIL import Image

from collation.errors import CollationError, InputError
from collation.iiif.fetch import fetch_region
from collation.iiif.http import Fetcher
from collation.iiif.manifests import is_url, load_manifest
from collation.iiif.model import Manifest
from collation.iiif.regions import Region, RegionProblem, RegionSelector, find_regions


class ManuscriptRegions(NamedTuple):
    """A manuscript read from a manifest: its regions and their pixels, in manuscript order."""

    manifest: Manifest
    regions: list[Region]
    images: list[Image.Image]
    problems: list[RegionProblem]


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
) -> tuple[Manifest, list[Region], list[RegionProblem]]:
    """Load a manifest and find its regions, without fetching any pixels."""
    manifest = load_manifest(source, fetcher=fetcher)
    regions, problems = find_regions(
        manifest, fetcher=fetcher, selector=selector, given=given, whole_canvases=whole_canvases,
        max_regions=max_regions,
    )
    return manifest, regions, problems


def load_manuscript_regions(
    source: str,
    *,
    fetcher: Fetcher,
    long_side: int | None = None,
    selector: RegionSelector | None = None,
    given: Sequence[Any] | None = None,
    whole_canvases: bool = False,
    max_regions: int | None = None,
    workers: int = 4,
    strict: bool = False,
    require_regions: bool = True,
) -> ManuscriptRegions:
    """Load a manifest, find its regions and fetch each region at ``long_side`` pixels.

    Raises ``InputError`` when the manifest yields no region at all (with the problems met), or,
    with ``strict``, at the first region that cannot be fetched. With ``require_regions=False``
    (the service, which records problems per manuscript) it returns what it found instead, with
    a problem saying why nothing could be used.
    """
    manifest, regions, problems = list_regions(
        source, fetcher=fetcher, selector=selector, given=given, whole_canvases=whole_canvases,
        max_regions=max_regions,
    )
    if not regions and not require_regions:
        problems.append(RegionProblem("no illustration regions found in this manifest"))
        return ManuscriptRegions(manifest, [], [], problems)
    if not regions:
        detail = "; ".join(p.message for p in problems[:3])
        raise InputError(
            f"manifest {source}: no illustration regions found"
            + (f" ({detail})" if detail else "")
            + "; give regions with the request, change the region selector, or use whole canvases",
            field="regions",
        )
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
            problems.append(RegionProblem(f"region {region.index} ({region.label}): {result.message}",
                                          region.canvas_id, region=region.index))
        else:
            kept.append(region)
            images.append(result)
    if not kept and require_regions:
        raise InputError(
            f"manifest {source}: none of its {len(regions)} regions could be fetched ({problems[-1].message})",
            field="regions",
        )
    return ManuscriptRegions(manifest, kept, images, problems)


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

"""Reading one manuscript for a collation: manifest, regions, region images (the io queue's work).

Everything that can go wrong with a library's documents is recorded as an error of the manuscript
(or of one canvas or region) rather than raised, so the collation goes on with what could be read.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ..errors import CollationError
from ..store.datastore import DataStore

if TYPE_CHECKING:
    from ..iiif.http import Fetcher

FETCH_THREADS = 4
"""Region images fetched at once; the Fetcher also caps requests per host."""


def region_options(spec: Any) -> dict[str, Any]:
    """``find_regions`` arguments from the request's regions entry of one manuscript.

    The entry is a list of ``{"canvas": id or index, "xywh": [x, y, w, h], "label"}`` (regions
    given by the user), ``{"selector": "motivation=tagging,tag=illustration"}`` (which annotations
    of the manifest are illustrations), ``{"whole_canvases": true}``, or absent (every
    non-painting annotation with a region).
    """
    from ..iiif.regions import RegionSelector

    if spec is None:
        return {}
    if isinstance(spec, list):
        return {"given": spec}
    options: dict[str, Any] = {}
    if spec.get("selector"):
        options["selector"] = RegionSelector.parse(spec["selector"])
    if spec.get("whole_canvases"):
        options["whole_canvases"] = True
    return options


def read_manuscript(record: dict, m: int, store: DataStore, fetcher: Fetcher,
                    max_regions: int = 5000) -> tuple[dict, dict | None]:
    """Reads manuscript ``m`` of a collation and stores its region images.

    Returns:
        (doc, manifest JSON or None): ``doc`` has ``index``, ``manifest`` (the URL as given),
        ``manifest_id``, ``label``, ``version``, ``regions`` (those whose image could be read, each
        with ``index``, ``canvas_id``, ``canvas_index``, ``xywh``, ``label``, ``digest``),
        ``errors`` (``{"message", "canvas"?, "region"?}``) and ``features_key``.
    """
    from ..features import features_key, image_digest
    from ..iiif.fetch import fetch_region
    from ..iiif.manifests import load_manifest
    from ..iiif.regions import find_regions

    url = record["request"]["manifests"][m]
    spec = (record["request"].get("regions") or {}).get(str(m))
    errors: list[dict[str, Any]] = []
    doc: dict[str, Any] = {"index": m, "manifest": url, "manifest_id": None, "label": None, "version": None,
                           "regions": [], "errors": errors, "features_key": None}
    try:
        manifest = load_manifest(url, fetcher=fetcher)
    except CollationError as exc:
        errors.append({"message": exc.message})
        return doc, None
    doc.update(manifest_id=manifest.id, label=manifest.label, version=manifest.version)
    try:
        regions, problems = find_regions(manifest, fetcher=fetcher, max_regions=max_regions,
                                         **region_options(spec))
    except CollationError as exc:
        errors.append({"message": exc.message})
        return doc, manifest.raw
    for problem in problems:
        errors.append({"message": str(problem), **({"canvas": problem.canvas_id} if problem.canvas_id else {})})
    if not regions:
        errors.append({"message": "no illustration regions found in this manifest"})

    canvases = {canvas.id: canvas for canvas in manifest.canvases}

    def fetch(region: Any) -> Any:
        try:
            return fetch_region(region, canvases[region.canvas_id], fetcher=fetcher)
        except CollationError as exc:
            return exc

    with ThreadPoolExecutor(FETCH_THREADS) as pool:
        images = list(pool.map(fetch, regions))
    kept = []
    for region, image in zip(regions, images, strict=True):
        if isinstance(image, CollationError):
            errors.append({"message": image.message, "canvas": region.canvas_id, "region": region.index})
            continue
        key = image_digest(image)
        store.save_image(image, key)
        kept.append({**region.to_dict(), "digest": key})
    doc["regions"] = kept
    if kept:
        doc["features_key"] = features_key([r["digest"] for r in kept], record["options"]["backbone"])
    return doc, manifest.raw

"""Viewer-only derived manifests and pages whose boxes Mirador 3.4.3 and 4.0.0 draw where they belong.

Those versions draw a ``#xywh`` fragment on their overlay with the zoom of the first image's *pixels*
(``TiledImage.viewportToImageZoom``), not of the canvas (ProjectMirador/mirador#4533): on a canvas
larger than its image (canvases at scan resolution, images as derivatives) every box comes out
``canvas width / image width`` times too large and too far from the origin. The built-in view
therefore opens, for those versions, a copy of each derived manifest whose canvases point to copies
of the annotation pages with every fragment divided by that factor, so that Mirador's scaling puts
it back in place. Annotation ids, bodies and everything else stay as they are (the original box is
kept as ``imcol:canvasFragment``), and the derived manifests served to other viewers are untouched.
The source manifest's own annotations (its region lists) are left out of the variant: Mirador would
draw them unscaled, at ``factor`` times their place (``point_to_viewer_pages``).

The factor is Mirador's own: the image's pixel width (its ``info.json``, read with the service's
fetcher and cached there; else the width the manifest declares) over the width the image takes in
canvas units (its painting target, the canvas otherwise, shrunk as OpenSeadragon fits it keeping its
aspect ratio). Without a usable size the page is served unscaled.
"""

from __future__ import annotations

import copy
from typing import Any

from collation.core.errors import CollationError
from collation.iiif.info import read_info
from collation.iiif.manifests import Canvas, Manifest, parse_manifest
from collation.net.http import Fetcher
from collation.service.annotations import canvas_page, derived_manifest
from collation.service.documents import DocumentCache
from collation.service.results import check_id
from collation.service.urls import collation_url
from collation.store.datastore import DataStore

SCALES_BY_IMAGE = frozenset({"3.4.3", "4.0.0"})
"""Mirador versions that scale fragments by the image's pixels (mirador#4533): they get these variants."""


def viewer_manifest_url(base: str, cid: str, m: int) -> str:
    return f"{collation_url(base, cid)}/view/manifests/{m}"


def viewer_page_url(base: str, cid: str, m: int, canvas_number: int) -> str:
    return f"{collation_url(base, cid)}/view/pages/{m}/{canvas_number}"


def viewer_manifest(store: DataStore, cache: DocumentCache, cid: str, m: int, base: str) -> dict[str, Any]:
    """The derived manifest of manuscript ``m`` with its page references pointing to ``viewer_page``."""
    doc = copy.deepcopy(derived_manifest(store, cache, cid, m, base))
    point_to_viewer_pages(doc, f"{collation_url(base, cid)}/pages/{m}/", lambda n: viewer_page_url(base, cid, m, n))
    doc["@id" if "@id" in doc else "id"] = viewer_manifest_url(base, cid, m)
    return doc


def point_to_viewer_pages(doc: dict[str, Any], canonical: str, variant: Any) -> dict[str, Any]:
    """Points every reference to a collation page (``canonical`` + canvas number) to ``variant(number)``
    and drops the source manifest's own annotation references, in place.

    Those (the library's region lists, ``"illustration"`` tags) target the canvas in canvas units, which
    these Mirador versions would draw ``factor`` times too far (mirador#4533); the collation's pages
    already carry the same regions, scaled. Their ids stay listed in ``imcol:sourceAnnotations``.
    """
    for canvas in _canvases(doc):
        dropped = []
        for key in ("annotations", "otherContent"):
            refs = canvas.get(key)
            if not isinstance(refs, list):
                continue
            kept = []
            for ref in refs:
                id_key = "id" if isinstance(ref, dict) and "id" in ref else "@id"
                value = ref.get(id_key) if isinstance(ref, dict) else ref
                if isinstance(value, str) and value.startswith(canonical):
                    ref[id_key] = variant(int(value.removeprefix(canonical)))
                    kept.append(ref)
                else:
                    dropped.append(value if isinstance(value, str) else None)
            canvas[key] = kept
        if dropped:
            canvas["imcol:sourceAnnotations"] = dropped
    return doc


def viewer_page(
    store: DataStore, cache: DocumentCache, cid: str, m: int, canvas_number: int, base: str, fetcher: Fetcher
) -> dict[str, Any]:
    """The annotation page of canvas ``canvas_number`` (1-based) with its fragments in Mirador's image space."""
    page = copy.deepcopy(canvas_page(store, cache, cid, m, canvas_number, base))
    page["@id" if "@id" in page else "id"] = viewer_page_url(base, cid, m, canvas_number)
    manifest = _manifest(store, cache, cid, m)
    factor = mirador_factor(manifest.canvases[canvas_number - 1], fetcher)
    if factor is not None:
        scale_fragments(page, factor)
    return page


def mirador_factor(canvas: Canvas, fetcher: Fetcher | None = None) -> float | None:
    """Image pixels per canvas unit of the canvas's first image as Mirador places it; None when unknown."""
    image = canvas.image
    if image is None:
        return None
    width, height = image.width, image.height
    if image.service_id and fetcher is not None:
        try:
            info = read_info(image.service_id, fetcher=fetcher, version_hint=image.service_version)
            width, height = info.width, info.height
        except CollationError:
            pass  # the declared size, if any
    tw, th = (image.target[2], image.target[3]) if image.target else (canvas.width, canvas.height)
    if not (width and height and tw and th):
        return None
    placed = min(float(tw), th * width / height)  # OpenSeadragon fits the image in the rectangle
    return width / placed


def scale_fragments(page: dict[str, Any], factor: float) -> dict[str, Any]:
    """Multiplies every annotation's ``xywh`` FragmentSelector of ``page`` by ``factor``, in place."""
    for annotation in page.get("items") or page.get("resources") or []:
        target = annotation.get("target") or annotation.get("on")
        selector = target.get("selector") if isinstance(target, dict) else None
        value = selector.get("value") if isinstance(selector, dict) else None
        if not isinstance(value, str) or not value.startswith("xywh="):
            continue
        numbers = [float(v) for v in value.removeprefix("xywh=").split(",")]
        selector["value"] = "xywh=" + ",".join(str(round(v * factor)) for v in numbers)
        annotation["imcol:canvasFragment"] = value
    return page


def _canvases(doc: dict[str, Any]) -> list[dict[str, Any]]:
    if "sequences" in doc:
        sequences = doc["sequences"] if isinstance(doc["sequences"], list) else [doc["sequences"]]
        canvases = sequences[0].get("canvases", []) if sequences and isinstance(sequences[0], dict) else []
    else:
        canvases = doc.get("items", [])
    return [c for c in canvases if isinstance(c, dict)] if isinstance(canvases, list) else []


def _manifest(store: DataStore, cache: DocumentCache, cid: str, m: int) -> Manifest:
    """The input manifest of manuscript ``m`` as parsed, kept in the app's document cache."""
    record = store.load_record(check_id(cid))
    key = ("viewer-manifest", store.description, cid, m, record.ended)
    return cache.get_or_build(key, lambda: parse_manifest(store.load_manifest(cid, m), url=record.request.manifests[m]))

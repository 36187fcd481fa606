"""The dry run before a collation: what a manifest holds and what a collation would use of it.

``inspect_manifest`` reads the manifest and its annotations exactly as a collation does (same
fetcher, same address policy, same caps), reads the ``info.json`` of up to ``max_info`` image
services (those under regions first), and returns a JSON-ready dict; no region pixels are fetched.
On a manifest without region annotations it shows the regions that detection would use (as a
collation does by default: one reduced-size image per canvas; ``detect=False`` skips it).
API::

    report = inspect_manifest(source, fetcher=fetcher, selector=None, given=None,
                              whole_canvases=False, max_regions=None, max_info=20,
                              detect=None, detector=None)
    print(format_inspection(report))

Shape of the report::

    {"manifest": {"id", "url", "label", "version"},
     "canvases": [{"index", "id", "label", "width", "height",
                   "images": [{"annotation_id", "service_id", "image_api_version", "level",
                               "static_url", "target", "selector", "rotation", "mirrored", "choice",
                               "login", "info": {"version", "level", "width", "height", "sizes",
                               "tiles", "max_width", "max_height", "max_area", "login"} | None}]}],
     "regions": [{"index", "canvas_id", "canvas_index", "xywh", "label", "annotation_id", "score"?}],
     "regions_source": "annotations" | "detected" | "given" | "whole_canvases",
     "regions_note": str | None,          # what detection found, when it was used
     "problems": [{"message", "canvas_id", "source"}],
     "summary": {"canvases", "canvases_with_image", "regions", "problems", "info_read"}}
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from collation.core.errors import CollationError
from collation.iiif.info import ServiceInfo, read_info
from collation.iiif.model import ImageSource
from collation.iiif.regions import RegionProblem, RegionSelector
from collation.iiif.sources import select_regions
from collation.net.http import Fetcher

if TYPE_CHECKING:
    from collation.engine.detection import Detector


def _info_dict(info: ServiceInfo) -> dict[str, Any]:
    return {
        "version": info.version,
        "level": info.level,
        "width": info.width,
        "height": info.height,
        "sizes": [list(s) for s in info.sizes],
        "tiles": [{"width": t.width, "height": t.height, "scale_factors": list(t.scale_factors)} for t in info.tiles],
        "max_width": info.max_width,
        "max_height": info.max_height,
        "max_area": info.max_area,
        "login": info.login,
    }


def _image_dict(image: ImageSource) -> dict[str, Any]:
    return {
        "annotation_id": image.annotation_id,
        "service_id": image.service_id,
        "image_api_version": image.service_version,
        "level": image.level,
        "static_url": image.static_url,
        "target": list(image.target) if image.target else None,
        "selector": list(image.selector) if image.selector else None,
        "rotation": image.rotation,
        "mirrored": image.mirrored,
        "choice": image.choice,
        "login": image.login,
        "info": None,
    }


def inspect_manifest(
    source: str,
    *,
    fetcher: Fetcher,
    selector: RegionSelector | None = None,
    given: Sequence[Any] | None = None,
    whole_canvases: bool = False,
    max_regions: int | None = None,
    max_info: int = 20,
    detect: bool | None = None,
    detector: Detector | None = None,
    info_deadline: float | None = None,
) -> dict[str, Any]:
    """Read ``source`` (URL or local file) as a collation would and report it (see the module doc).
    No ``info.json`` is fetched once ``time.monotonic()`` passes ``info_deadline`` (when given).
    Raises what ``select_regions`` raises for a manifest that cannot be read at all."""
    manifest, regions, problems, regions_source, note = select_regions(
        source,
        fetcher=fetcher,
        selector=selector,
        given=given,
        whole_canvases=whole_canvases,
        max_regions=max_regions,
        detect=detect,
        detector=detector,
    )
    canvases = []
    for canvas in manifest.canvases:
        canvases.append(
            {
                "index": canvas.index,
                "id": canvas.id,
                "label": canvas.label,
                "width": canvas.width,
                "height": canvas.height,
                "images": [_image_dict(image) for image in canvas.painted()],
            }
        )
    with_regions = {r.canvas_index for r in regions}
    order = sorted(range(len(canvases)), key=lambda i: (i not in with_regions, i))
    infos: dict[str, ServiceInfo | None] = {}
    for i in order:
        for entry in canvases[i]["images"]:
            service = entry["service_id"]
            if not service:
                continue
            if service not in infos:
                if len(infos) >= max_info or (info_deadline is not None and time.monotonic() > info_deadline):
                    continue
                infos[service] = _read(service, entry, fetcher, problems, canvases[i]["id"])
            info = infos[service]
            entry["info"] = _info_dict(info) if info is not None else None
    return {
        "manifest": {"id": manifest.id, "url": manifest.url, "label": manifest.label, "version": manifest.version},
        "canvases": canvases,
        "regions": [r.to_dict() for r in regions],
        "regions_source": regions_source,
        "regions_note": note,
        "problems": [{"message": p.message, "canvas_id": p.canvas_id, "source": p.source} for p in problems],
        "summary": {
            "canvases": len(canvases),
            "canvases_with_image": sum(bool(c["images"]) for c in canvases),
            "regions": len(regions),
            "problems": len(problems),
            "info_read": sum(info is not None for info in infos.values()),
        },
    }


def _read(
    service: str, entry: dict[str, Any], fetcher: Fetcher, problems: list[RegionProblem], canvas_id: str
) -> ServiceInfo | None:
    try:
        info = read_info(service, fetcher=fetcher, version_hint=entry["image_api_version"])
    except CollationError as exc:
        status = getattr(exc, "status", None)
        if status in (401, 403):
            where = (
                entry["login"]
                or getattr(exc, "login", None)
                or "the library's login page (no IIIF Auth service declared)"
            )
            problems.append(
                RegionProblem(f"image service {service}: login required at {where} (HTTP {status})", canvas_id, service)
            )
        else:
            problems.append(RegionProblem(f"image service {service}: {exc.message}", canvas_id, service))
        return None
    if info.login or entry["login"]:
        problems.append(
            RegionProblem(
                f"image service {service}: login required at {info.login or entry['login']}", canvas_id, service
            )
        )
    return info


def format_inspection(report: dict[str, Any]) -> str:
    """Plain text of an ``inspect_manifest`` report, for the command line."""
    m, s = report["manifest"], report["summary"]
    lines = [
        f"manifest: {m['id']}",
        f"label: {m['label'] or '(none)'}",
        f"IIIF Presentation {m['version']}, {s['canvases']} canvases ({s['canvases_with_image']} with an image), "
        f"{s['regions']} regions, {s['problems']} problems",
    ]
    for canvas in report["canvases"]:
        size = f"{canvas['width']}×{canvas['height']}"
        lines.append(f"canvas {canvas['index']}: {canvas['id']} ({size}) {canvas['label']}")
        for image in canvas["images"]:
            info = image["info"]
            if image["service_id"]:
                what = f"  image service {image['service_id']} (Image API {image['image_api_version'] or '?'}"
                what += f", level {info['level'] if info else image['level'] if image['level'] is not None else '?'})"
                if info:
                    what += f" {info['width']}×{info['height']}, sizes {len(info['sizes'])}, tiles " + (
                        ", ".join(f"{t['width']}×{t['height']} {t['scale_factors']}" for t in info["tiles"]) or "none"
                    )
            else:
                what = f"  static image {image['static_url']}"
            for key in ("target", "selector", "choice"):
                if image[key]:
                    what += f"; {key} {image[key]}"
            if image["rotation"]:
                what += f"; rotation {image['rotation']}"
            lines.append(what)
    if report.get("regions_note"):
        lines.append(report["regions_note"])
    for region in report["regions"]:
        origin = (
            f"(detected, score {region['score']:.2f})"
            if region.get("score") is not None
            else region["annotation_id"] or "(given/whole canvas)"
        )
        lines.append(
            f"region {region['index']}: canvas {region['canvas_index']} xywh "
            f"{','.join(map(str, region['xywh']))} from {origin}"
        )
    if report["problems"]:
        lines.append(f"problems ({len(report['problems'])}):")
        lines += [f"  - {p['message']}" for p in report["problems"]]
    return "\n".join(lines) + "\n"

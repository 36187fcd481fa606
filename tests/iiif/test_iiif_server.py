"""Against a real IIIF image server (iipsrv behind lighttpd) serving the Physiologus folios: the
regions the tests' 2.1 and 3.0 manifests carry come back as the same pixels as a local crop."""

from __future__ import annotations

import json
from typing import Any

import pytest
from builders import (
    svg_rect_path,
    v2_canvas,
    v2_manifest,
    v2_service,
    v3_canvas,
    v3_image_body,
    v3_manifest,
    v3_region_annotation,
)
from iiif_helpers import mean_abs_diff
from PIL import Image

from collation.core.errors import FetchError
from collation.iiif.fetch import fetch_region
from collation.iiif.info import read_info
from collation.iiif.manifests import load_manifest
from collation.iiif.regions import find_regions
from collation.iiif.sources import format_regions_report, list_regions, load_manuscript_regions

pytestmark = pytest.mark.slow

MAD_LIMIT = 4.0


def p2_v21_manifest(iipsrv: Any, static_server: Any) -> tuple[str, list[tuple[int, int, int, int]]]:
    """P2 as Presentation 2.1: canvases twice the image size (like the Vatican's full-resolution
    canvases), boxes in referenced AnnotationLists in three selector styles, plus transcription lines."""
    canvases = []
    expected = []
    base = f"{static_server.url}/p2"
    for n, box in enumerate(iipsrv.boxes["P2"]):
        with Image.open(box.folio) as folio:
            size = folio.size
        canvas_id = f"https://example.org/iiif/P2/canvas/{box.folio.stem}"
        x, y, w, h = (2 * v for v in box.xywh)
        expected.append((x, y, w, h))
        if n % 3 == 0:
            on: Any = f"{canvas_id}#xywh={x},{y},{w},{h}"
        elif n % 3 == 1:
            on = {
                "@type": "oa:SpecificResource",
                "full": canvas_id,
                "selector": {"@type": "oa:FragmentSelector", "value": f"xywh={x},{y},{w},{h}"},
            }
        else:  # what Mirador 2 writes: a Choice of a rectangle and an SVG path
            on = [
                {
                    "@type": "oa:SpecificResource",
                    "full": canvas_id,
                    "selector": {
                        "@type": "oa:Choice",
                        "default": {"@type": "oa:FragmentSelector", "value": f"xywh={x},{y},{w},{h}"},
                        "item": {"@type": "oa:SvgSelector", "value": svg_rect_path(x, y, w, h)},
                    },
                }
            ]
        annotation_list = {
            "@context": "http://iiif.io/api/presentation/2/context.json",
            "@id": f"{base}/list/{n}.json",
            "@type": "sc:AnnotationList",
            "resources": [
                {
                    "@id": f"{base}/anno/{n}-line",
                    "@type": "oa:Annotation",
                    "motivation": "sc:painting",
                    "resource": {"@type": "cnt:ContentAsText", "chars": "ΦΥΣΙΟΛΟΓΟΣ"},
                    "on": f"{canvas_id}#xywh=10,10,300,40",
                },
                {
                    "@id": f"{base}/anno/{n}",
                    "@type": "oa:Annotation",
                    "motivation": "oa:commenting",
                    "resource": {"@type": "dctypes:Text", "chars": f"<p>illustration {n}</p>"},
                    "on": on,
                },
            ],
        }
        static_server.write_json(f"p2/list/{n}.json", annotation_list)
        service: Any = v2_service(f"{iipsrv.base}/{iipsrv.identifiers[box.folio]}")
        if n % 2:
            service = [service]  # services come as objects or lists
        canvases.append(
            v2_canvas(
                canvas_id,
                (2 * size[0], 2 * size[1]),
                service=service,
                image_url=f"{iipsrv.base}/{iipsrv.identifiers[box.folio]}/full/full/0/default.jpg",
                image_size=size,
                other_content=[{"@id": f"{base}/list/{n}.json", "@type": "sc:AnnotationList"}],
                label=f"f. {n + 1}",
            )
        )
    url = static_server.write_json("p2/manifest.json", v2_manifest(f"{base}/manifest.json", canvases, "P2"))
    return url, expected


def p3_v3_manifest(iipsrv: Any, static_server: Any) -> tuple[str, list[tuple[int, int, int, int]]]:
    """P3 as Presentation 3.0 with ImageService2 services and embedded AnnotationPages whose
    selectors are pixel fragments, target strings, percent fragments and SVG paths."""
    canvases = []
    expected = []
    base = f"{static_server.url}/p3"
    for n, box in enumerate(iipsrv.boxes["P3"]):
        with Image.open(box.folio) as folio:
            width, height = folio.size
        canvas_id = f"https://example.org/iiif/P3/canvas/{box.folio.stem}"
        x, y, w, h = box.xywh
        expected.append(box.xywh)
        style = n % 4
        if style == 0:
            selector: Any = {"type": "FragmentSelector", "value": f"xywh={x},{y},{w},{h}"}
            target: Any = {"type": "SpecificResource", "source": canvas_id, "selector": selector}
        elif style == 1:
            target = f"{canvas_id}#xywh={x},{y},{w},{h}"
        elif style == 2:
            pct = [100 * x / width, 100 * y / height, 100 * w / width, 100 * h / height]
            value = "xywh=percent:" + ",".join(f"{v:.6f}" for v in pct)
            target = {
                "type": "SpecificResource",
                "source": {"id": canvas_id, "type": "Canvas"},
                "selector": {"type": "FragmentSelector", "value": value},
            }
        else:
            target = {
                "type": "SpecificResource",
                "source": canvas_id,
                "selector": {"type": "SvgSelector", "value": svg_rect_path(x, y, w, h)},
            }
        page = {
            "id": f"{base}/page/{n}",
            "type": "AnnotationPage",
            "items": [v3_region_annotation(f"{base}/anno/{n}", target)],
        }
        service = [
            {
                "@id": f"{iipsrv.base}/{iipsrv.identifiers[box.folio]}",
                "@type": "ImageService2",
                "profile": "http://iiif.io/api/image/2/level1.json",
            }
        ]
        body = v3_image_body(
            f"{iipsrv.base}/{iipsrv.identifiers[box.folio]}/full/max/0/default.jpg", (width, height), service
        )
        canvases.append(v3_canvas(canvas_id, (width, height), body=body, annotations=[page], label=f"image {n}"))
    url = static_server.write_json("p3/manifest.json", v3_manifest(f"{base}/manifest.json", canvases, "P3"))
    return url, expected


def test_info_json_from_iipsrv(iipsrv: Any, fetcher: Any) -> None:
    identifier = next(iter(iipsrv.identifiers.values()))
    info = read_info(f"{iipsrv.base}/{identifier}", fetcher=fetcher)
    assert info.version == 2 and info.level == 1
    assert info.id == f"{iipsrv.base}/{identifier}"
    assert info.max_width == 5000 and info.tiles and info.sizes
    assert info.supports("regionByPx") and info.supports("sizeByW")


@pytest.mark.parametrize("builder", [p2_v21_manifest, p3_v3_manifest], ids=["P2-v2.1", "P3-v3.0"])
def test_regions_match_local_crops(builder: Any, iipsrv: Any, static_server: Any, fetcher: Any) -> None:
    url, expected = builder(iipsrv, static_server)
    alias = "P2" if "p2" in url else "P3"
    _, regions, problems = list_regions(url, fetcher=fetcher)
    assert all("not used, painting (content, not an illustration)" in p.message for p in problems)  # lines
    assert [r.index for r in regions] == list(range(15))
    for region, want in zip(regions, expected, strict=True):
        assert all(abs(a - b) <= 1 for a, b in zip(region.xywh, want, strict=True)), (region, want)
    start = len(static_server.log)
    result = load_manuscript_regions(url, fetcher=fetcher, long_side=352)
    assert [p.message for p in result.problems] == [p.message for p in problems]  # the same report, no fetch failure
    requested = [p for p, _ in static_server.log[start:]]
    assert not [p for p in requested if "/list/" in p], "annotation lists are fetched once per fetcher"
    for image, box in zip(result.images, iipsrv.boxes[alias], strict=True):
        assert max(image.size) == 352
        with Image.open(box.folio) as folio:
            assert mean_abs_diff(image, folio, box.xywh, blur=2.0) < MAD_LIMIT
            x, y, w, h = box.xywh
            shifted = (x + 5, y + 5, w, h)  # 5 px off in the folio: 7 to 16 grey levels
            assert mean_abs_diff(image, folio, shifted, blur=2.0) > MAD_LIMIT  # so the check can fail


@pytest.mark.parametrize("builder", [p2_v21_manifest, p3_v3_manifest], ids=["P2-v2.1", "P3-v3.0"])
def test_regions_at_native_resolution_are_pixel_exact(
    builder: Any, iipsrv: Any, static_server: Any, fetcher: Any
) -> None:
    """Without any resampling, the server's crop is the local crop (JPEG noise only)."""
    url, _ = builder(iipsrv, static_server)
    alias = "P2" if "p2" in url else "P3"
    result = load_manuscript_regions(url, fetcher=fetcher, long_side=5000)
    for image, box in zip(result.images, iipsrv.boxes[alias], strict=True):
        assert abs(image.size[0] - box.xywh[2]) <= 1 and abs(image.size[1] - box.xywh[3]) <= 1
        with Image.open(box.folio) as folio:
            assert mean_abs_diff(image, folio, box.xywh) < MAD_LIMIT


def test_region_requests_are_sized_not_full_resolution(iipsrv: Any, static_server: Any, fetcher: Any) -> None:
    url, _ = p3_v3_manifest(iipsrv, static_server)
    manifest = load_manifest(url, fetcher=fetcher)
    regions, _ = find_regions(manifest, fetcher=fetcher)
    canvas = manifest.canvases[0]
    sent = []
    original = fetcher.get_image

    def spy(url: str, **kwargs: Any) -> Image.Image:
        sent.append(url)
        return original(url, **kwargs)

    fetcher.get_image = spy  # type: ignore[method-assign]
    image = fetch_region(regions[0], canvas, long_side=100, fetcher=fetcher)
    x, y, w, h = regions[0].xywh
    service = f"{iipsrv.base}/{iipsrv.identifiers[iipsrv.boxes['P3'][0].folio]}"
    assert sent == [f"{service}/{x},{y},{w},{h}/{round(w * 100 / h)},/0/default.jpg"]
    assert max(image.size) == 100


def test_out_of_bounds_html_with_status_200_is_refused(iipsrv: Any, fetcher: Any) -> None:
    """iipsrv 1.1 answers an out-of-bounds region with 200 image/jpeg and an HTML body. (A P3
    folio: on the P2 TIFFs iipsrv takes about 12 s to produce that error page.)"""
    identifier = iipsrv.identifiers[iipsrv.boxes["P3"][0].folio]
    with pytest.raises(FetchError, match="not an image"):
        fetcher.get_image(f"{iipsrv.base}/{identifier}/5000,5000,10,10/full/0/default.jpg")


def test_regions_report(iipsrv: Any, static_server: Any, fetcher: Any) -> None:
    url, expected = p2_v21_manifest(iipsrv, static_server)
    manifest, regions, problems = list_regions(url, fetcher=fetcher)
    report = format_regions_report(manifest, regions, problems)
    assert "IIIF Presentation 2, 15 canvases, 15 regions" in report
    first = ",".join(str(v) for v in expected[0])
    assert f"{first}" in report and "f. 1: illustration 0" in report


def test_local_manifest_file_given_regions_and_partial_failure(
    iipsrv: Any, static_server: Any, fetcher: Any, tmp_path: Any
) -> None:
    """A local manifest without annotations, regions given with the request, one canvas whose image
    service is missing: the other regions come back, the failure is a problem line; ``strict``
    turns it into an error."""
    from collation.core.errors import CollationError, InputError
    from collation.iiif.sources import looks_like_manifest

    boxes = iipsrv.boxes["P3"][:2]
    canvases = []
    for n, box in enumerate(boxes):
        with Image.open(box.folio) as folio:
            size = folio.size
        identifier = iipsrv.identifiers[box.folio] if n == 0 else "no-such-image.tif"
        service = v2_service(f"{iipsrv.base}/{identifier}")
        static = f"{static_server.url}/missing/{n}.jpg"
        canvases.append(v2_canvas(f"https://example.org/c{n}", size, service=service, image_url=static))
    path = tmp_path / "local-manifest.json"
    path.write_text(json.dumps(v2_manifest("https://example.org/local", canvases)))
    assert looks_like_manifest(str(path)) and looks_like_manifest("https://example.org/m")
    assert not looks_like_manifest(str(tmp_path))
    given = [{"canvas": f"https://example.org/c{n}", "xywh": ",".join(map(str, b.xywh))} for n, b in enumerate(boxes)]
    with pytest.raises(InputError, match="no illustration regions"):
        load_manuscript_regions(str(path), fetcher=fetcher, detect=False)
    detected = load_manuscript_regions(str(path), fetcher=fetcher)  # no annotations: detected by default
    assert detected.source == "detected" and [r.canvas_index for r in detected.regions] == [0]
    assert detected.note == (
        "no region annotations: 1 illustration detected on 1 of 2 canvases (1 could not be searched)"
    )
    assert [p.canvas_id for p in detected.problems] == ["https://example.org/c1"]
    assert "could not be loaded for detection" in detected.problems[0].message
    result = load_manuscript_regions(str(path), fetcher=fetcher, given=given)
    assert [r.index for r in result.regions] == [0] and len(result.images) == 1
    assert len(result.problems) == 1 and "no-such-image.tif/info.json: HTTP 404" in result.problems[0].message
    assert "the static image failed too" in result.problems[0].message
    with Image.open(boxes[0].folio) as folio:
        assert mean_abs_diff(result.images[0], folio, boxes[0].xywh, blur=2.0) < MAD_LIMIT
    with pytest.raises(CollationError, match="HTTP 404"):
        load_manuscript_regions(str(path), fetcher=fetcher, given=given, strict=True)

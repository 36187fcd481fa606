"""The reader on real published files (``tests/iiif/corpus``, origins in its README): the six
reading cases of issue 10 against the boxes the JSON says, and, for every file, every painting
image and every annotation either used or reported with the reason. Referenced pages are served
from the corpus by id; nothing leaves the process."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from collation.core.errors import CollationError, FetchError
from collation.iiif.fetch import fetch_region
from collation.iiif.geometry import canvas_to_image
from collation.iiif.manifests import parse_manifest
from collation.iiif.model import json_id, json_type
from collation.iiif.regions import find_regions

CORPUS = Path(__file__).parent / "corpus"
DOCS = {p.name: json.loads(p.read_text()) for p in sorted(CORPUS.glob("*.json"))}
MANIFESTS = sorted(n for n, d in DOCS.items() if json_type(d).lower() in ("manifest", "sc:manifest"))
ALIASES = {"https://iiif.bodleian.ox.ac.uk/iiif/manifest.json": "mirador-v2-001.json"}  # a relative link's target


class CorpusFetcher:
    """Serves the corpus by declared id; anything else is a 404."""

    def __init__(self) -> None:
        self.by_id = {json_id(d): d for d in DOCS.values()} | {u: DOCS[n] for u, n in ALIASES.items()}
        self.served: list[Any] = []

    def get_json(
        self, url: str, *, what: str = "document", max_bytes: int | None = None, accept: Any = None
    ) -> tuple[Any, str]:
        if url not in self.by_id:
            raise FetchError(f"{what} {url}: HTTP 404", url=url, status=404)
        self.served.append(self.by_id[url])
        doc = copy.deepcopy(self.by_id[url])
        if accept is not None:  # the reader's check, as the real fetcher runs it
            accept(doc)
        return doc, url


def read(name: str, **options: Any) -> tuple[Any, list[Any], list[str], CorpusFetcher]:
    fetcher = CorpusFetcher()
    manifest = parse_manifest(copy.deepcopy(DOCS[name]), url=json_id(DOCS[name]))
    regions, problems = find_regions(manifest, fetcher=fetcher, **options)  # type: ignore[arg-type]
    return manifest, regions, [p.message for p in problems], fetcher


def boxes(regions: list[Any]) -> list[tuple[int, ...]]:
    return [r.xywh for r in regions]


# -- the six cases -------------------------------------------------------------------------------


def test_case1_empty_motivation_paints() -> None:
    manifest, regions, problems, _ = read("derived-0021-empty-motivation.json")
    image = manifest.canvases[0].image
    assert image is not None and image.service_id.endswith("gottingen") and image.service_version == 3
    assert boxes(regions) == [(265, 661, 1260, 1239)] and problems == []
    assert find_regions(manifest, whole_canvases=True)[0][0].xywh == (0, 0, 4032, 3024)


def test_case2_fragment_on_the_source_of_a_specific_resource() -> None:
    _, regions, problems, _ = read("derived-0021-source-fragment.json")
    assert boxes(regions) == [(265, 661, 1260, 1239)] and problems == []


def test_case3_canvas_target_with_a_selector_and_no_source() -> None:
    _, regions, problems, _ = read("derived-0021-canvas-svg-target.json")
    assert boxes(regions) == [(265, 661, 1260, 1239)] and problems == []


def test_case4_image_api_selector_rotation_maps_into_image_pixels() -> None:
    manifest, _, _, _ = read("cookbook-0040-rotation.json")
    canvas = manifest.canvases[0]  # 2105 × 1523 canvas showing a 1523 × 2105 image turned 90° clockwise
    assert (canvas.width, canvas.height, canvas.image.rotation) == (2105, 1523, 90)
    assert canvas_to_image((0, 0, 2105, 1523), canvas) == (0, 0, 1523, 2105)
    assert canvas_to_image((0, 0, 100, 50), canvas) == (0, 2005, 50, 100)  # top-left shown = bottom-left of the scan
    assert canvas_to_image((2005, 1473, 100, 50), canvas) == (1473, 0, 50, 100)


def test_case4_image_api_selector_region() -> None:
    manifest, _, _, _ = read("cookbook-0299-region.json")
    canvas = manifest.canvases[0]  # the canvas shows region 1768,2423,1768,2080 of a 3536 × 4999 scan
    assert canvas.image.selector == (1768, 2423, 1768, 2080)
    assert canvas_to_image((100, 200, 300, 400), canvas) == (1868, 2623, 300, 400)


def test_case4_rotated_crop_comes_out_upright(static_server: Any, fetcher: Any) -> None:
    scan = Image.new("RGB", (60, 80), "white")  # the scan as stored: red block at its top-left
    scan.paste((255, 0, 0), (0, 0, 20, 20))
    scan.save(static_server.root / "rotated.png")
    doc = copy.deepcopy(DOCS["cookbook-0040-rotation.json"])
    canvas = doc["items"][0]
    canvas["width"], canvas["height"] = 80, 60
    body = canvas["items"][0]["items"][0]["body"]
    body["source"] = {"id": f"{static_server.url}/rotated.png", "type": "Image", "format": "image/png"}
    annotation = {"id": "a", "type": "Annotation", "motivation": "tagging", "target": f"{canvas['id']}#xywh=60,0,20,20"}
    canvas["annotations"] = [{"id": "p", "type": "AnnotationPage", "items": [annotation]}]
    manifest = parse_manifest(doc, url="https://iiif.io/x.json")
    regions, _ = find_regions(manifest)
    crop = fetch_region(regions[0], manifest.canvases[0], long_side=20, fetcher=fetcher)
    assert crop.size == (20, 20) and crop.getpixel((10, 10))[0] > 200 and crop.getpixel((10, 10))[1] < 60
    wide = find_regions(manifest, given=[{"canvas": 0, "xywh": "0,0,80,20"}])[0][0]
    strip = fetch_region(wide, manifest.canvases[0], long_side=80, fetcher=fetcher)
    assert strip.size == (80, 20) and strip.getpixel((75, 10))[0] > 200 and strip.getpixel((5, 10))[1] > 200


def test_case5_composite_canvas_reads_the_image_that_paints_the_region() -> None:
    from collation.iiif.geometry import image_for_region

    manifest, _, _, _ = read("cookbook-0036-composition.json")
    canvas = manifest.canvases[0]
    assert len(canvas.images) == 2 and canvas.images[1].target == (3949, 994, 1091, 1232)
    view, box = image_for_region(canvas, (3900, 1000, 600, 600))  # mostly on the miniature
    assert view.image.service_id.endswith("bnf_chateauroux_miniature") and box == (3949, 1000, 551, 600)
    x, y, w, h = canvas_to_image(box, view)
    assert (round(x), round(y), round(w), round(h)) == (0, 12, round(551 * 2138 / 1091), round(600 * 2414 / 1232))
    view, box = image_for_region(canvas, (100, 100, 500, 500))  # the background only
    assert view.image.service_id.endswith("bnf_chateauroux") and canvas_to_image(box, view) == (100, 100, 500, 500)


def test_case6_annotations_on_one_layer_of_a_choice() -> None:
    _, regions, problems, _ = read("cookbook-0326-image-layer.json")
    assert boxes(regions) == [(810, 900, 260, 370)] and regions[0].annotation_id.endswith("p0002-tag")
    assert any("Choice" in p and "X-ray" in p for p in problems)


def test_case6_collection_first_and_next_chained_pages() -> None:
    _, regions, problems, fetcher = read("cookbook-0309-manifest.json")
    pages = {json_id(d) for d in fetcher.served}
    assert {p.rsplit("/", 1)[1] for p in pages} >= {"anno_p1.json", "anno_p2.json"}
    assert len(regions) == 8 and problems == []
    assert {r.canvas_index for r in regions} == {0, 1}


def test_case6_shared_canvas_relative_links_and_non_lists() -> None:
    manifest, regions, problems, _ = read("derived-mirador-001-shared-canvas.json")
    image = manifest.canvases[0].image
    assert image is not None and image.service_version == 1 and image.service_id.endswith("f648764b4d6d")
    assert regions == []
    assert any(
        "https://iiif.bodleian.ox.ac.uk/iiif/manifest.json" in p and "not an AnnotationList" in p for p in problems
    )


def test_case6_percent_targets() -> None:
    _, regions, problems, _ = read("derived-0021-percent-target.json")
    assert boxes(regions) == [(1008, 756, 2016, 1512)] and problems == []


def test_whole_canvas_and_point_annotations_are_reported() -> None:
    for name in ("cookbook-0266-full-canvas.json", "cookbook-0135-point.json"):
        _, regions, problems, _ = read(name)
        assert regions == [] and any("no region" in p for p in problems), name


# -- used or reported, for every file ------------------------------------------------------------


def _annotations(doc: Any, found: list[dict[str, Any]], depth: int = 0) -> None:
    if depth > 30:
        return
    if isinstance(doc, dict):
        if json_type(doc).lower() in ("annotation", "oa:annotation"):
            found.append(doc)
        for value in doc.values():
            _annotations(value, found, depth + 1)
    elif isinstance(doc, list):
        for value in doc:
            _annotations(value, found, depth + 1)


@pytest.mark.parametrize("name", MANIFESTS)
def test_every_annotation_and_image_is_used_or_reported(name: str) -> None:
    try:
        manifest, regions, problems, fetcher = read(name)
    except CollationError as error:  # refused documents say why
        assert error.message
        return
    annotations: list[dict[str, Any]] = []
    for doc in [DOCS[name], *fetcher.served]:
        _annotations(doc, annotations)
    painted = {i.annotation_id for c in manifest.canvases for i in c.painted()}
    used = {r.annotation_id for r in regions}
    text = "\n".join(problems)
    for annotation in annotations:
        ident = json_id(annotation)
        if ident is None:
            continue
        assert ident in painted or ident in used or ident in text, f"{name}: {ident} neither used nor reported"
    for canvas in manifest.canvases:
        assert canvas.painted() or canvas.id in text, f"{name}: canvas {canvas.id} has no image and no problem"
    if not regions:
        assert problems, f"{name}: 0 regions and no reason"

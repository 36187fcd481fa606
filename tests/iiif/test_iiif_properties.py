"""Property-based tests: no input makes the manifest parser (and what runs on its output) raise
anything but the project's own error type."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from builders import v2_canvas, v2_manifest, v2_service, v3_canvas, v3_image_body, v3_manifest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collation.core.correspondence import Correspondence, Side
from collation.core.errors import CollationError
from collation.iiif.geometry import canvas_to_image, parse_xywh
from collation.iiif.info import parse_info
from collation.iiif.manifests import parse_manifest
from collation.iiif.model import label_text
from collation.iiif.regions import find_regions
from collation.iiif.selectors import svg_bounding_box
from collation.iiif.sources import format_regions_report
from collation.publish.parts import UrlScheme
from collation.publish.viewer_layer import build_derived_manifest

SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)

KEYS = [
    "@context",
    "id",
    "@id",
    "type",
    "@type",
    "label",
    "items",
    "sequences",
    "canvases",
    "images",
    "resource",
    "body",
    "target",
    "on",
    "service",
    "profile",
    "width",
    "height",
    "annotations",
    "otherContent",
    "selector",
    "value",
    "motivation",
    "default",
    "item",
    "full",
    "source",
    "resources",
    "chars",
    "purpose",
    "manifests",
    "@value",
    "@language",
    "en",
    "none",
    "format",
    "sizes",
    "tiles",
    "scaleFactors",
    "maxWidth",
    "next",
]
STRINGS = [
    "http://iiif.io/api/presentation/2/context.json",
    "http://iiif.io/api/presentation/3/context.json",
    "http://iiif.io/api/presentation/4/context.json",
    "http://iiif.io/api/image/2/context.json",
    "Manifest",
    "sc:Manifest",
    "Collection",
    "Canvas",
    "sc:Canvas",
    "AnnotationPage",
    "Annotation",
    "oa:Annotation",
    "Choice",
    "oa:Choice",
    "SpecificResource",
    "oa:SpecificResource",
    "FragmentSelector",
    "oa:FragmentSelector",
    "SvgSelector",
    "ImageService2",
    "ImageService3",
    "level0",
    "level2",
    "http://iiif.io/api/image/2/level1.json",
    "painting",
    "sc:painting",
    "commenting",
    "tagging",
    "Image",
    "dctypes:Image",
    "image/jpeg",
    "Video",
    "https://x.example/c1",
    "https://x.example/c1#xywh=10,10,50,50",
    "xywh=percent:10,10,20,20",
    "xywh=1,2,3,4",
    "//x.example/iiif/p1",
    "https://x.example/iiif/p1/full/full/0/default.jpg",
    '<svg><path d="M1,1 L9,9"/></svg>',
    "",
    "\u0000",
    "é" * 3,
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(STRINGS),
    st.text(max_size=20),
)
iiif_json = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=5)), children, max_size=6),
    ),
    max_leaves=40,
)


def exercise(doc: Any) -> None:
    """Everything that runs on a parsed manifest without the network."""
    try:
        manifest = parse_manifest(doc, url="https://x.example/manifest.json")
    except CollationError:
        return
    try:
        regions, problems = find_regions(manifest, fetcher=None)
    except CollationError:
        return
    format_regions_report(manifest, regions, problems)
    for region in regions:
        canvas = manifest.canvas(region.canvas_id)
        assert canvas is not None and region.xywh[2] > 0 and region.xywh[3] > 0
        with contextlib.suppress(CollationError):
            canvas_to_image(region.xywh, canvas)
    correspondences = []
    if len(regions) >= 2:
        correspondences = [Correspondence(source=Side(0, 0), target=Side(0, 1))]
    build_derived_manifest(0, [(manifest, regions)], correspondences, urls=UrlScheme(base="https://c.example/api"))


@SETTINGS
@given(iiif_json)
def test_arbitrary_json_gives_a_manifest_or_a_project_error(doc: Any) -> None:
    exercise(doc)


@SETTINGS
@given(st.dictionaries(st.sampled_from(KEYS), iiif_json, max_size=8))
def test_iiif_shaped_objects(doc: dict[str, Any]) -> None:
    exercise(doc)


def _valid_manifests() -> list[dict[str, Any]]:
    v2 = v2_manifest(
        "https://x.example/m2",
        [
            v2_canvas(
                "https://x.example/c1",
                (100, 200),
                service=v2_service("https://x.example/iiif/p1"),
                other_content=[
                    {
                        "@type": "sc:AnnotationList",
                        "resources": [
                            {
                                "@type": "oa:Annotation",
                                "motivation": "oa:commenting",
                                "on": "https://x.example/c1#xywh=1,2,30,40",
                            }
                        ],
                    }
                ],
            )
        ],
    )
    body = v3_image_body("https://x.example/p.jpg", (100, 200))
    page = {
        "id": "https://x.example/p",
        "type": "AnnotationPage",
        "items": [
            {
                "id": "https://x.example/a",
                "type": "Annotation",
                "motivation": "tagging",
                "target": {
                    "type": "SpecificResource",
                    "source": "https://x.example/c1",
                    "selector": {"type": "SvgSelector", "value": '<svg><path d="M1,1h20v20z"/></svg>'},
                },
            }
        ],
    }
    v3 = v3_manifest(
        "https://x.example/m3", [v3_canvas("https://x.example/c1", (100, 200), body=body, annotations=[page])]
    )
    return [v2, v3]


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    paths = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            paths += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            paths += _paths(value, (*prefix, index))
    return paths


@SETTINGS
@given(st.data())
def test_valid_manifests_with_one_part_replaced(data: st.DataObject) -> None:
    doc = copy.deepcopy(data.draw(st.sampled_from(_valid_manifests())))
    path = data.draw(st.sampled_from(_paths(doc)[1:]))
    replacement = data.draw(iiif_json)
    node = doc
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = replacement
    exercise(doc)


@SETTINGS
@given(st.one_of(iiif_json, st.text(max_size=200)))
def test_small_parsers_never_raise(value: Any) -> None:
    parse_xywh(value)
    svg_bounding_box(value)
    label_text(value)
    with contextlib.suppress(CollationError):
        parse_info(value, url="https://x.example/iiif/p1")


@SETTINGS
@given(st.lists(st.sampled_from(list("MmLlHhVvCcSsQqTtAaZz,. -e0123456789")), max_size=60).map("".join))
def test_svg_paths_of_any_shape(d: str) -> None:
    box = svg_bounding_box(f'<svg><path d="{d}"/></svg>')
    assert box is None or (box[2] >= 0 and box[3] >= 0)

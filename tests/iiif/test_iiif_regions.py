"""Finding illustration regions: selectors (pixel, percent, SVG), which annotations count, order,
regions given with the request, whole canvases, and problems reported rather than raised."""

from __future__ import annotations

from typing import Any

import pytest
from builders import svg_rect_path, v2_canvas, v2_manifest, v2_service, v3_canvas, v3_image_body, v3_manifest

from collation.core.errors import InputError
from collation.iiif.manifests import parse_manifest
from collation.iiif.regions import Region, RegionSelector, find_regions
from collation.iiif.selectors import svg_bounding_box

C = "https://example.org/iiif/book/canvas"


def book_v3(pages: dict[int, list[Any]], n: int = 3, size: tuple[int, int] = (1000, 2000)) -> Any:
    canvases = []
    for k in range(n):
        body = v3_image_body(f"https://x/p{k}.jpg", size)
        annotations = pages.get(k)
        canvases.append(v3_canvas(f"{C}/p{k}", size, body=body, annotations=annotations, label=f"p. {k}"))
    return parse_manifest(v3_manifest("https://x/m", canvases), url="https://x/m")


def page(items: list[dict[str, Any]], page_id: str = "https://x/page") -> dict[str, Any]:
    return {"id": page_id, "type": "AnnotationPage", "items": items}


def anno(target: Any, motivation: Any = "commenting", body: Any = None, anno_id: str | None = None) -> dict[str, Any]:
    a: dict[str, Any] = {"type": "Annotation", "motivation": motivation, "target": target}
    if anno_id:
        a["id"] = anno_id
    if body is not None:
        a["body"] = body
    return a


def test_pixel_percent_and_svg_selectors() -> None:
    items = [
        anno(f"{C}/p0#xywh=10,20,30,40", anno_id="a1"),
        anno(
            {
                "type": "SpecificResource",
                "source": f"{C}/p0",
                "selector": {"type": "FragmentSelector", "value": "xywh=percent:10,25,50,5"},
            },
            anno_id="a2",
        ),
        anno(
            {
                "type": "SpecificResource",
                "source": {"id": f"{C}/p0", "type": "Canvas"},
                "selector": {"type": "SvgSelector", "value": svg_rect_path(100.4, 200.6, 50, 60)},
            },
            anno_id="a3",
        ),
        anno(
            {
                "type": "SpecificResource",
                "source": f"{C}/p0",
                "selector": [
                    {"type": "SvgSelector", "value": svg_rect_path(0, 0, 5, 5)},
                    {"type": "FragmentSelector", "value": "xywh=1,2,3,4"},
                ],
            },
            anno_id="a4",
        ),
    ]
    regions, problems = find_regions(book_v3({0: [page(items)]}))
    assert problems == []
    assert [r.xywh for r in regions] == [(10, 20, 30, 40), (100, 500, 500, 100), (100, 201, 50, 60), (1, 2, 3, 4)]
    assert [r.annotation_id for r in regions] == ["a1", "a2", "a3", "a4"]


@pytest.mark.parametrize(
    ("svg", "box"),
    [
        ('<svg><path d="M10,10 L50,10 L50,40 Z"/></svg>', (10, 10, 40, 30)),
        ('<svg><path d="m10 10 40 0 0 30 z"/></svg>', (10, 10, 40, 30)),
        ('<svg><path d="M10 10 H60 V70 H10 z"/></svg>', (10, 10, 50, 60)),
        ('<svg><path d="M0,0 C10,-5 20,25 30,20 S50,0 60,10 Q70,20 80,0 T100,0"/></svg>', (0, -5, 100, 30)),
        ('<svg><path d="M10,10 a5,5 0 0 1 10,0"/></svg>', (10, 10, 10, 0)),
        ("<svg><rect x='5' y='6' width='7' height='8'/></svg>", (5, 6, 7, 8)),
        ('<svg><circle cx="50" cy="50" r="10"/><ellipse cx="0" cy="0" rx="1" ry="2"/></svg>', (-1, -2, 61, 62)),
        ('<svg><polygon points="1,1 5,1 5,9"/></svg>', (1, 1, 4, 8)),
        ('<svg><line x1="3" y1="4" x2="-3" y2="8"/></svg>', (-3, 4, 6, 4)),
        ('<svg xmlns="http://www.w3.org/2000/svg"><g><path d="M1e1,2.5e1L3e1,4e1"/></g></svg>', (10, 25, 20, 15)),
        ('<svg><text x="1">no shape</text></svg>', None),
        ("not svg at all", None),
        ('<svg><path d="M"/><path d="L L L 1"/></svg>', None),
        (None, None),
    ],
)
def test_svg_bounding_box(svg: Any, box: Any) -> None:
    assert svg_bounding_box(svg) == box


def test_default_selection_skips_painting_and_regionless_annotations() -> None:
    items = [
        anno(f"{C}/p0#xywh=1,1,10,10", motivation="painting"),  # a transcription line painted as text
        anno(f"{C}/p0", motivation="commenting"),  # whole canvas: no region
        anno({"type": "SpecificResource", "source": f"{C}/p0", "selector": {"type": "PointSelector", "x": 5, "y": 5}}),
        anno(f"{C}/p0#xywh=2,2,20,20", motivation=["oa:commenting", "tagging"]),
        anno(f"{C}/p0#xywh=3,3,30,30", motivation=None),
    ]
    regions, problems = find_regions(book_v3({0: [page(items)]}))
    assert [r.xywh for r in regions] == [(2, 2, 20, 20), (3, 3, 30, 30)]
    messages = [p.message for p in problems]  # nothing skipped silently: each one is reported, with the reason
    assert sum("whole canvas" in m and "not an illustration box" in m for m in messages) == 2
    assert sum("not used, painting" in m for m in messages) == 1 and len(messages) == 3


def test_selector_by_motivation_tag_and_text() -> None:
    items = [
        anno(f"{C}/p0#xywh=0,0,10,10", "supplementing", {"type": "TextualBody", "value": "line 1 of the text"}),
        anno(
            f"{C}/p0#xywh=0,20,10,10", "tagging", {"type": "TextualBody", "value": "Illustration", "purpose": "tagging"}
        ),
        anno(
            f"{C}/p0#xywh=0,40,10,10",
            "commenting",
            [{"type": "TextualBody", "value": "<p>A <b>lion</b> miniature</p>", "format": "text/html"}],
        ),
        anno(f"{C}/p0#xywh=0,60,10,10", "tagging", {"type": "TextualBody", "value": "initial", "purpose": "tagging"}),
    ]
    manifest = book_v3({0: [page(items)]})

    def ys(selector: RegionSelector) -> list[int]:
        return [r.xywh[1] for r in find_regions(manifest, selector=selector)[0]]

    assert ys(RegionSelector()) == [0, 20, 40, 60]
    assert ys(RegionSelector.parse("motivation=oa:tagging")) == [20, 60]
    assert ys(RegionSelector.parse("tag=illustration")) == [20]
    assert ys(RegionSelector.parse("text=miniature")) == [40]
    assert ys(RegionSelector.parse("motivation=tagging,motivation=commenting,text=i")) == [20, 40, 60]
    regions = find_regions(manifest, selector=RegionSelector.parse("text=lion"))[0]
    assert regions[0].label == "p. 0: A lion miniature"


@pytest.mark.parametrize("spec", ["motivation", "colour=red", "tag="])
def test_bad_selector_specs(spec: str) -> None:
    with pytest.raises(InputError, match="region selector"):
        RegionSelector.parse(spec)


def test_order_is_canvas_then_annotation_order_never_spatial() -> None:
    """A page referenced from canvas 2 may target canvas 0: its regions go with canvas 0, after
    canvas 0's own; within a canvas the drawing order is kept even when it is bottom-up."""
    manifest = book_v3(
        {
            0: [
                page(
                    [anno(f"{C}/p0#xywh=0,900,10,10", anno_id="low"), anno(f"{C}/p0#xywh=0,100,10,10", anno_id="high")]
                )
            ],
            2: [
                page(
                    [anno(f"{C}/p2#xywh=5,5,5,5", anno_id="c2"), anno(f"{C}/p0#xywh=0,500,10,10", anno_id="late")],
                    "https://x/pg2",
                )
            ],
        }
    )
    regions, _ = find_regions(manifest)
    assert [r.annotation_id for r in regions] == ["low", "high", "late", "c2"]
    assert [r.index for r in regions] == [0, 1, 2, 3] and [r.canvas_index for r in regions] == [0, 0, 0, 2]


def test_regions_are_clipped_and_empty_ones_reported() -> None:
    items = [
        anno(f"{C}/p0#xywh=900,1900,500,500", anno_id="edge"),
        anno(f"{C}/p0#xywh=5000,5000,10,10", anno_id="outside"),
        anno("https://elsewhere.example/canvas/9#xywh=1,1,1,1", anno_id="foreign"),
    ]
    regions, problems = find_regions(book_v3({0: [page(items)]}))
    assert [r.xywh for r in regions] == [(900, 1900, 100, 100)]
    assert len(problems) == 2
    assert "outside" in problems[0].message and "empty region" in problems[0].message
    assert "not a canvas of this manifest" in problems[1].message


def test_v2_embedded_and_referenced_lists(static_server: Any, fetcher: Any) -> None:
    listed = {
        "@context": "http://iiif.io/api/presentation/2/context.json",
        "@id": f"{static_server.url}/regions/list-a.json",
        "@type": "sc:AnnotationList",
        "resources": [
            {
                "@id": "r1",
                "@type": "oa:Annotation",
                "motivation": "oa:tagging",
                "resource": {"@type": "oa:Tag", "chars": "illustration"},
                "on": f"{C}/p0#xywh=1,2,3,4",
            }
        ],
    }
    url = static_server.write_json("regions/list-a.json", listed)
    embedded = {
        "@type": "sc:AnnotationList",
        "resources": [
            {"@id": "r0", "@type": "oa:Annotation", "motivation": "oa:commenting", "on": f"{C}/p0#xywh=5,6,7,8"}
        ],
    }
    canvas = v2_canvas(
        f"{C}/p0",
        (100, 100),
        service=v2_service("https://x/iiif/p0"),
        other_content=[
            embedded,
            url,
            {"@id": url, "@type": "sc:AnnotationList"},
            f"{static_server.url}/regions/missing.json",
        ],
    )
    manifest = parse_manifest(v2_manifest("https://x/m", [canvas]), url="https://x/m")
    regions, problems = find_regions(manifest, fetcher=fetcher)
    assert [r.annotation_id for r in regions] == ["r0", "r1"]  # the list referenced twice counts once
    assert len(problems) == 1 and "missing.json: HTTP 404" in problems[0].message
    assert static_server.paths("/regions/list-a.json") == ["/regions/list-a.json"]
    regions, problems = find_regions(manifest, fetcher=None)
    assert [r.annotation_id for r in regions] == ["r0"] and "not fetched" in problems[0].message


def test_referenced_pages_are_followed_through_next(static_server: Any, fetcher: Any) -> None:
    second = static_server.write_json("regions/page-2.json", page([anno(f"{C}/p0#xywh=2,2,2,2", anno_id="b")]))
    first = page([anno(f"{C}/p0#xywh=1,1,1,1", anno_id="a")], f"{static_server.url}/regions/page-1.json")
    first["next"] = {"id": second, "type": "AnnotationPage"}
    url = static_server.write_json("regions/page-1.json", first)
    manifest = book_v3({0: [{"id": url, "type": "AnnotationPage"}]})
    regions, problems = find_regions(manifest, fetcher=fetcher)
    assert [r.annotation_id for r in regions] == ["a", "b"] and problems == []


def test_unsafe_annotation_list_urls_are_problems(fetcher: Any) -> None:
    manifest = book_v3(
        {
            0: [
                {"id": "file:///etc/passwd", "type": "AnnotationPage"},
                {"id": "http://169.254.169.254/latest/meta-data", "type": "AnnotationPage"},
            ]
        }
    )
    regions, problems = find_regions(manifest, fetcher=fetcher)
    assert regions == [] and len(problems) == 2
    assert "only http and https" in problems[0].message and "link-local" in problems[1].message


def test_given_regions() -> None:
    manifest = book_v3({})
    given = [
        {"canvas": f"{C}/p2", "xywh": "10,10,100,100", "label": "lion"},
        {"canvas": 0, "xywh": [1, 2, 3, 4]},
        (f"{C}/p0", "xywh=percent:0,0,50,50"),
    ]
    regions, problems = find_regions(manifest, given=given)
    assert [(r.canvas_index, r.xywh) for r in regions] == [
        (0, (1, 2, 3, 4)),
        (0, (0, 0, 500, 1000)),
        (2, (10, 10, 100, 100)),
    ]
    assert regions[2].label == "lion" and regions[0].label == "p. 0" and problems == []


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ([{"canvas": "https://nope/c", "xywh": "1,1,1,1"}], "is not a canvas of"),
        ([{"canvas": 7, "xywh": "1,1,1,1"}], "canvas index 7"),
        ([{"canvas": f"{C}/p0", "xywh": "1,1"}], "is not x,y,w,h"),
        ([{"canvas": f"{C}/p0", "xywh": "5000,5000,1,1"}], "is empty"),
        (["nonsense"], "expected"),
    ],
)
def test_bad_given_regions(given: Any, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        find_regions(book_v3({}), given=given)
    assert info.value.field is not None and info.value.field.startswith("regions[0]")


def test_whole_canvases() -> None:
    manifest = book_v3({}, n=2, size=(300, 400))
    regions, _ = find_regions(manifest, whole_canvases=True)
    assert [(r.canvas_id, r.xywh) for r in regions] == [(f"{C}/p0", (0, 0, 300, 400)), (f"{C}/p1", (0, 0, 300, 400))]
    with pytest.raises(InputError):
        find_regions(manifest, whole_canvases=True, given=[])


def test_region_round_trip() -> None:
    region = Region(3, f"{C}/p1", 1, (1, 2, 3, 4), "f. 2", "https://x/a")
    assert Region.from_dict(region.to_dict()) == region


def test_region_cap() -> None:
    from collation.core.errors import LimitError

    items = [anno(f"{C}/p0#xywh={k},0,1,1", anno_id=f"a{k}") for k in range(20)]
    with pytest.raises(LimitError, match="20 regions"):
        find_regions(book_v3({0: [page(items)]}), max_regions=10)

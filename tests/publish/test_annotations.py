"""Writing annotations: the viewer layer (3.0 pages, 2.1 lists), the canonical links, assessments
and derived manifests; every Presentation 3 document validates against the official schema."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from builders import v2_canvas, v2_manifest, v2_service, v3_canvas, v3_image_body, v3_manifest
from iiif_helpers import validator_root

from collation.core.correspondence import Correspondence, Side
from collation.core.errors import InputError
from collation.core.vocabulary import TRANSPOSITION_LABELS
from collation.iiif.manifests import parse_manifest
from collation.iiif.regions import Region
from collation.publish.canonical import build_assessment, build_link_collection
from collation.publish.parts import IMCOL_CONTEXT, UrlScheme
from collation.publish.viewer_layer import build_annotation_page, build_annotation_pages, build_derived_manifest

BASE = "https://collation.example.org/api/v1/collations/7f3c"
URLS = UrlScheme(base=BASE, viewer="{base}/view/{link}")
A = "https://library-a.example.org/iiif/ms1"
B = "https://library-b.example.org/iiif/ms2"


@pytest.fixture(scope="module")
def schema() -> jsonschema.protocols.Validator:
    path = validator_root() / "schema" / "iiif_3_0.json"
    if not path.is_file():
        pytest.skip(f"IIIF Presentation 3 schema not found at {path} (set COLLATION_IIIF_VALIDATOR)")
    document = json.loads(path.read_text())
    return jsonschema.Draft7Validator(document)


def valid(schema: Any, doc: dict[str, Any]) -> None:
    errors = sorted(schema.iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message[:300]}" for e in errors[:5])
    json.dumps(doc, allow_nan=False)  # plain, finite JSON


def manuscripts() -> list[tuple[Any, list[Region]]]:
    """A: Presentation 3, three canvases, the first with an annotation page of its own; B:
    Presentation 2.1, two canvases twice the size of their images."""
    canvases_a = []
    for k in range(3):
        body = v3_image_body(
            f"{A}/p{k}/full/max/0/default.jpg",
            (1000, 1500),
            [{"id": f"https://img.example.org/iiif3/a{k}", "type": "ImageService3", "profile": "level1"}],
        )
        annotations = [{"id": f"{A}/annotations/p{k}", "type": "AnnotationPage"}] if k == 0 else None
        canvases_a.append(
            v3_canvas(f"{A}/canvas/p{k}", (1000, 1500), body=body, annotations=annotations, label=f"p. {k}")
        )
    a = parse_manifest(v3_manifest(f"{A}/manifest.json", canvases_a, "MS A <script>alert(1)</script>"))
    canvases_b = [
        v2_canvas(
            f"{B}/canvas/f{k}v",
            (2000, 3000),
            service=v2_service(f"https://img.example.org/iiif2/b{k}"),
            image_size=(1000, 1500),
            label=f"f. {k}v",
        )
        for k in range(2)
    ]
    b = parse_manifest(v2_manifest(f"{B}/manifest", canvases_b, "MS B"))
    regions_a = [
        Region(0, f"{A}/canvas/p0", 0, (412, 980, 400, 300), "p. 0"),
        Region(1, f"{A}/canvas/p2", 2, (10, 20, 300, 400), "p. 2"),
    ]
    regions_b = [
        Region(0, f"{B}/canvas/f0v", 0, (220, 310, 1500, 1180), "f. 0v"),
        Region(1, f"{B}/canvas/f1v", 1, (100, 100, 800, 600), "f. 1v"),
    ]
    return [(a, regions_a), (b, regions_b)]


CORRESPONDENCES: list[Correspondence] = [
    Correspondence(
        source=Side(manuscript=0, position=0),
        target=Side(manuscript=1, position=1),
        S=0.87,
        N_S=1.91,
        P_S=2.34,
        rank=1,
        cycle_consistent=True,
        status="proposed",
    ),
    Correspondence(
        source=Side(manuscript=1, position=0),
        target=Side(manuscript=0, position=1),
        S=0.5,
        N_S=float("nan"),
        rank=2,
        cycle_consistent=False,
        status="confirmed",
        link_id="x9",
    ),
    Correspondence(
        source=Side(manuscript=1, position=1),
        target=Side(manuscript=0, position=0),
        S=0.86,
        rank=1,
        status="proposed",
    ),  # the first pair seen from the other side
]


def test_viewer_layer_presentation_3(schema: Any) -> None:
    pages = build_annotation_pages(0, manuscripts(), CORRESPONDENCES, urls=URLS, created="2026-05-01T10:12:00Z")
    assert sorted(pages) == [1, 3]  # canvas numbers are 1-based
    page = pages[1]
    valid(schema, page)
    assert page["id"] == f"{BASE}/pages/0/1" and page["type"] == "AnnotationPage"
    assert page["@context"] == [
        "https://collation.example.org/ns/imcol/1/context.json",
        "http://iiif.io/api/presentation/3/context.json",
    ]
    first = page["items"][0]
    assert first["id"] == f"{BASE}/display/0-a" and first["motivation"] == "commenting"
    assert first["target"]["source"]["id"] == f"{A}/canvas/p0"
    assert first["target"]["source"]["partOf"] == [{"id": f"{A}/manifest.json", "type": "Manifest"}]
    assert first["target"]["selector"]["value"] == "xywh=412,980,400,300"
    assert first["imcol:counterpart"] == f"{BASE}/display/0-b" and first["imcol:correspondence"] == f"{BASE}/links/0"
    assert (first["imcol:rawScore"], first["imcol:normalizedScore"], first["imcol:propagatedScore"]) == (
        0.87,
        1.91,
        2.34,
    )
    assert first["imcol:rank"] == 1 and first["imcol:mutualBest"] is True and first["imcol:status"] == "proposed"
    html = first["body"][0]["value"]
    assert first["body"][0]["format"] == "text/html"
    # in words, counted from 1; the scores are the imcol: properties above, not the text (issue 39, item 4)
    assert "MS B, f. 1v (illustration 2)" in html and "0.87" not in html and "normalized" not in html
    assert "each other’s best match · proposed" in html and f'href="{BASE}/view/0"' in html
    # B's region on a canvas twice its image: the Image API link is in image pixels
    assert 'href="https://img.example.org/iiif2/b1/50,50,400,300/400,/0/default.jpg"' in html
    # the NaN score is left out, not written as invalid JSON
    other = pages[3]["items"][0]
    assert "imcol:normalizedScore" not in other and other["id"] == f"{BASE}/display/x9-b"
    assert other["imcol:status"] == "confirmed"


def test_labels_are_escaped_in_html() -> None:
    pages = build_annotation_pages(1, manuscripts(), CORRESPONDENCES, urls=URLS)
    html = pages[2]["resources"][0]["resource"][0]["chars"]
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_viewer_layer_presentation_2() -> None:
    pages = build_annotation_pages(1, manuscripts(), CORRESPONDENCES, urls=URLS)
    assert sorted(pages) == [1, 2]
    page = pages[2]
    assert page["@type"] == "sc:AnnotationList" and page["@id"] == f"{BASE}/pages/1/2"
    assert page["@context"] == "http://iiif.io/api/presentation/2/context.json"
    annotation = page["resources"][0]
    assert annotation["@type"] == "oa:Annotation" and annotation["motivation"] == "oa:commenting"
    assert annotation["on"]["full"] == f"{B}/canvas/f1v"
    assert annotation["on"]["selector"] == {"@type": "oa:FragmentSelector", "value": "xywh=100,100,800,600"}
    assert annotation["on"]["within"] == {"@id": f"{B}/manifest", "@type": "sc:Manifest"}
    assert annotation["resource"][0]["format"] == "text/html" and "MS A" in annotation["resource"][0]["chars"]
    assert len(page["resources"]) == 2  # the pair from both correspondences that name it


def test_single_page_and_empty_page(schema: Any) -> None:
    empty = build_annotation_page(0, 2, manuscripts(), CORRESPONDENCES, urls=URLS)
    assert empty["items"] == []
    valid(schema, empty)
    with pytest.raises(InputError, match="canvas number 4"):
        build_annotation_page(0, 4, manuscripts(), CORRESPONDENCES, urls=URLS)


def test_derived_manifest_presentation_3(schema: Any) -> None:
    data = manuscripts()
    doc = build_derived_manifest(0, data, CORRESPONDENCES, urls=URLS)
    valid(schema, doc)
    assert doc["id"] == f"{BASE}/manifests/0"
    assert doc["label"] == {"en": ["MS A <script>alert(1)</script> (image collation)"]}
    assert [c["id"] for c in doc["items"]] == [c.id for c in data[0][0].canvases]
    assert doc["items"][0]["annotations"] == [
        {"id": f"{A}/annotations/p0", "type": "AnnotationPage"},  # the library's own page is kept
        {"id": f"{BASE}/pages/0/1", "type": "AnnotationPage"},
    ]
    assert "annotations" not in doc["items"][1]
    assert doc["items"][2]["annotations"] == [{"id": f"{BASE}/pages/0/3", "type": "AnnotationPage"}]
    assert data[0][0].raw["id"] == f"{A}/manifest.json", "the input manifest is not modified"


def test_derived_manifests_name_each_canvas_s_filtered_container_in_see_also(schema: Any) -> None:
    urls = UrlScheme(base=BASE, canvas_links=lambda canvas, **_: f"{BASE}/container/?target={canvas}")
    data = manuscripts()
    v3 = build_derived_manifest(0, data, CORRESPONDENCES, urls=urls)
    valid(schema, v3)
    assert v3["items"][0]["seeAlso"] == [
        {
            "id": f"{BASE}/container/?target={A}/canvas/p0",
            "type": "Dataset",
            "format": "application/ld+json",
            "profile": "http://www.w3.org/ns/anno.jsonld",
            "label": {"en": ["Image collation: the links that touch this canvas"]},
        }
    ]
    assert "seeAlso" not in v3["items"][1]  # no correspondence there
    v2 = build_derived_manifest(1, data, CORRESPONDENCES, urls=urls)
    assert v2["sequences"][0]["canvases"][1]["seeAlso"][0]["@id"] == f"{BASE}/container/?target={B}/canvas/f1v"


def test_derived_manifest_presentation_2() -> None:
    data = manuscripts()
    doc = build_derived_manifest(1, data, CORRESPONDENCES, urls=URLS, label_suffix=" [collated]")
    assert doc["@id"] == f"{BASE}/manifests/1" and doc["label"] == "MS B [collated]"
    assert doc["@context"] == "http://iiif.io/api/presentation/2/context.json"
    canvases = doc["sequences"][0]["canvases"]
    assert [c["@id"] for c in canvases] == [f"{B}/canvas/f0v", f"{B}/canvas/f1v"]
    assert canvases[1]["otherContent"] == [{"@id": f"{BASE}/pages/1/2", "@type": "sc:AnnotationList"}]


def test_canonical_links(schema: Any) -> None:
    collection, pages = build_link_collection(
        manuscripts(), CORRESPONDENCES, urls=URLS, page_size=1, method="s_trans+norm+prop(std=5,alpha=0.25)"
    )
    valid(schema, collection)
    for page in pages:
        valid(schema, page)
    assert collection["total"] == 2 and len(pages) == 2  # the reversed duplicate is stored once
    assert collection["first"] == {"id": f"{BASE}/annotations?page=1", "type": "AnnotationPage"}
    assert collection["last"]["id"] == f"{BASE}/annotations?page=2"
    assert pages[0]["next"]["id"] == pages[1]["id"] and pages[1]["prev"]["id"] == pages[0]["id"]
    assert pages[0]["partOf"][0]["id"] == f"{BASE}/annotations"
    link = pages[0]["items"][0]
    assert link["motivation"] == "linking" and link["id"] == f"{BASE}/links/0"
    assert link["target"]["source"]["id"] == f"{A}/canvas/p0" and link["body"]["source"]["id"] == f"{B}/canvas/f1v"
    assert link["creator"]["type"] == "Software" and link["imcol:method"].startswith("s_trans")
    # the second link was given B → A; stored with the canonical order (manifest id A < B)
    second = pages[1]["items"][0]
    assert second["target"]["source"]["id"] == f"{A}/canvas/p2" and second["body"]["source"]["id"] == f"{B}/canvas/f0v"


def test_transposed_copies_get_a_body_that_says_so(schema: Any) -> None:
    turned = [
        replace(CORRESPONDENCES[0], transposition="mirror"),
        replace(CORRESPONDENCES[1], transposition="rot90"),
        replace(CORRESPONDENCES[2], transposition="mirror"),
    ]
    _, pages = build_link_collection(manuscripts(), turned, urls=URLS)
    valid(schema, pages[0])
    first, second = pages[0]["items"]
    assert first["body"][0]["source"]["id"] == f"{B}/canvas/f1v"  # region B first, then the words
    assert first["body"][1] == {"type": "TextualBody", "purpose": "tagging", "value": "mirrored copy"}
    assert second["body"][1]["value"] == "turned copy"
    # the viewer layer: a tagging body beside the HTML one (3.0), an oa:Tag (2.1), and the words in the HTML
    page = build_annotation_pages(0, manuscripts(), turned, urls=URLS)[1]
    valid(schema, page)
    body = page["items"][0]["body"]
    assert body[1] == {"type": "TextualBody", "purpose": "tagging", "value": "mirrored copy"}
    assert "mirrored copy" in body[0]["value"]
    listing = build_annotation_pages(1, manuscripts(), turned, urls=URLS)[1]
    assert listing["resources"][0]["resource"][1] == {"@type": "oa:Tag", "chars": "turned copy"}
    flipped = build_annotation_pages(0, manuscripts(), [replace(CORRESPONDENCES[0], transposition="flip")], urls=URLS)
    assert flipped[1]["items"][0]["body"][1]["value"] == "vertically mirrored copy"
    # as drawn (and without the field, as in plain collations): no body is added
    for same in ([replace(CORRESPONDENCES[0], transposition="identity")], CORRESPONDENCES[:1]):
        _, plain = build_link_collection(manuscripts(), same, urls=URLS)
        assert plain[0]["items"][0]["body"]["type"] == "SpecificResource"
        item = build_annotation_pages(0, manuscripts(), same, urls=URLS)[1]["items"][0]
        assert len(item["body"]) == 1 and "copy" not in item["body"][0]["value"]
    with pytest.raises(InputError) as info:
        build_link_collection(manuscripts(), [replace(CORRESPONDENCES[0], transposition="rot40")], urls=URLS)
    assert info.value.field == "correspondences[0].transposition"


def test_transposition_labels_cover_the_engine_s_names() -> None:
    from collation.core.vocabulary import TRANSPOSITION_NAMES

    assert tuple(TRANSPOSITION_LABELS) == TRANSPOSITION_NAMES and TRANSPOSITION_LABELS["identity"] is None


def test_empty_collection_is_valid(schema: Any) -> None:
    collection, pages = build_link_collection(manuscripts(), [], urls=URLS)
    valid(schema, collection)
    assert pages == [] and "total" not in collection


def test_assessment(schema: Any) -> None:
    annotation = build_assessment(
        f"{BASE}/links/0",
        "exact",
        assessor={"id": "https://people.example.org/experts/1", "type": "Person"},
        id=f"{BASE}/assessments/0-1",
        created="2026-05-02T09:00:00Z",
        note="same iconography",
        with_context=True,
    )
    valid(schema, annotation)
    assert annotation["motivation"] == "assessing" and annotation["target"] == f"{BASE}/links/0"
    assert annotation["body"][0] == {"type": "TextualBody", "purpose": "assessing", "value": "exact"}
    with pytest.raises(InputError, match="verdict"):
        build_assessment("x", "maybe", assessor={"type": "Person"}, id="y")


def test_extension_terms_are_all_defined() -> None:
    used: set[str] = set()
    for m in (0, 1):
        for page in build_annotation_pages(m, manuscripts(), CORRESPONDENCES, urls=URLS).values():
            for item in page.get("items", page.get("resources", [])):
                used |= {k for k in item if k.startswith("imcol:")}
    _, link_pages = build_link_collection(manuscripts(), CORRESPONDENCES, urls=URLS, method="m")
    used |= {k for k in link_pages[0]["items"][0] if k.startswith("imcol:")}
    assert used <= set(IMCOL_CONTEXT["@context"])
    assert {
        "imcol:rawScore",
        "imcol:normalizedScore",
        "imcol:propagatedScore",
        "imcol:rank",
        "imcol:mutualBest",
        "imcol:status",
        "imcol:method",
    } <= used


def test_url_scheme_accepts_callables() -> None:
    urls = UrlScheme(
        base=BASE, page=lambda base, manuscript, canvas_number, **_: f"{base}/p/{manuscript}-{canvas_number}"
    )
    pages = build_annotation_pages(0, manuscripts(), CORRESPONDENCES, urls=urls)
    assert pages[1]["id"] == f"{BASE}/p/0-1"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"source": Side(manuscript=5, position=0)}, "correspondences[0].source.manuscript"),
        ({"target": Side(manuscript=1, position=9)}, "correspondences[0].target.position"),
        ({"target": Side(manuscript=1, position=-1)}, "correspondences[0].target.position"),
        ({"target": Side(manuscript=1, position=1, region=0)}, "correspondences[0].target.region"),
        ({"source": "A0"}, "correspondences[0].source"),
        ({"status": "maybe"}, "correspondences[0].status"),
    ],
)
def test_bad_correspondences(change: dict[str, Any], field: str) -> None:
    bad = [replace(CORRESPONDENCES[0], **change)]
    with pytest.raises(InputError) as info:
        build_annotation_pages(0, manuscripts(), bad, urls=URLS)
    assert info.value.field == field


def test_correspondences_are_typed() -> None:
    """A dict of the old shape is refused, naming its place in the list."""
    old = {"source": {"manuscript": 0, "index": 0}, "target": {"manuscript": 1, "index": 1}, "status": "proposed"}
    with pytest.raises(InputError) as info:
        build_link_collection(manuscripts(), [CORRESPONDENCES[0], old], urls=URLS)  # type: ignore[list-item]
    assert info.value.field == "correspondences[1]"


def test_a_region_index_that_agrees_with_the_position_is_accepted() -> None:
    """Region 1 of B is at position 1: naming both gives the same annotations as the position alone."""
    named = [replace(CORRESPONDENCES[0], source=Side(0, 0, region=0), target=Side(1, 1, region=1))]
    assert build_link_collection(manuscripts(), named, urls=URLS) == build_link_collection(
        manuscripts(), CORRESPONDENCES[:1], urls=URLS
    )


def test_documented_in_docs() -> None:
    doc = Path(__file__).resolve().parents[2] / "docs" / "annotations.md"
    text = doc.read_text()
    for term in ("rawScore", "normalizedScore", "propagatedScore", "rank", "mutualBest", "status", "method"):
        assert f"imcol:{term}" in text

"""The viewer layer as Presentation 2.1 AnnotationLists beside the Presentation 3 pages: the same
annotations (ids, regions, text) in the form of the specification's published example list of a region
(``tests/iiif/spec``) and with the properties its requirement tables (Appendix B) mark required."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from test_annotations import CORRESPONDENCES, URLS, manuscripts

from collation.publish.viewer_layer import build_annotation_page

SPEC = Path(__file__).parent / "spec"
CONTEXT = "http://iiif.io/api/presentation/2/context.json"


def required_2_1(doc: dict[str, Any]) -> list[str]:
    """What a 2.1 AnnotationList lacks of the specification: its ``@context``, the ``@id`` and ``@type``
    Appendix B requires of the list, the ``@type`` it requires of each annotation, and the
    ``motivation``, ``resource`` and ``on`` every annotation of a list has (its 5.5 and 6)."""
    missing = [k for k in ("@context", "@id", "@type", "resources") if k not in doc]
    if doc.get("@type") != "sc:AnnotationList" or doc.get("@context") != CONTEXT:
        missing.append("an sc:AnnotationList in the 2 context")
    for k, annotation in enumerate(doc.get("resources", [])):
        if annotation.get("@type") != "oa:Annotation":
            missing.append(f"resources[{k}].@type")
        missing += [f"resources[{k}].{p}" for p in ("motivation", "resource", "on") if p not in annotation]
    return missing


def region_of(on: Any) -> tuple[str, str]:
    """(canvas id, fragment) of an ``on``: a SpecificResource whose ``full`` is the canvas (its id, or
    an object with ``@id`` as the example writes it) and whose FragmentSelector holds ``xywh=``."""
    assert on["@type"] == "oa:SpecificResource" and on["selector"]["@type"] == "oa:FragmentSelector"
    full = on["full"]
    return (full["@id"] if isinstance(full, dict) else full), on["selector"]["value"]


def test_the_specification_s_example_passes_the_same_checks() -> None:
    for path in sorted(SPEC.glob("presentation-2.1-list-*.json")):
        assert required_2_1(json.loads(path.read_text())) == [], path.name
    example = json.loads((SPEC / "presentation-2.1-list-61.json").read_text())
    assert region_of(example["resources"][0]["on"]) == (
        "http://iiif.io/api/presentation/2.1/example/fixtures/canvas/61/c1.json",
        "xywh=225,70,750,150",
    )


def test_the_lists_of_a_presentation_3_manuscript_match_its_pages_in_2_1_form() -> None:
    data = manuscripts()  # manuscript 0 is a Presentation 3 manifest
    page = build_annotation_page(0, 1, data, CORRESPONDENCES, urls=URLS)
    listed = build_annotation_page(0, 1, data, CORRESPONDENCES, urls=URLS, version=2)
    assert page["type"] == "AnnotationPage" and required_2_1(listed) == []
    assert listed["@id"] == f"{URLS.base}/lists/0/1"
    assert [a["@id"] for a in listed["resources"]] == [a["id"] for a in page["items"]] != []
    for v2, v3 in zip(listed["resources"], page["items"], strict=True):
        # Mirador reads full as a string (mirador: AnnotationResource.targetId): the id, not an object
        assert region_of(v2["on"]) == (v3["target"]["source"]["id"], v3["target"]["selector"]["value"])
        assert isinstance(v2["on"]["full"], str) and v2["motivation"] == "oa:commenting"
        assert v2["resource"][0] == {"@type": "dctypes:Text", "format": "text/html", "chars": v3["body"][0]["value"]}
        assert v2["imcol:counterpart"] == v3["imcol:counterpart"]
        assert v2["on"]["within"] == {"@id": data[0][0].id, "@type": "sc:Manifest"}


def test_a_presentation_2_manuscript_s_list_holds_its_page() -> None:
    data = manuscripts()  # manuscript 1 is a Presentation 2.1 manifest
    page = build_annotation_page(1, 2, data, CORRESPONDENCES, urls=URLS)
    listed = build_annotation_page(1, 2, data, CORRESPONDENCES, urls=URLS, version=2)
    assert page["@id"] == f"{URLS.base}/pages/1/2" and listed["@id"] == f"{URLS.base}/lists/1/2"
    assert listed["resources"] == page["resources"] and required_2_1(listed) == []

"""``GET /api/v1/inspect``: the service's dry run, end to end against the real iipsrv of the test
suite, and its problems (each naming the field at fault). Responses are checked against
``openapi.yaml`` by the ``api`` fixture."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pytest
from builders import physiologus_v2, physiologus_v3
from PIL import Image
from test_api import assert_problem


def inspect(api: Any, **query: Any) -> Any:
    return api.get(f"/api/v1/inspect?{urlencode(query)}")


@pytest.mark.slow
def test_inspect_a_v2_manifest_behind_iipsrv(api: Any, iipsrv: Any, site: Any) -> None:
    """Canvases twice their images, regions from annotation lists: what a collation would use."""
    boxes = iipsrv.boxes["P2"][:3]
    doc, regions = physiologus_v2(
        f"{site.url}/inspect/p2/manifest.json", "P2", boxes, iipsrv, canvas_scale=2, site=site
    )
    url = site.write_json("inspect/p2/manifest.json", doc)
    r = inspect(api, manifest=url)
    assert r.status_code == 200, r.get_json()
    report = r.get_json()
    assert report["manifest"] == {"id": url, "url": url, "label": "P2", "version": 2}
    assert report["summary"] == {
        "canvases": 3,
        "canvases_with_image": 3,
        "regions": 3,
        "problems": 0,
        "info_read": len({b.folio for b in boxes}),
    }
    assert [r["xywh"] for r in report["regions"]] == [region["xywh"] for region in regions]
    assert [r["annotation_id"] for r in report["regions"]] == [
        f"{site.url}/inspect/p2/annotation/{k}" for k in range(3)
    ]
    canvas = report["canvases"][0]
    image = canvas["images"][0]
    with Image.open(boxes[0].folio) as folio:
        assert (canvas["width"], canvas["height"]) == (2 * folio.width, 2 * folio.height)
        assert (image["info"]["width"], image["info"]["height"]) == folio.size
    assert image["service_id"] == f"{iipsrv.base}/{iipsrv.identifiers[boxes[0].folio]}"
    assert image["image_api_version"] == 2 and image["info"]["level"] == 1
    assert image["info"]["tiles"][0]["width"] == 256 and image["info"]["sizes"]


@pytest.mark.slow
def test_inspect_options(api: Any, iipsrv: Any, site: Any) -> None:
    boxes = iipsrv.boxes["P3"][:2]
    doc, _ = physiologus_v3(f"{site.url}/inspect/p3/manifest.json", "P3", boxes, iipsrv, tagging=True)
    url = site.write_json("inspect/p3/manifest.json", doc)
    report = inspect(api, manifest=url, max_info=0, whole_canvases="true").get_json()
    assert report["manifest"]["version"] == 3 and report["summary"]["info_read"] == 0
    assert [r["annotation_id"] for r in report["regions"]] == [None, None]  # whole canvases
    assert report["canvases"][0]["images"][0]["info"] is None
    report = inspect(api, manifest=url, max_info=1, selector="motivation=commenting").get_json()
    assert report["summary"]["info_read"] == 1
    # No annotation is selected: the illustrations are detected instead, and the report says both.
    assert report["regions_source"] == "detected" and report["regions_note"].startswith("no region annotations")
    assert report["problems"]
    report = inspect(api, manifest=url, selector="motivation=tagging,tag=illustration").get_json()
    assert [r["xywh"] for r in report["regions"]] == [list(b.xywh) for b in boxes]


def test_inspect_problems_name_the_field(api: Any, site: Any) -> None:
    assert_problem(api.get("/api/v1/inspect"), 400, "manifest")
    assert_problem(inspect(api, manifest="file:///etc/passwd"), 400, "manifest")
    assert_problem(inspect(api, manifest="http://10.1.2.3/manifest.json"), 400, "manifest")  # address policy
    assert_problem(inspect(api, manifest=f"{site.url}/no/such/manifest.json"), 502, "manifest")
    html = site.root / "inspect" / "page.html"
    html.parent.mkdir(parents=True, exist_ok=True)
    html.write_text("<!doctype html><html><body>not a manifest</body></html>")
    assert_problem(inspect(api, manifest=f"{site.url}/inspect/page.html"), 422, "manifest")
    url = site.write_json(
        "inspect/range.json",
        {"@context": "http://iiif.io/api/presentation/3/context.json", "id": "x", "type": "Range", "items": []},
    )
    assert_problem(inspect(api, manifest=url), 422, "manifest")
    assert_problem(inspect(api, manifest=url, selector="colour=red"), 400, "selector")
    assert_problem(inspect(api, manifest=url, selector="tag=x", whole_canvases="true"), 400, "whole_canvases")
    assert_problem(inspect(api, manifest=url, max_info=1000), 400, "max_info")
    assert_problem(inspect(api, manifest=url, colour="red"), 400, "colour")


@pytest.mark.parametrize("version", [2, 3])
def test_inspect_a_collection_lists_its_manifests(api: Any, site: Any, version: int) -> None:
    """A IIIF Collection's address gives its manifests, in order, and its nested collections apart."""
    base = f"{site.url}/collection{version}"
    if version == 3:
        doc = {
            "@context": "http://iiif.io/api/presentation/3/context.json",
            "id": f"{base}/top.json",
            "type": "Collection",
            "label": {"en": ["Physiologus witnesses"]},
            "items": [
                {"id": f"{base}/P2.json", "type": "Manifest", "label": {"en": ["Ott. gr. 354"]}},
                {"id": f"{base}/sub.json", "type": "Collection", "label": {"none": ["More"]}},
                {"id": f"{base}/P3.json", "type": "Manifest", "label": {"en": ["Marc. gr. IV.35"]}},
                {"type": "Manifest", "label": {"en": ["no id: left out"]}},
            ],
        }
    else:
        doc = {
            "@context": "http://iiif.io/api/presentation/2/context.json",
            "@id": f"{base}/top.json",
            "@type": "sc:Collection",
            "label": "Physiologus witnesses",
            "manifests": [
                {"@id": f"{base}/P2.json", "@type": "sc:Manifest", "label": "Ott. gr. 354"},
                {"@id": f"{base}/P3.json", "@type": "sc:Manifest", "label": "Marc. gr. IV.35"},
            ],
            "collections": [{"@id": f"{base}/sub.json", "@type": "sc:Collection", "label": "More"}],
        }
    r = inspect(api, manifest=site.write_json(f"collection{version}/top.json", doc))
    assert r.status_code == 200, r.get_json()
    got = r.get_json()
    assert got["collection"]["label"] == "Physiologus witnesses" and got["collection"]["version"] == version
    assert got["manifests"] == [
        {"id": f"{base}/P2.json", "label": "Ott. gr. 354"},
        {"id": f"{base}/P3.json", "label": "Marc. gr. IV.35"},
    ]
    assert got["collections"] == [{"id": f"{base}/sub.json", "label": "More"}]
    assert got["summary"] == {"manifests": 2, "collections": 1, "listed": 2}

"""The viewer-only manifests and pages for Mirador 3.4.3 / 4.0.0 (mirador#4533): boxes divided by the
canvas-to-image factor, everything else as in the derived documents, which stay untouched."""

from __future__ import annotations

from typing import Any

from test_viewer_routes import CID, finished_store, page_config, viewer_client  # noqa: F401 (fixtures)

from collation.iiif.manifests import parse_manifest
from collation.iiif.model import Canvas, ImageSource
from collation.viewer.imagespace import mirador_factor, scale_fragments

API = "http://collation.test/api/v1"


def test_viewer_manifest_points_to_the_viewer_pages(viewer_client: Any) -> None:  # noqa: F811
    derived = viewer_client.get(f"/api/v1/collations/{CID}/manifests/0").get_json()
    variant = viewer_client.get(f"/api/v1/collations/{CID}/view/manifests/0")
    assert variant.status_code == 200 and variant.mimetype == "application/ld+json"
    doc = variant.get_json()
    assert doc["id"] == f"{API}/collations/{CID}/view/manifests/0"
    refs = [ref["id"] for canvas in doc["items"] for ref in canvas.get("annotations", [])]
    assert refs == [f"{API}/collations/{CID}/view/pages/0/{n}" for n in (1, 2)]
    # canvases (ids, sizes, images) as in the derived manifest, which keeps its own pages
    assert [(c["id"], c["width"], c["items"]) for c in doc["items"]] == [
        (c["id"], c["width"], c["items"]) for c in derived["items"]
    ]
    assert [ref["id"] for c in derived["items"] for ref in c["annotations"]] == [
        f"{API}/collations/{CID}/pages/0/{n}" for n in (1, 2)
    ]
    v2 = viewer_client.get(f"/api/v1/collations/{CID}/view/manifests/1").get_json()
    refs = [ref["@id"] for c in v2["sequences"][0]["canvases"] for ref in c.get("otherContent", [])]
    assert refs and all(ref.startswith(f"{API}/collations/{CID}/view/pages/1/") for ref in refs)


def test_viewer_page_halves_the_boxes_of_a_canvas_twice_its_image(viewer_client: Any) -> None:  # noqa: F811
    """A's canvases are 1000 x 800, painted by 500 x 400 images (info.json unreachable here: the
    declared size counts); B's canvases are their images, so its boxes do not move."""
    page = viewer_client.get(f"/api/v1/collations/{CID}/pages/0/2").get_json()
    variant = viewer_client.get(f"/api/v1/collations/{CID}/view/pages/0/2").get_json()
    assert variant["id"] == f"{API}/collations/{CID}/view/pages/0/2"
    assert [a["id"] for a in variant["items"]] == [a["id"] for a in page["items"]]
    originals = [a["target"]["selector"]["value"] for a in page["items"]]
    assert "xywh=100,450,400,300" in originals
    assert [a["imcol:canvasFragment"] for a in variant["items"]] == originals
    halves = {"xywh=100,450,400,300": "xywh=50,225,200,150", "xywh=100,50,400,300": "xywh=50,25,200,150"}
    assert [a["target"]["selector"]["value"] for a in variant["items"]] == [halves[v] for v in originals]
    b_page = viewer_client.get(f"/api/v1/collations/{CID}/pages/1/1").get_json()
    b_variant = viewer_client.get(f"/api/v1/collations/{CID}/view/pages/1/1").get_json()
    assert [a["on"]["selector"]["value"] for a in b_variant["resources"]] == [
        a["on"]["selector"]["value"] for a in b_page["resources"]
    ]
    assert viewer_client.get(f"/api/v1/collations/{CID}/view/pages/0/9").status_code == 404


def test_view_json_and_page_name_the_variant(viewer_client: Any) -> None:  # noqa: F811
    doc = viewer_client.get(f"/api/v1/collations/{CID}/view.json").get_json()
    assert [m["viewer_manifest"] for m in doc["manuscripts"]] == [
        f"{API}/collations/{CID}/view/manifests/{m}" for m in (0, 1)
    ]
    for query in ("", "?mirador=3"):
        config = page_config(viewer_client.get(f"/api/v1/collations/{CID}/view{query}").get_data(as_text=True))
        assert config["image_space_targets"] is True


def test_mirador_factor_follows_how_openseadragon_fits_the_image() -> None:
    def canvas(width: int, height: int, image: ImageSource | None) -> Canvas:
        return Canvas(id="c", index=0, label="", width=width, height=height, image=image)

    assert mirador_factor(canvas(2000, 3000, ImageSource(width=1000, height=1500))) == 0.5
    assert mirador_factor(canvas(2000, 3000, ImageSource(width=1000, height=1000))) == 0.5  # fitted by width
    assert mirador_factor(canvas(3000, 2000, ImageSource(width=1000, height=1000))) == 0.5  # fitted by height
    assert mirador_factor(canvas(2000, 3000, ImageSource(width=500, height=500, target=(0, 0, 1000, 1000)))) == 0.5
    assert mirador_factor(canvas(2000, 3000, ImageSource())) is None
    assert mirador_factor(canvas(2000, 3000, None)) is None
    page = {"items": [{"target": {"selector": {"value": "xywh=10,20,30,41"}}}, {"target": "c#xywh=1,2,3,4"}]}
    assert scale_fragments(page, 0.5)["items"][0]["target"]["selector"]["value"] == "xywh=5,10,15,20"
    assert page["items"][1] == {"target": "c#xywh=1,2,3,4"}  # only the selectors the builder writes


def test_parse_manifest_keeps_declared_image_size() -> None:
    from test_viewer_routes import manifest_a

    image = parse_manifest(manifest_a(), url="http://lib.test/a/manifest").canvases[0].image
    assert (image.width, image.height) == (500, 400)


def test_the_viewer_variant_leaves_out_the_source_s_own_region_annotations() -> None:
    """The source's "illustration" list targets canvas units: in Mirador 3.4.3/4.0.0 it would be drawn at
    twice its place on a canvas twice its image, so the variant keeps only the collation's (scaled) pages."""
    from collation.viewer.imagespace import point_to_viewer_pages

    canonical = f"{API}/collations/{CID}/pages/0/"
    library = "https://library.example/iiif/list/f1.json"
    doc = {
        "@context": "http://iiif.io/api/presentation/2/context.json",
        "sequences": [
            {
                "canvases": [
                    {"@id": "c1", "otherContent": [{"@id": library}, {"@id": f"{canonical}1"}]},
                    {"@id": "c2", "otherContent": [{"@id": f"{canonical}2"}]},
                ]
            }
        ],
    }
    point_to_viewer_pages(doc, canonical, lambda n: f"{API}/collations/{CID}/view/pages/0/{n}")
    c1, c2 = doc["sequences"][0]["canvases"]
    assert c1["otherContent"] == [{"@id": f"{API}/collations/{CID}/view/pages/0/1"}]
    assert c1["imcol:sourceAnnotations"] == [library]
    assert (
        c2["otherContent"] == [{"@id": f"{API}/collations/{CID}/view/pages/0/2"}]
        and "imcol:sourceAnnotations" not in c2
    )

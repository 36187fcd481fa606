"""The viewer's routes against a finished collation written straight into a data store (no Redis, no
workers): the page, its JSON, thumbnails in image coordinates, and the matrix image with its marks."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import (
    finished_collation,
    prepared_manuscript,
    v2_canvas,
    v2_manifest,
    v2_service,
    v3_canvas,
    v3_image_body,
    v3_manifest,
    v3_service2,
)
from PIL import Image

from collation.app import create_app
from collation.core.options import CollationOptions
from collation.core.settings import Settings
from collation.core.vocabulary import CollationStatus
from collation.service.state import service_state
from collation.store.datastore import DataStore
from collation.store.folder import FolderStore
from collation.store.records import CollationRequest, new_record
from collation.viewer import pages as viewer_routes
from collation.viewer.matrix import COLORS, layout

CID = "0123456789abcdef"
SERVICE_A = "http://images.test/iiif/a"
SERVICE_B = "http://images.test/iiif/b"


def manifest_a() -> dict[str, Any]:
    """Presentation 3, two canvases of 1000 x 800 painted by 500 x 400 images (canvas = 2 x image)."""
    canvases = [
        v3_canvas(
            f"http://lib.test/a/canvas/{f}",
            (1000, 800),
            body=v3_image_body(
                f"{SERVICE_A}{f}/full/max/0/default.jpg", (500, 400), v3_service2(f"{SERVICE_A}{f}", keywords="")
            ),
            label=f"f. {f + 1}r",
        )
        for f in range(2)
    ]
    return v3_manifest("http://lib.test/a/manifest", canvases, "Codex A")


def manifest_b() -> dict[str, Any]:
    """Presentation 2.1, one canvas per region, canvas = image = 600 x 900."""
    canvases = [
        v2_canvas(
            f"http://lib.test/b/canvas/{f}",
            (600, 900),
            service=v2_service(f"{SERVICE_B}{f}"),
            image_url=f"{SERVICE_B}{f}/full/full/0/default.jpg",
            image_size=(600, 900),
            label=f"p. {f}",
        )
        for f in range(5)
    ]
    return v2_manifest("http://lib.test/b/manifest", canvases, "Codex B")


def region(index: int, canvas: str, canvas_index: int, xywh: list[int]) -> dict[str, Any]:
    return {
        "index": index,
        "canvas_id": canvas,
        "canvas_index": canvas_index,
        "xywh": xywh,
        "label": "",
        "annotation_id": None,
        "digest": f"{index:064d}",
    }


def write_codices_a_b(root: Path, status: str = "finished") -> DataStore:
    """A collation of A (4 regions, two per canvas) and B (regions 0, 1, 3, 4: region 2 was unreadable),
    whose scores put A's k-th region with B's k-th readable one."""
    urls = ["http://lib.test/a/manifest", "http://lib.test/b/manifest"]
    if status != "finished":
        finished_store = FolderStore(root)
        request = CollationRequest.from_json({"manifests": urls, "regions": {}, "options": {}, "callback_url": None})
        settings = Settings.from_env({}, backbone="efficientnet-lite0", chunk_pairs=8)
        record = new_record(CID, request, CollationOptions(), settings)
        record.status = CollationStatus(status)
        finished_store.create_collation(record)
        return finished_store
    regions_a = [
        region(k, f"http://lib.test/a/canvas/{k // 2}", k // 2, [100, 50 + 400 * (k % 2), 400, 300]) for k in range(4)
    ]
    regions_b = [region(k, f"http://lib.test/b/canvas/{k}", k, [60, 90, 300, 450]) for k in (0, 1, 3, 4)]
    s = np.full((4, 4), 0.1) + np.eye(4) * 0.8
    s[3, 2] = 0.85  # A3 is torn between B's positions 2 and 3
    manuscripts = [
        (prepared_manuscript(0, regions_a, manifest=urls[0]), manifest_a()),
        (prepared_manuscript(1, regions_b, manifest=urls[1]), manifest_b()),
    ]
    return finished_collation(root, manuscripts, {(0, 1): s}, cid=CID)


@pytest.fixture
def finished_store(tmp_path: Path) -> DataStore:
    return write_codices_a_b(tmp_path / "data")


@pytest.fixture
def viewer_client(finished_store: DataStore) -> Any:
    app = create_app(
        Settings.from_env({}, data_dir=finished_store.root, public_url="http://collation.test"), TESTING=True
    )
    yield app.test_client()
    service_state(app).close()


def page_config(html: str) -> dict[str, Any]:
    start = html.index('<script id="config" type="application/json">') + len(
        '<script id="config" type="application/json">'
    )
    return json.loads(html[start : html.index("</script>", start)])


@pytest.mark.parametrize(("query", "version"), [("", "4.0.0"), ("?mirador=3&pair=1,0", "3.4.3")])
def test_view_page(
    viewer_client: Any, query: str, version: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    vendor = tmp_path / "static" / "vendor"
    vendor.mkdir(parents=True)
    (vendor / f"mirador-{version}.min.js").write_text("window.Mirador = {};")
    monkeypatch.setattr(viewer_routes, "STATIC", tmp_path / "static")
    r = viewer_client.get(f"/api/v1/collations/{CID}/view{query}")
    assert r.status_code == 200 and r.mimetype == "text/html"
    html = r.get_data(as_text=True)
    config = page_config(html)
    assert config["id"] == CID and config["api"] == "http://collation.test/api/v1"
    assert config["pair"] == ([1, 0] if "pair" in query else [0, 1])
    assert config["mirador"] == {"version": version, "installed": True}
    assert f'<script src="/api/v1/viewer/static/vendor/mirador-{version}.min.js"></script>' in html
    assert '<div id="mirador">' in html


def test_view_page_opens_on_a_link(viewer_client: Any) -> None:
    """The "compare in Mirador" links of the annotations can name a correspondence id a-b-i-j."""
    html = viewer_client.get(f"/api/v1/collations/{CID}/view?link=0-1-3-4&side=b").get_data(as_text=True)
    config = page_config(html)
    assert config["pair"] == [0, 1] and config["focus"] == [3, 4]
    assert page_config(viewer_client.get(f"/api/v1/collations/{CID}/view").get_data(as_text=True))["focus"] is None


def test_view_page_says_when_mirador_is_missing(
    viewer_client: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(viewer_routes, "STATIC", tmp_path / "nothing")
    html = viewer_client.get(f"/api/v1/collations/{CID}/view").get_data(as_text=True)
    assert "scripts/setup.sh" in html and "mirador-4.0.0.min.js" not in html


def test_static_assets_are_served(viewer_client: Any) -> None:
    for name, kind in (("viewer.js", "javascript"), ("viewer.css", "css")):
        r = viewer_client.get(f"/api/v1/viewer/static/{name}")
        assert r.status_code == 200 and kind in r.mimetype
        r.close()


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/api/v1/collations/ffffffffffffffff/view", 404),
        ("/api/v1/collations/not-an-id/view", 404),
        (f"/api/v1/collations/{CID}/view?pair=0,0", 400),
        (f"/api/v1/collations/{CID}/view?mirador=2", 400),
        (f"/api/v1/collations/{CID}/view?link=1-1-0-0", 400),
        (f"/api/v1/collations/{CID}/view?link=0-1-x-0", 400),
        (f"/api/v1/collations/{CID}/matrix.png?score=best", 400),
        (f"/api/v1/collations/{CID}/matrix.png?pair=0,2", 400),
        ("/api/v1/collations/ffffffffffffffff/matrix.png", 404),
        ("/api/v1/collations/ffffffffffffffff/view.json", 404),
    ],
)
def test_errors_are_problems(viewer_client: Any, url: str, status: int) -> None:
    r = viewer_client.get(url)
    assert r.status_code == status
    assert r.mimetype == "application/problem+json"


def test_view_json_gives_manifests_and_thumbnails_in_image_pixels(viewer_client: Any) -> None:
    doc = viewer_client.get(f"/api/v1/collations/{CID}/view.json?pair=0,1").get_json()
    assert doc["pair"] == [0, 1]
    assert [m["manifest"] for m in doc["manuscripts"]] == [
        f"http://collation.test/api/v1/collations/{CID}/manifests/0",
        f"http://collation.test/api/v1/collations/{CID}/manifests/1",
    ]
    a3 = doc["regions"]["0"]["3"]
    assert a3["canvas"] == "http://lib.test/a/canvas/1" and a3["canvas_label"] == "f. 2r"
    # canvas (100, 450, 400, 300) on a canvas twice the image: image (50, 225, 200, 150)
    assert a3["thumbnail"] == f"{SERVICE_A}1/50,225,200,150/160,/0/default.jpg"
    assert sorted(doc["regions"]["1"], key=int) == ["0", "1", "3", "4"]
    assert doc["regions"]["1"]["4"]["thumbnail"] == f"{SERVICE_B}4/60,90,300,450/160,/0/default.jpg"


def test_view_json_of_an_unfinished_collation_is_a_conflict(tmp_path: Path) -> None:
    finished_store = write_codices_a_b(tmp_path / "data", status="running")
    app = create_app(Settings.from_env({}, data_dir=finished_store.root), TESTING=True)
    viewer_client = app.test_client()
    assert viewer_client.get(f"/api/v1/collations/{CID}/view.json").status_code == 409
    assert viewer_client.get(f"/api/v1/collations/{CID}/matrix.png").status_code == 409
    assert viewer_client.get(f"/api/v1/collations/{CID}/view").status_code == 200  # the page shows progress


def test_matrix_png_takes_the_cache_buster_the_pair_page_sends(viewer_client: Any) -> None:
    # viewer.js asks for matrix.png?pair=...&score=...&t=<Date.now()>; it answered 400 "t: Unknown field."
    r = viewer_client.get(f"/api/v1/collations/{CID}/matrix.png?pair=0,1&score=propagated&t=1764170000000")
    assert r.status_code == 200 and r.mimetype == "image/png", r.get_data(as_text=True)
    assert viewer_client.get(f"/api/v1/collations/{CID}/matrix.png?t=javascript").status_code == 400


def matrix_image(viewer_client: Any, query: str) -> Image.Image:
    r = viewer_client.get(f"/api/v1/collations/{CID}/matrix.png?{query}")
    assert r.status_code == 200 and r.mimetype == "image/png", r.get_data(as_text=True)
    return Image.open(io.BytesIO(r.data)).convert("RGB")


def test_matrix_png_marks_cycles_assessments_and_ground_truth(viewer_client: Any, finished_store: DataStore) -> None:
    geometry = layout((4, 4))
    image = matrix_image(viewer_client, "pair=0,1&score=normalized")
    assert image.size == geometry.size
    for k in range(4):  # mutual best pairs on the diagonal: white outline
        x0, y0, _, _ = geometry.box(k, k)
        assert image.getpixel((x0 + geometry.cell // 2, y0)) == COLORS["two_cycles"]
    assert image.getpixel(geometry.center(3, 2)) != COLORS["confirmed"]

    # an expert confirms A3 <-> B region 3 (position 2): a green dot at (3, 2)
    r = viewer_client.post(
        f"/api/v1/collations/{CID}/assessments", json={"pair": [0, 1], "source": 3, "target": 3, "verdict": "confirmed"}
    )
    assert r.status_code == 201, r.get_json()
    image = matrix_image(viewer_client, "pair=0,1&score=propagated")
    assert image.getpixel(geometry.center(3, 2)) == COLORS["confirmed"]

    # ground truth, stored as B-A: the marks follow the asked orientation
    path = finished_store.collation_dir(CID) / "ground_truth" / "1-0.json"
    path.parent.mkdir()
    path.write_text(json.dumps([[4, 3], [0, 0]]))  # B region 4 = A3, B region 0 = A0
    image = matrix_image(viewer_client, "pair=0,1")
    assert image.getpixel(geometry.box(3, 3)[:2]) == COLORS["ground_truth"]
    assert image.getpixel(geometry.box(0, 0)[:2]) == COLORS["ground_truth"]
    flipped = matrix_image(viewer_client, "pair=1,0")
    assert flipped.getpixel(geometry.center(2, 3)) == COLORS["confirmed"]
    assert flipped.getpixel(geometry.box(3, 3)[:2]) == COLORS["ground_truth"]


def test_matrix_png_is_bright_on_the_diagonal(viewer_client: Any) -> None:
    geometry = layout((4, 4))
    lum = np.asarray(matrix_image(viewer_client, "pair=0,1&score=raw").convert("L"), dtype=float)
    diagonal = [lum[geometry.center(k, k)[::-1]] for k in range(4)]
    off = [lum[geometry.center(i, j)[::-1]] for i in range(4) for j in range(4) if i != j and (i, j) != (3, 2)]
    assert min(diagonal) > max(off)


def test_token_field_only_when_tokens_are_configured(finished_store: DataStore) -> None:
    app = create_app(Settings.from_env({}, data_dir=finished_store.root, api_tokens=("s3cret",)), TESTING=True)
    viewer_client = app.test_client()
    assert 'id="token"' in viewer_client.get(f"/api/v1/collations/{CID}/view").get_data(as_text=True)
    body = {"pair": [0, 1], "source": 0, "target": 0, "verdict": "rejected"}
    assert viewer_client.post(f"/api/v1/collations/{CID}/assessments", json=body).status_code == 401
    r = viewer_client.post(
        f"/api/v1/collations/{CID}/assessments", json=body, headers={"Authorization": "Bearer s3cret"}
    )
    assert r.status_code == 201


def test_no_token_field_on_an_open_service(viewer_client: Any) -> None:
    assert 'id="token"' not in viewer_client.get(f"/api/v1/collations/{CID}/view").get_data(as_text=True)


def test_annotation_documents_are_cached_per_app(viewer_client: Any) -> None:
    from collation.service.state import service_state

    documents = service_state(viewer_client.application).documents
    assert len(documents) == 0
    for path in ("annotations", "manifests/0", "pages/1/2"):
        assert viewer_client.get(f"/api/v1/collations/{CID}/{path}").status_code == 200
    assert len(documents) == 1  # one collation, built once
    r = viewer_client.post(
        f"/api/v1/collations/{CID}/assessments", json={"pair": [0, 1], "source": 3, "target": 3, "verdict": "confirmed"}
    )
    assert r.status_code == 201
    page = viewer_client.get(f"/api/v1/collations/{CID}/annotations?page=1").get_json()
    assert len(documents) == 2  # the assessment changed the results: built again
    assert any(a.get("imcol:status") == "confirmed" for a in page["items"])

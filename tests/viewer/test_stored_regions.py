"""A witness whose images have no IIIF Image service (plain image URLs) still shows its regions (issue 29,
item 3): the service fetched and cropped them, so view.json and the concordance point at its own copy,
``/collations/{id}/regions/{m}/{index}.jpg``, which serves the stored image."""

from __future__ import annotations

import io
from typing import Any

import pytest
from PIL import Image

from collation.store.datastore import DataStore
from tests.viewer.test_viewer_routes import CID, finished_store, manifest_b, viewer_client  # noqa: F401 (fixtures)


def without_services(doc: Any) -> Any:
    """The manifest with every Image service removed: plain image URLs only."""
    if isinstance(doc, dict):
        return {k: without_services(v) for k, v in doc.items() if k != "service"}
    if isinstance(doc, list):
        return [without_services(v) for v in doc]
    return doc


@pytest.fixture
def plain(finished_store: DataStore) -> DataStore:  # noqa: F811
    """Codex B (manuscript 1) without Image services, its region 3 stored as a 300 x 450 red image."""
    doc = finished_store.load_manuscript(CID, 1)
    finished_store.save_manuscript(CID, doc, without_services(manifest_b()))
    finished_store.save_image(Image.new("RGB", (300, 450), (200, 30, 30)), doc.region(3).digest)
    return finished_store


def test_a_witness_without_image_service_gets_the_services_own_thumbnails(viewer_client: Any, plain: DataStore) -> None:  # noqa: F811
    own = f"http://collation.test/api/v1/collations/{CID}/regions/1/3.jpg"
    view = viewer_client.get(f"/api/v1/collations/{CID}/view.json?pair=0,1").get_json()
    assert view["regions"]["1"]["3"]["thumbnail"] == own
    assert view["regions"]["0"]["0"]["thumbnail"].startswith("http://images.test/")  # a service: the library's
    concordance = viewer_client.get(f"/api/v1/collations/{CID}/concordance").get_json()
    cells = [c for row in concordance["rows"] for c in row["cells"] if c and c["manuscript"] == 1 and c["index"] == 3]
    assert [(c["thumbnail"], c["image"]) for c in cells] == [(own, own)]
    answer = viewer_client.get(own.removeprefix("http://collation.test"))
    assert (answer.status_code, answer.mimetype) == (200, "image/jpeg")
    image = Image.open(io.BytesIO(answer.get_data()))
    assert image.size == (300, 450)
    assert image.getpixel((150, 225))[0] > 150  # the stored red region, not a placeholder


@pytest.mark.parametrize("path", ["regions/1/2.jpg", "regions/1/0.jpg", "regions/7/0.jpg"])
def test_a_region_without_a_stored_image_is_a_404_problem(viewer_client: Any, plain: DataStore, path: str) -> None:  # noqa: F811
    answer = viewer_client.get(f"/api/v1/collations/{CID}/{path}")
    assert answer.status_code == 404
    assert answer.mimetype == "application/problem+json"

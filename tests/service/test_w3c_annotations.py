"""A real collation's AnnotationCollection, every page and every annotation, served for the Web
Annotation Protocol's media type, pass the W3C Working Group's musts (``tests/w3c_musts.py``): 0
failures. IIIF clients keep the IIIF form; both carry the protocol's headers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from service_helpers import service_settings
from w3c_musts import MUSTS_COLLECTION, failing, failing_in_page

from collation import __version__
from collation.core.settings import Settings

API = "/api/v1"
ANNO = 'application/ld+json; profile="http://www.w3.org/ns/anno.jsonld"'
IIIF = 'application/ld+json; profile="http://iiif.io/api/presentation/3/context.json"'
HOST = "http://collation.test"


@pytest.fixture
def settings(tmp_path: Path, redis_url: str) -> Settings:
    """The suite's settings with pages of 10 annotations, so that the collection has several."""
    return service_settings(tmp_path / "data", redis_url, chunk_pairs=6, page_size=10)


def test_a_real_collation_passes_the_w3c_musts_and_iiif_clients_keep_their_form(
    api: Any, client: Any, run_jobs: Any, synthetic: Any
) -> None:
    body = {"manifests": [synthetic.a, synthetic.b, synthetic.c], "regions": {"1": synthetic.b_regions}}
    cid = api.post(f"{API}/collations", json=body).get_json()["id"]
    run_jobs()
    assert api.get(f"{API}/collations/{cid}").get_json()["status"] == "finished"
    url = f"{API}/collations/{cid}/annotations"

    response = api.get(url, headers={"Accept": ANNO})
    assert response.headers["Content-Type"] == ANNO
    collection = response.get_json()
    assert failing(collection, MUSTS_COLLECTION) == []
    pages, annotations, next_page = [], 0, collection["first"]
    while next_page:
        page = api.get(next_page.removeprefix(HOST), headers={"Accept": ANNO}).get_json()
        assert failing_in_page(page) == [], page["id"]
        assert page["startIndex"] == annotations
        pages.append(page)
        annotations += len(page["items"])
        next_page = page.get("next")
    assert pages[-1]["id"] == collection["last"] and annotations == collection["total"]
    assert len(pages) >= 2  # the settings' page size is small enough for several
    creators = {item["creator"]["id"] for page in pages for item in page["items"]}
    assert creators == {f"{HOST}/"}  # the service itself
    assert pages[0]["items"][0]["creator"]["name"].startswith(f"image-collation {__version__} (")

    # IIIF clients (no Accept, */*) get the IIIF form, as before
    iiif = api.get(url)
    w3c = api.get(url, headers={"Accept": ANNO})
    assert iiif.headers["Content-Type"] == IIIF and api.get(url, headers={"Accept": "*/*"}).data == iiif.data
    doc = iiif.get_json()
    label = f"Image collation {cid}: correspondences"
    assert doc["label"] == {"en": [label]} and doc["first"]["type"] == "AnnotationPage"
    assert w3c.get_json()["label"] == label and doc["total"] == collection["total"]
    assert api.get(f"{url}?page=2").get_json()["items"] == pages[1]["items"]  # the same annotations

    for response in (iiif, w3c, api.get(f"{url}?page=1"), api.get(f"{url}?page=1", headers={"Accept": ANNO})):
        assert response.headers["Vary"] == "Accept"
        assert response.headers["Allow"] == "GET, HEAD, OPTIONS"
        assert response.headers["Link"] == '<http://www.w3.org/ns/ldp#Resource>; rel="type"'
        assert response.headers["ETag"].startswith('"')
    assert iiif.headers["ETag"] != w3c.headers["ETag"]

    again = client.get(url, headers={"Accept": ANNO, "If-None-Match": w3c.headers["ETag"]})
    assert again.status_code == 304 and again.headers["ETag"] == w3c.headers["ETag"] and not again.data
    other = client.get(url, headers={"If-None-Match": w3c.headers["ETag"]})  # the other form: not that tag
    assert other.status_code == 200 and other.data == iiif.data
    head = client.head(url, headers={"Accept": ANNO})
    assert head.status_code == 200 and head.headers["ETag"] == w3c.headers["ETag"] and not head.data
    options = client.options(url)
    assert set(options.headers["Allow"].split(", ")) == {"GET", "HEAD", "OPTIONS"}
    # a browser on another origin asks with a quoted profile (a preflight) and reads the tag and the links
    preflight = client.options(
        url, headers={"Origin": "https://w3c-client.example", "Access-Control-Request-Headers": "accept"}
    )
    assert "Accept" in preflight.headers["Access-Control-Allow-Headers"].split(", ")
    assert {"ETag", "Link"} <= set(w3c.headers["Access-Control-Expose-Headers"].split(", "))

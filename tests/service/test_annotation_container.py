"""The links of a real collation as a Web Annotation Protocol container: the protocol's requirements
as the Working Group's server test (web-platform-tests, annotation-protocol/server/server-manual.html)
checks them (headers, representation, paging, ``Prefer``), and ``?target=<canvas IRI>`` filtering,
whose per-canvas IRIs the derived manifests name in each canvas's ``seeAlso``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from service_helpers import service_settings
from w3c_musts import MUSTS_ANNOTATION, MUSTS_COLLECTION, failing, failing_in_page

from collation.core.settings import Settings
from collation.publish.container import parse_prefer, touches

API = "/api/v1"
HOST = "http://collation.test"
MINIMAL = 'return=representation;include="http://www.w3.org/ns/ldp#PreferMinimalContainer"'
IRIS = 'return=representation; include="http://www.w3.org/ns/oa#PreferContainedIRIs"'
CONTAINER_TYPE = re.compile(r'<http://www\.w3\.org/ns/ldp#BasicContainer>;\s*rel="type"')
CONSTRAINED_BY = '<http://www.w3.org/TR/annotation-protocol/>; rel="http://www.w3.org/ns/ldp#constrainedBy"'


@pytest.fixture
def settings(tmp_path: Path, redis_url: str) -> Settings:
    """Pages of 10 annotations, so that the container has several."""
    return service_settings(tmp_path / "data", redis_url, chunk_pairs=6, page_size=10)


def _walk(api: Any, first: str) -> list[dict[str, Any]]:
    """Every page from ``first``, following ``next``."""
    pages, url = [], first
    while url:
        response = api.get(url.removeprefix(HOST))
        assert response.status_code == 200 and response.headers["Content-Location"] == url
        pages.append(response.get_json())
        url = pages[-1].get("next")
    return pages


def _check_pages(pages: list[dict[str, Any]], container: dict[str, Any]) -> list[Any]:
    """The pages' paging links and indexes against the container; their items, in order."""
    items: list[Any] = []
    for n, page in enumerate(pages):
        assert page["partOf"]["id"] == container["id"] and page["partOf"]["total"] == container["total"]
        assert page["startIndex"] == len(items)
        assert ("prev" in page) == (n > 0) and ("next" in page) == (n + 1 < len(pages))
        if n > 0:
            assert page["prev"] == pages[n - 1]["id"]
        items += page["items"]
    assert pages[-1]["id"] == container["last"] and len(items) == container["total"]
    return items


def test_the_container_meets_the_protocol_and_filters_by_canvas(
    api: Any, client: Any, run_jobs: Any, synthetic: Any
) -> None:
    body = {"manifests": [synthetic.a, synthetic.b, synthetic.c], "regions": {"1": synthetic.b_regions}}
    cid = api.post(f"{API}/collations", json=body).get_json()["id"]
    run_jobs()
    status = api.get(f"{API}/collations/{cid}").get_json()
    url = status["links"]["container"]
    assert url == f"{HOST}{API}/collations/{cid}/container/" and url.endswith("/")  # the protocol's 4

    # the container: headers and representation (the server test's musts)
    response = api.get(url.removeprefix(HOST))
    headers = response.headers
    assert {"GET", "HEAD", "OPTIONS"} <= set(headers["Allow"].split(", "))
    assert headers["Content-Type"] == 'application/ld+json; profile="http://www.w3.org/ns/anno.jsonld"'
    assert CONTAINER_TYPE.search(headers["Link"]) and CONSTRAINED_BY in headers["Link"]
    assert headers["ETag"].startswith('"') and {"Accept", "Prefer"} <= set(headers["Vary"].split(", "))
    container = response.get_json()
    assert {"BasicContainer", "AnnotationCollection"} <= set(container["type"])
    assert headers["Content-Location"] == container["id"] == f"{url}?iris=0"
    assert "Preference-Applied" not in headers and "Prefer" not in headers
    assert client.head(url.removeprefix(HOST)).status_code == 200
    assert client.options(url.removeprefix(HOST)).status_code == 200
    assert failing(container | {"first": container["first"]["id"]}, MUSTS_COLLECTION) == []

    # paging, with the annotations in full (the default) as the IIIF-form collection has them
    first = container["first"]
    assert isinstance(first["items"][0], dict) and first["id"] == f"{url}?iris=0&page=0"
    pages = _walk(api, first["id"])
    assert len(pages) >= 2 and pages[0]["items"] == first["items"]
    for page in pages:
        assert failing_in_page(page) == [], page["id"]
    links = _check_pages(pages, container)
    assert all(failing(a, MUSTS_ANNOTATION) == [] for a in links)  # each with its @context
    iiif = api.get(f"{API}/collations/{cid}/annotations").get_json()
    assert iiif["total"] == container["total"]

    # ETag: 304 on a match; HEAD the same tag
    again = client.get(url.removeprefix(HOST), headers={"If-None-Match": headers["ETag"]})
    assert again.status_code == 304 and not again.data

    # Prefer: a minimal container (no page embedded, no items), then IRIs
    minimal = api.get(url.removeprefix(HOST), headers={"Prefer": MINIMAL})
    doc = minimal.get_json()
    assert minimal.headers["Preference-Applied"] == "return=representation" and "Prefer" in minimal.headers["Vary"]
    assert doc["first"] == f"{url}?iris=0&page=0" and doc["last"] == container["last"]
    assert "items" not in doc and "ldp:contains" not in doc and doc["total"] == container["total"]
    assert minimal.headers["ETag"] != headers["ETag"]
    iris = api.get(url.removeprefix(HOST), headers={"Prefer": IRIS}).get_json()
    assert iris["id"] == f"{url}?iris=1" and iris["first"]["id"] == f"{url}?iris=1&page=0"
    assert _check_pages(_walk(api, iris["first"]["id"]), iris) == [a["id"] for a in links]

    # each IRI is an annotation at its own address, with the protocol's headers (its 4.1)
    for iri, description in list(zip([a["id"] for a in links], links, strict=True))[:5]:
        one = api.get(iri.removeprefix(HOST))
        assert one.get_json() == description and failing(description, MUSTS_ANNOTATION) == []
        assert one.headers["Content-Type"] == 'application/ld+json; profile="http://www.w3.org/ns/anno.jsonld"'
        assert one.headers["Link"] == '<http://www.w3.org/ns/ldp#Resource>; rel="type"'
        assert "Accept" in one.headers["Vary"] and one.headers["ETag"] and "GET" in one.headers["Allow"]
        assert client.head(iri.removeprefix(HOST)).status_code == 200
    assert api.get(f"{API}/collations/{cid}/links/9-9-9-9").status_code == 404

    # ?target=: the links that touch one canvas, for every canvas the derived manifests point to
    per_canvas = 0
    for m in range(3):
        manifest = api.get(f"{API}/collations/{cid}/manifests/{m}").get_json()
        canvases = manifest["items"] if "items" in manifest else manifest["sequences"][0]["canvases"]
        for canvas in canvases:
            canvas_id = canvas.get("id", canvas.get("@id"))
            expected = [a for a in links if touches(a, canvas_id)]
            see_also = [s.get("id", s.get("@id")) for s in canvas.get("seeAlso", [])]
            if not expected:
                assert not see_also, canvas_id
                continue
            assert see_also == [f"{url}?target={quote(canvas_id, safe='')}&iris=0"]
            filtered = api.get(see_also[0].removeprefix(HOST)).get_json()
            assert filtered["id"] == see_also[0] and filtered["total"] == len(expected)
            assert _check_pages(_walk(api, filtered["first"]["id"]), filtered) == expected
            per_canvas += len(expected)
    assert per_canvas == 2 * len(links)  # each link touches two canvases, each counted once per side

    nothing = api.get(f"{API}/collations/{cid}/container/?target=https://elsewhere.test/c1").get_json()
    assert nothing["total"] == 0 and nothing["first"]["items"] == [] and nothing["last"] == nothing["first"]["id"]
    assert api.get(f"{API}/collations/{cid}/container/?page=99").status_code == 404
    bad = api.get(f"{API}/collations/{cid}/container/?iris=2")
    assert bad.status_code == 400 and "iris" in bad.get_json()["detail"]


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("respond-async", None),
        (MINIMAL, (False, True)),
        (IRIS, (True, False)),
        ('return=representation;include="http://www.w3.org/ns/oa#PreferContainedDescriptions"', (False, False)),
        ('return=representation;omit="http://www.w3.org/ns/oa#PreferContainedDescriptions"', (True, False)),
        (
            'return=representation;include="http://www.w3.org/ns/ldp#PreferMinimalContainer '
            'http://www.w3.org/ns/oa#PreferContainedIRIs"',
            (True, True),
        ),
    ],
)
def test_prefer_headers_as_the_protocol_writes_them(header: str | None, expected: Any) -> None:
    assert parse_prefer(header) == expected

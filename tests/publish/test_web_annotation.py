"""The two forms of the canonical layer: the W3C Web Annotation form passes the Working Group's musts
(``tests/w3c_musts.py``), the IIIF form stays what viewers read; which one a client gets from its
``Accept`` header."""

from __future__ import annotations

import pytest
from test_annotations import BASE, CORRESPONDENCES, URLS, manuscripts
from w3c_musts import MUSTS_COLLECTION, failing, failing_in_page

from collation import __version__
from collation.publish.canonical import build_link_collection, web_annotation_form
from collation.service.negotiation import wants_web_annotation

ANNO = 'application/ld+json; profile="http://www.w3.org/ns/anno.jsonld"'


def forms(page_size: int = 1) -> tuple[dict, list[dict], dict, list[dict]]:
    """(collection, pages) in the IIIF form, then in the W3C form."""
    collection, pages = build_link_collection(
        manuscripts(), CORRESPONDENCES, urls=URLS, page_size=page_size, method="m", created="2024-05-01T10:00:00Z"
    )
    w3c_pages = [web_annotation_form(p, start_index=n * page_size) for n, p in enumerate(pages)]
    return collection, pages, web_annotation_form(collection), w3c_pages


def test_the_web_annotation_form_passes_every_must() -> None:
    collection, pages, w3c, w3c_pages = forms()
    # the IIIF form fails the musts on label, last, next/prev and partOf: the reason for two forms
    assert len(failing(collection, MUSTS_COLLECTION)) == 2
    assert [len(failing_in_page(p)) for p in pages] == [9, 9]

    assert failing(w3c, MUSTS_COLLECTION) == []
    assert [failing_in_page(p) for p in w3c_pages] == [[], []]
    assert w3c["label"] == "Image collation: correspondences" and w3c["total"] == 2
    assert w3c["first"] == f"{BASE}/annotations?page=1" and w3c["last"] == f"{BASE}/annotations?page=2"
    assert w3c["@context"][-1] == "http://www.w3.org/ns/anno.jsonld"
    first, second = w3c_pages
    assert first["partOf"] == {"id": f"{BASE}/annotations", "label": "Image collation: correspondences"}
    assert first["next"] == second["id"] and second["prev"] == first["id"] and "prev" not in first
    assert [first["startIndex"], second["startIndex"]] == [0, 1]
    assert first["items"] == pages[0]["items"]  # the same annotations in both forms


def test_the_iiif_form_is_what_viewers_read_today() -> None:
    collection, pages, _, _ = forms()
    assert collection["label"] == {"en": ["Image collation: correspondences"]}
    assert collection["first"] == {"id": f"{BASE}/annotations?page=1", "type": "AnnotationPage"}
    assert pages[0]["partOf"][0]["id"] == f"{BASE}/annotations" and "startIndex" not in pages[0]


def test_the_creator_is_the_service_itself() -> None:
    _, pages, _, _ = forms()
    creator = pages[0]["items"][0]["creator"]
    name = f"image-collation {__version__} (m)"
    assert creator == {"id": "https://collation.example.org/", "type": "Software", "name": name}


@pytest.mark.parametrize(
    ("accept", "w3c"),
    [
        (None, False),
        ("*/*", False),
        ("application/json", False),
        ("application/ld+json", False),
        (ANNO, True),
        ('application/ld+json;profile="http://www.w3.org/ns/anno.jsonld"', True),
        ('application/ld+json; profile="http://www.w3.org/ns/anno.jsonld http://www.w3.org/ns/ldp.jsonld"', True),
        (f"{ANNO}, */*;q=0.1", True),
        (f"{ANNO};q=0.5, application/json", False),
        (f'{ANNO};q=0.5, application/ld+json;profile="http://iiif.io/api/presentation/3/context.json";q=0.4', True),
        ('application/ld+json;profile="http://iiif.io/api/presentation/3/context.json"', False),
        (f"{ANNO};q=0", False),
        ("text/html, application/xhtml+xml", False),
        ("garbage;;;, /", False),
    ],
)
def test_accept_chooses_the_form(accept: str | None, w3c: bool) -> None:
    assert wants_web_annotation(accept) is w3c

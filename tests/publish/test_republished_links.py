"""Links the service republishes (issue 31, item 6): ``collation.iiif.links`` keeps only http(s) links
in a document's link properties, and the derived manifests are built through it."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
from builders import v3_canvas, v3_image_body, v3_manifest
from iiif_helpers import validator_root

from collation.iiif.links import is_web_link, web_links_only
from collation.iiif.manifests import parse_manifest
from collation.publish.parts import UrlScheme
from collation.publish.viewer_layer import build_derived_manifest

WEB = "https://lib.example.org/ms1.pdf"
BAD = [
    "javascript:alert(1)",
    " JAVASCRIPT:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:x",
    "ms1.pdf",
]


@pytest.mark.parametrize(
    ("link", "web"),
    [
        ("http://a.test/x", True),
        ("HTTPS://a.test/x", True),
        ("  https://a.test/x", True),
        ("//a.test/x", True),
        ("javascript:alert(1)", False),
        ("\tjavascript:alert(1)", False),
        ("data:image/png;base64,AAAA", False),
        ("vbscript:msgbox(1)", False),
        ("file:///etc/passwd", False),
        ("https:javascript:alert(1)", False),
        ("a.pdf", False),
        ("", False),
    ],
)
def test_is_web_link(link: str, web: bool) -> None:
    assert is_web_link(link) is web


def test_web_links_only_drops_every_other_link_in_every_link_property() -> None:
    doc = {
        "id": "urn:not-a-link-property",  # ids are identifiers, not links: kept
        "rendering": [{"id": bad, "type": "Text"} for bad in BAD] + [{"id": WEB, "type": "Text"}],
        "seeAlso": {"@id": BAD[0]},  # one object, not a list: the property goes
        "license": BAD[2],
        "related": [BAD[1], WEB],
        "rights": WEB,
        "homepage": [{"id": WEB, "@id": BAD[0]}],  # both ids are read
        "logo": {"@id": WEB, "service": {"@id": BAD[3], "profile": "level1"}},  # nested, in a kept link
        "service": [{"profile": "http://iiif.io/api/auth/1/login", "label": "no id"}],  # nothing to open: kept
        "thumbnail": [],  # empty as it was
        "within": [[BAD[0]]],  # a list in the list: nothing a viewer should open
        "items": [{"id": "c1", "partOf": [{"id": BAD[0], "type": "Manifest"}], "label": {"en": ["javascript:"]}}],
    }
    before = copy.deepcopy(doc)
    out = web_links_only(doc)
    assert doc == before  # a copy: the input is untouched
    assert out == {
        "id": "urn:not-a-link-property",
        "rendering": [{"id": WEB, "type": "Text"}],
        "related": [WEB],
        "rights": WEB,
        "logo": {"@id": WEB},
        "service": [{"profile": "http://iiif.io/api/auth/1/login", "label": "no id"}],
        "thumbnail": [],
        "items": [{"id": "c1", "label": {"en": ["javascript:"]}}],
    }


@pytest.fixture(scope="module")
def schema() -> jsonschema.protocols.Validator:
    path = validator_root() / "schema" / "iiif_3_0.json"
    if not path.is_file():
        pytest.skip(f"IIIF Presentation 3 schema not found at {path} (set COLLATION_IIIF_VALIDATOR)")
    return jsonschema.Draft7Validator(json.loads(path.read_text()))


def test_derived_manifest_republishes_only_http_links(schema: Any) -> None:
    url = "https://lib.example.org/iiif/ms1/manifest"
    body = v3_image_body("https://img.example.org/p0.jpg", (1000, 1500))
    canvas = v3_canvas("https://lib.example.org/iiif/ms1/canvas/p0", (1000, 1500), body=body)
    canvas["rendering"] = [{"id": BAD[2], "type": "Text", "label": {"en": ["page"]}, "format": "text/html"}]
    raw = v3_manifest(url, [canvas], "MS 1")
    raw["homepage"] = [{"id": BAD[0], "type": "Text", "label": {"en": ["home"]}, "format": "text/html"}]
    raw["rendering"] = [{"id": WEB, "type": "Text", "label": {"en": ["PDF"]}, "format": "application/pdf"}]
    raw["rights"] = BAD[1]
    manifest = parse_manifest(raw, url=url)
    doc = build_derived_manifest(0, [(manifest, [])], [], urls=UrlScheme(base="https://collation.example.org/c"))
    errors = [e.message for e in schema.iter_errors(doc)]
    assert errors == []
    assert "homepage" not in doc and "rights" not in doc and "rendering" not in doc["items"][0]
    assert doc["rendering"] == raw["rendering"] and doc["items"][0]["items"] == raw["items"][0]["items"]
    assert manifest.raw["rights"] == BAD[1]  # the parsed manifest is not changed

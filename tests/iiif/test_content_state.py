"""IIIF Content State API 1.0: the encoding checked against the specification's own examples (its
6.3 and 5.4 give a JSON text and its encoded form; its 3.1 examples encode a whole viewer address,
which decodes as such), and the comparison view of two regions read back as it was built."""

from __future__ import annotations

import json

import pytest

from collation.core.errors import InputError
from collation.publish.content_state import (
    RegionTarget,
    build_content_state,
    decode,
    encode,
    read_targets,
    view_link,
)

# the specification's 6.3 (Python example): the condensed JSON and its content-state-encoding
SPEC_6_3 = (
    '{"id":"https://example.org/object1/canvas7#xywh=1000,2000,1000,2000","type":"Canvas",'
    '"partOf":[{"id":"https://example.org/object1/manifest","type":"Manifest"}]}'
)
SPEC_6_3_ENCODED = (
    "JTdCJTIyaWQlMjIlM0ElMjJodHRwcyUzQSUyRiUyRmV4YW1wbGUub3JnJTJGb2JqZWN0MSUyRmNhbnZhczclMjN4eXdoJTNEMTAwMCUyQzIw"
    "MDAlMkMxMDAwJTJDMjAwMCUyMiUyQyUyMnR5cGUlMjIlM0ElMjJDYW52YXMlMjIlMkMlMjJwYXJ0T2YlMjIlM0ElNUIlN0IlMjJpZCUyMiUz"
    "QSUyMmh0dHBzJTNBJTJGJTJGZXhhbXBsZS5vcmclMkZvYmplY3QxJTJGbWFuaWZlc3QlMjIlMkMlMjJ0eXBlJTIyJTNBJTIyTWFuaWZlc3Ql"
    "MjIlN0QlNUQlN0Q"
)
# the specification's 5.4 (search results)
SPEC_5_4 = (
    '{"id":"https://example.org/alice/canvas77#xywh=1000,2000,1000,2000","type":"Canvas",'
    '"partOf":[{"id":"https://example.org/alice/manifest","type":"Manifest"}]}'
)
SPEC_5_4_ENCODED = (
    "JTdCJTIyaWQlMjIlM0ElMjJodHRwcyUzQSUyRiUyRmV4YW1wbGUub3JnJTJGYWxpY2UlMkZjYW52YXM3NyUyM3h5d2glM0QxMDAwJTJDMjAw"
    "MCUyQzEwMDAlMkMyMDAwJTIyJTJDJTIydHlwZSUyMiUzQSUyMkNhbnZhcyUyMiUyQyUyMnBhcnRPZiUyMiUzQSU1QiU3QiUyMmlkJTIyJTNB"
    "JTIyaHR0cHMlM0ElMkYlMkZleGFtcGxlLm9yZyUyRmFsaWNlJTJGbWFuaWZlc3QlMjIlMkMlMjJ0eXBlJTIyJTNBJTIyTWFuaWZlc3QlMjIl"
    "N0QlNUQlN0Q"
)
# the specification's 3.1 (compact form): what its link carries encodes the whole viewer address
SPEC_3_1_ENCODED = (
    "aHR0cHMlM0ElMkYlMkZleGFtcGxlLm9yZyUyRnZpZXdlciUzRmlpaWYtY29udGVudCUzRCU3QiUyMmlkJTIyJTNBJTIyaHR0cHMlM0ElMkYl"
    "MkZkYW1zc3NsLmxsZ2Mub3JnLnVrJTJGaWlpZiUyRjIuMCUyRjQzODk3NjclMkZjYW52YXMlMkY0Mzg5NzcyLmpzb24lMjIlMkMlMjJ0eXBl"
    "JTIyJTNBJTIyQ2FudmFzJTIyJTJDJTIycGFydE9mJTIyJTNBJTVCJTdCJTIyaWQlMjIlM0ElMjJodHRwcyUzQSUyRiUyRmRhbXNzc2wubGxn"
    "Yy5vcmcudWslMkZpaWlmJTJGMi4wJTJGNDM4OTc2NyUyRm1hbmlmZXN0Lmpzb24lMjIlMkMlMjJ0eXBlJTIyJTNBJTIyTWFuaWZlc3QlMjIl"
    "N0QlNUQlN0Q"
)


@pytest.mark.parametrize(("text", "encoded"), [(SPEC_6_3, SPEC_6_3_ENCODED), (SPEC_5_4, SPEC_5_4_ENCODED)])
def test_the_encoding_of_the_specification_s_examples(text: str, encoded: str) -> None:
    assert encode(text) == encoded
    assert encode(json.loads(text)) == encoded  # compact JSON, as the specification condenses it
    assert decode(encoded) == text
    assert "=" not in encoded and "+" not in encoded and "/" not in encoded
    assert read_targets(decode(encoded)) == [
        RegionTarget(text.split('"')[3].split("#")[0], text.split('"')[13], (1000, 2000, 1000, 2000))
    ]


def test_the_specification_s_3_1_link_decodes_to_the_address_it_encoded() -> None:
    assert decode(SPEC_3_1_ENCODED) == (
        'https://example.org/viewer?iiif-content={"id":"https://damsssl.llgc.org.uk/iiif/2.0/4389767/canvas/'
        '4389772.json","type":"Canvas","partOf":[{"id":"https://damsssl.llgc.org.uk/iiif/2.0/4389767/manifest.json",'
        '"type":"Manifest"}]}'
    )


def test_encode_uri_component_then_base64url_as_javascript_does() -> None:
    # encodeURIComponent("é'!~*()&/") in a browser is "%C3%A9'!~*()%26%2F"; btoa of that, base64url
    assert decode(encode("é'!~*()&/")) == "é'!~*()&/"
    assert encode("é'!~*()&/") == "JUMzJUE5JyF-KigpJTI2JTJG"
    for bad in ("a", "ab=", "a+b/", "%%%%"):
        with pytest.raises(InputError) as error:
            decode(bad)
        assert error.value.field == "iiif-content"


def test_two_regions_make_a_comparison_view_read_back_as_built() -> None:
    a = ("https://lib-a.test/ms1/canvas/p29", [412, 980, 1630, 1214], "https://svc.test/collations/7f/manifests/0")
    b = ("https://lib-b.test/ms2/canvas/f14v", [220.4, 310, 1500, 1180], "https://svc.test/collations/7f/manifests/1")
    state = build_content_state([a, b])
    assert state == {
        "@context": "http://iiif.io/api/presentation/3/context.json",
        "type": "Annotation",
        "motivation": ["contentState"],
        "target": [
            {
                "id": "https://lib-a.test/ms1/canvas/p29#xywh=412,980,1630,1214",
                "type": "Canvas",
                "partOf": [{"id": a[2], "type": "Manifest"}],
            },
            {
                "id": "https://lib-b.test/ms2/canvas/f14v#xywh=220,310,1500,1180",
                "type": "Canvas",
                "partOf": [{"id": b[2], "type": "Manifest"}],
            },
        ],
    }
    link = view_link("https://svc.test/collations/7f/view", state)
    assert link.startswith("https://svc.test/collations/7f/view?iiif-content=")
    assert read_targets(decode(link.split("=", 1)[1])) == [
        RegionTarget(a[0], a[2], (412, 980, 1630, 1214)),
        RegionTarget(b[0], b[2], (220, 310, 1500, 1180)),
    ]
    assert view_link("https://svc.test/v?pair=0,1", state).startswith("https://svc.test/v?pair=0,1&iiif-content=")


def test_received_forms_a_viewer_must_read() -> None:
    specific = {
        "type": "Annotation",
        "motivation": "contentState",
        "target": {
            "type": "SpecificResource",
            "source": {"id": "https://x.test/c1", "type": "Canvas", "partOf": [{"id": "https://x.test/m"}]},
            "selector": {"type": "FragmentSelector", "value": "xywh=1,2,3,4"},
        },
    }
    assert read_targets(json.dumps(specific)) == [RegionTarget("https://x.test/c1", "https://x.test/m", (1, 2, 3, 4))]
    assert read_targets('"https://x.test/c2"') == [RegionTarget("https://x.test/c2", None, None)]
    for bad in ('{"type": "Annotation", "motivation": "commenting", "target": "https://x.test/c"}', "[]", "{", "3"):
        with pytest.raises(InputError):
            read_targets(bad)

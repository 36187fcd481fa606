"""Reading manifests: versions, services, static images, Choice, canvas vs image size, labels, and a
set of deliberately broken manifests that must give a clear error, never a crash."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from builders import P2, P3, v2_canvas, v2_manifest, v2_service, v3_canvas, v3_image_body, v3_manifest

from collation.core.errors import CollationError, LimitError, ManifestError
from collation.iiif.geometry import canvas_to_image, image_to_canvas, parse_xywh
from collation.iiif.manifests import detect_version, load_manifest, parse_manifest
from collation.iiif.model import label_text, service_base

C = "https://example.org/iiif/book/canvas"


def simple_v2(**canvas_kwargs: Any) -> dict[str, Any]:
    canvas_kwargs.setdefault("service", v2_service("https://images.example.org/iiif/p1"))
    return v2_manifest("https://example.org/iiif/book/manifest", [v2_canvas(f"{C}/p1", (1000, 1500), **canvas_kwargs)])


def simple_v3(body: dict[str, Any] | None = None, size: tuple[int, int] = (1000, 1500)) -> dict[str, Any]:
    body = body or v3_image_body("https://images.example.org/iiif/p1/full/max/0/default.jpg", size)
    return v3_manifest("https://example.org/iiif/book/manifest", [v3_canvas(f"{C}/p1", size, body=body)])


# -- versions ------------------------------------------------------------------------------------


def test_version_from_context_string_or_list() -> None:
    assert detect_version({"@context": P2}) == 2
    assert detect_version({"@context": ["http://www.w3.org/ns/anno.jsonld", P3]}) == 3
    assert detect_version({"@context": "https://iiif.io/api/presentation/2/context.json"}) == 2


def test_version_from_structure() -> None:
    assert detect_version({"sequences": []}) == 2
    assert detect_version({"@id": "x"}) == 2
    assert detect_version({"items": []}) == 3


def test_unknown_presentation_version_is_refused() -> None:
    with pytest.raises(ManifestError, match="Presentation 4, which is not supported"):
        detect_version({"@context": "http://iiif.io/api/presentation/4/context.json"}, url="https://x/m")


def test_collections_are_refused_with_their_name() -> None:
    doc = {
        "@context": P3,
        "id": "https://example.org/collection/top",
        "type": "Collection",
        "label": {"en": ["Greek manuscripts"]},
        "items": [{"id": "https://example.org/m/1", "type": "Manifest"}],
    }
    with pytest.raises(ManifestError, match=r"is a IIIF Collection 'Greek manuscripts'.*https://example.org/m/1"):
        parse_manifest(doc, url="https://example.org/collection/top")
    v2 = {"@context": P2, "@id": "https://x/c", "@type": "sc:Collection", "manifests": [{"@id": "https://x/m1"}]}
    with pytest.raises(ManifestError, match="Collection"):
        parse_manifest(v2, url="https://x/c")


# -- canvases and images -------------------------------------------------------------------------


@pytest.mark.parametrize("as_list", [False, True])
def test_v2_image_service(as_list: bool) -> None:
    service = v2_service("https://images.example.org/iiif/p1/", level=2)
    service["profile"] = [service["profile"], {"supports": ["regionByPx"], "maxWidth": 2000}]
    manifest = parse_manifest(simple_v2(service=[service] if as_list else service, image_size=(2000, 3000)))
    canvas = manifest.canvases[0]
    assert manifest.version == 2 and canvas.id == f"{C}/p1" and (canvas.width, canvas.height) == (1000, 1500)
    image = canvas.image
    assert image is not None
    assert (image.service_id, image.service_version, image.level) == ("https://images.example.org/iiif/p1", 2, 2)
    assert image.profile["maxWidth"] == 2000 and (image.width, image.height) == (2000, 3000)


def test_image_api_1_1_service() -> None:
    service = {
        "@context": "http://iiif.io/api/image/1/context.json",
        "@id": "https://gallica.example/iiif/ark:/12148/btv1b/f1",
        "profile": "http://library.stanford.edu/iiif/image-api/1.1/compliance.html#level1",
    }
    image = parse_manifest(simple_v2(service=service)).canvases[0].image
    assert image is not None and image.service_version == 1 and image.level == 1


def test_v3_image_service3_and_v2_in_v3() -> None:
    body = v3_image_body(
        "https://images.example.org/iiif/p1/full/max/0/default.jpg",
        (2000, 3000),
        [{"id": "https://images.example.org/iiif3/p1", "type": "ImageService3", "profile": "level0"}],
    )
    image = parse_manifest(simple_v3(body)).canvases[0].image
    assert image is not None and (image.service_version, image.level) == (3, 0)
    body["service"] = [
        {
            "@id": "https://images.example.org/iiif2/p1",
            "@type": "ImageService2",
            "profile": "http://iiif.io/api/image/2/level2.json",
        }
    ]
    image = parse_manifest(simple_v3(body)).canvases[0].image
    assert image is not None and (image.service_id, image.service_version, image.level) == (
        "https://images.example.org/iiif2/p1",
        2,
        2,
    )


def test_static_image_without_service() -> None:
    body = v3_image_body("https://example.org/images/p1.jpg", (500, 750))
    body["format"] = "image/jpg"  # invalid MIME type seen in the wild
    image = parse_manifest(simple_v3(body)).canvases[0].image
    assert image is not None and image.service_id is None and image.static_url == "https://example.org/images/p1.jpg"


def test_non_image_bodies_give_no_image() -> None:
    body = {"id": "https://example.org/video.mp4", "type": "Video", "format": "video/mp4"}
    assert parse_manifest(simple_v3(body)).canvases[0].image is None


def test_v2_choice_takes_the_default() -> None:
    doc = simple_v2()
    canvas = doc["sequences"][0]["canvases"][0]
    canvas["images"][0]["resource"] = {
        "@type": "oa:Choice",
        "default": {
            "@id": "https://x/natural.jpg",
            "@type": "dctypes:Image",
            "label": "natural",
            "service": v2_service("https://x/iiif/natural"),
        },
        "item": [
            {
                "@id": "https://x/uv.jpg",
                "@type": "dctypes:Image",
                "label": "UV",
                "service": v2_service("https://x/iiif/uv"),
            }
        ],
    }
    image = parse_manifest(doc).canvases[0].image
    assert image is not None and image.service_id == "https://x/iiif/natural" and image.choice == "natural"


def test_v3_choice_takes_the_first_item() -> None:
    body = {
        "type": "Choice",
        "items": [
            {
                "id": "https://x/colour.jpg",
                "type": "Image",
                "label": {"en": ["colour"]},
                "service": [{"id": "https://x/iiif3/colour", "type": "ImageService3", "profile": "level1"}],
            },
            {"id": "https://x/ir.jpg", "type": "Image", "label": {"en": ["infrared"]}},
        ],
    }
    image = parse_manifest(simple_v3(body)).canvases[0].image
    assert image is not None and image.service_id == "https://x/iiif3/colour" and image.choice == "colour"


def test_protocol_relative_and_suffixed_service_ids() -> None:
    service = v2_service("//images.example.org/iiif/p1/full/full/0/default.jpg")
    image = parse_manifest(simple_v2(service=service), url="https://example.org/m.json").canvases[0].image
    assert image is not None and image.service_id == "https://images.example.org/iiif/p1"
    assert service_base("https://x/iiif/p 1/info.json") == "https://x/iiif/p%201"
    assert service_base("https://x/iiif/p1/0,0,10,10/max/0/native.jpg") == "https://x/iiif/p1"


def test_canvas_larger_than_image_maps_both_ways() -> None:
    manifest = parse_manifest(simple_v2(image_size=(500, 750)))  # canvas 1000 × 1500
    canvas = manifest.canvases[0]
    assert canvas_to_image((200, 300, 400, 600), canvas) == (100, 150, 200, 300)
    assert image_to_canvas((100, 150, 200, 300), canvas) == (200, 300, 400, 600)
    # info.json is the authority on the image size when it differs from the manifest
    assert canvas_to_image((200, 300, 400, 600), canvas, (250, 375)) == (50, 75, 100, 150)


def test_painting_target_offset() -> None:
    doc = simple_v3(v3_image_body("https://x/p.jpg", (400, 600)))
    doc["items"][0]["items"][0]["items"][0]["target"] = f"{C}/p1#xywh=100,200,800,1200"
    canvas = parse_manifest(doc).canvases[0]
    assert canvas.image is not None and canvas.image.target == (100, 200, 800, 1200)
    assert canvas_to_image((100, 200, 800, 1200), canvas) == (0, 0, 400, 600)
    assert canvas_to_image((500, 800, 200, 200), canvas) == (200, 300, 100, 100)
    assert image_to_canvas((200, 300, 100, 100), canvas) == (500, 800, 200, 200)


def test_canvas_ids_are_kept_byte_for_byte() -> None:
    odd = "https://example.org/iiif/book/canvas/f. 1r?x=1#frag"
    doc = v2_manifest("https://x/m", [v2_canvas(odd, (10, 10))])
    assert parse_manifest(doc).canvases[0].id == odd


def test_canvas_without_size_takes_the_image_size() -> None:
    doc = simple_v2(image_size=(640, 480))
    del doc["sequences"][0]["canvases"][0]["width"]
    canvas = parse_manifest(doc).canvases[0]
    assert (canvas.width, canvas.height) == (640, 480)


# -- labels --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("f. 1r", "f. 1r"),
        ({"en": ["Folio 1 recto"], "fr": ["Folio 1 recto (fr)"]}, "Folio 1 recto"),
        ({"fr": ["Feuillet 1"]}, "Feuillet 1"),
        ({"none": ["1r"]}, "1r"),
        ([{"@value": "Feuillet", "@language": "fr"}, {"@value": "Leaf", "@language": "en"}], "Leaf"),
        ({"@value": "Leaf 2", "@language": "en"}, "Leaf 2"),
        (["a", "b"], "a; b"),
        (12, "12"),
        (None, ""),
        ({"en": "not a list"}, "not a list"),
        ({"en": [None, 3]}, "3"),
    ],
)
def test_labels(value: Any, text: str) -> None:
    assert label_text(value) == text


def test_xywh_parsing() -> None:
    assert parse_xywh("xywh=1,2,3,4") == ("pixel", (1, 2, 3, 4))
    assert parse_xywh("https://x/c#xywh=pixel:1,2,3,4") == ("pixel", (1, 2, 3, 4))
    assert parse_xywh("xywh=percent:10.5,20,30,40") == ("percent", (10.5, 20, 30, 40))
    assert parse_xywh("t=10&xywh=1,2,3,4") == ("pixel", (1, 2, 3, 4))
    assert parse_xywh("1, 2, 3, 4") == ("pixel", (1, 2, 3, 4))
    for bad in ("xywh=1,2,0,4", "xywh=1,2,-3,4", "xywh=a,b,c,d", "xywh=1,2,3", None, 5, "xywh=1,2,inf,4"):
        assert parse_xywh(bad) is None


# -- broken manifests ----------------------------------------------------------------------------


def _broken() -> dict[str, tuple[Any, type[CollationError], str]]:
    good2, good3 = simple_v2(), simple_v3()
    cases: dict[str, tuple[Any, type[CollationError], str]] = {
        "null": (None, ManifestError, "not a JSON object"),
        "list": ([good3], ManifestError, "not a JSON object but a list"),
        "string": ("manifest", ManifestError, "not a JSON object"),
        "empty object": ({}, ManifestError, "not a IIIF manifest"),
        "a JSON list of numbers": ({"items": [1, 2, 3]}, ManifestError, "this file is not a IIIF manifest"),
        "v2 no sequences": (
            {"@context": P2, "@id": "https://x/m", "@type": "sc:Manifest"},
            ManifestError,
            "no canvases",
        ),
        "v2 empty sequences": ({**good2, "sequences": []}, ManifestError, "no canvases"),
        "v2 canvases not a list": ({**good2, "sequences": [{"canvases": {"a": 1}}]}, ManifestError, "no canvases"),
        "v2 no canvas usable": (
            {**good2, "sequences": [{"canvases": ["a", 1, None]}]},
            ManifestError,
            "no usable canvases",
        ),
        "v3 no items": (
            {k: v for k, v in good3.items() if k != "items"},
            ManifestError,
            "not a IIIF manifest|no canvases",
        ),
        "v3 empty items": ({**good3, "items": []}, ManifestError, "no usable canvases"),
        "v3 items a string": ({**good3, "items": "canvas"}, ManifestError, "no canvases"),
        "v3 canvases without ids": ({**good3, "items": [{"type": "Canvas"}]}, ManifestError, "has no id"),
        "wrong type": ({**good3, "type": "Canvas"}, ManifestError, "is of type Canvas, not a IIIF Manifest"),
        "annotation page": (
            {"@context": P3, "id": "https://x/p", "type": "AnnotationPage", "items": []},
            ManifestError,
            "of type AnnotationPage, not a IIIF Manifest",
        ),
        "huge canvas": (_with_canvas(good3, width=10**12), LimitError, r"items\[0\].width is 1e\+12 pixels"),
        "huge image": (_with_body(good3, width=5 * 10**7), LimitError, "image width"),
        "too many canvases": ({**good3, "items": [good3["items"][0]] * 10_001}, LimitError, "10001 canvases"),
        "context a number": ({**good3, "@context": 3, "items": "x"}, ManifestError, "no canvases"),
        "no id": ({k: v for k, v in good3.items() if k != "id"}, ManifestError, "has no id"),
    }
    return cases


def _with_canvas(doc: dict[str, Any], **fields: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["items"][0].update(fields)
    return doc


def _with_body(doc: dict[str, Any], **fields: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["items"][0]["items"][0]["items"][0]["body"].update(fields)
    return doc


@pytest.mark.parametrize(("doc", "error", "message"), list(_broken().values()), ids=list(_broken()))
def test_broken_manifests_give_clear_errors(doc: Any, error: type[CollationError], message: str) -> None:
    with pytest.raises(error, match=message) as info:
        parse_manifest(doc, url="https://library.example/broken/manifest.json" if message != "has no id" else None)
    if message != "has no id":
        assert "https://library.example/broken/manifest.json" in info.value.message


@pytest.mark.parametrize(
    "mutate",
    [
        lambda c: c.update(width="abc"),
        lambda c: c.update(label=3.5),
        lambda c: c.update(images="not a list"),
        lambda c: c["images"][0].update(resource=None),
        lambda c: c["images"][0]["resource"].update(service=17),
        lambda c: c["images"][0]["resource"].update(service=[None, "https://x/iiif/p1"]),
        lambda c: c.update(otherContent={"@id": 5}),
        lambda c: c.update(otherContent=[None, 3, {"x": 1}]),
        lambda c: c["images"][0].update(on=[{"selector": 7}]),
        lambda c: c.update(height=-5),
    ],
)
def test_wrong_types_inside_canvases_are_tolerated(mutate: Any) -> None:
    doc = simple_v2()
    mutate(doc["sequences"][0]["canvases"][0])
    manifest = parse_manifest(doc, url="https://x/m")
    assert manifest.canvases[0].id == f"{C}/p1"


def test_unusable_canvases_are_skipped_and_reported() -> None:
    doc = simple_v2()
    doc["sequences"][0]["canvases"] = ["junk", *doc["sequences"][0]["canvases"], {"@type": "sc:Canvas"}]
    manifest = parse_manifest(doc)
    assert [c.index for c in manifest.canvases] == [0]
    assert manifest.problems == (
        "sequences[0].canvases[0] is a string, not a canvas: skipped",
        "sequences[0].canvases[2] has no id: skipped",
    )


# -- loading -------------------------------------------------------------------------------------


def test_load_from_file_and_url(tmp_path: Path, static_server: Any, fetcher: Any) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(simple_v3()))
    manifest = load_manifest(str(path))
    assert manifest.url == str(path.resolve()) and manifest.id == "https://example.org/iiif/book/manifest"
    url = static_server.write_json("manifests/simple.json", simple_v2())
    manifest = load_manifest(url, fetcher=fetcher)
    assert manifest.url == url and manifest.version == 2


@pytest.mark.parametrize(
    ("body", "content_type", "message"),
    [
        (b"{not json", "application/json", "not valid JSON"),
        (b"<!DOCTYPE html><html><body>Error</body></html>", "text/html", "is HTML"),
        (b"<html>oops</html>", "application/json", "is HTML"),
        (b"\xff\xfe\x00garbage", "application/json", "not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "application/json", "nested too deeply|not a JSON object"),
    ],
)
def test_served_garbage_is_refused(
    body: bytes, content_type: str, message: str, static_server: Any, fetcher: Any
) -> None:
    path = f"/garbage/{abs(hash(body))}.json"
    static_server.routes[path] = lambda h: (200, {"Content-Type": content_type}, body)
    with pytest.raises(ManifestError, match=message) as info:
        load_manifest(f"{static_server.url}{path}", fetcher=fetcher)
    assert f"{static_server.url}{path}" in info.value.message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="no such file"):
        load_manifest(str(tmp_path / "nope.json"))
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ManifestError, match="not valid JSON"):
        load_manifest(str(tmp_path / "bad.json"))

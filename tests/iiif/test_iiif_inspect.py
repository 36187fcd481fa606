"""``inspect_manifest`` and ``collate inspect``: end to end against the real iipsrv of the test
suite (service, level, sizes and tiles from its info.json; regions and where each came from) and on
corpus files; an image service behind a login is reported, never read as an image."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from builders import v3_canvas, v3_image_body, v3_manifest, v3_service2
from PIL import Image

from collation.cli.main import main
from collation.iiif.dryrun import format_inspection, inspect_manifest

CORPUS = Path(__file__).parent / "corpus"


def _manifest(iipsrv: Any, static_server: Any) -> tuple[str, list[Any]]:
    boxes = iipsrv.boxes["P2"][:2]
    canvases = []
    for n, box in enumerate(boxes):
        with Image.open(box.folio) as folio:
            w, h = folio.size
        cid = f"https://example.org/iiif/P2/canvas/{n}"
        service = f"{iipsrv.base}/{iipsrv.identifiers[box.folio]}"
        tag = {  # a tagging annotation without a body
            "id": f"{cid}/box",
            "type": "Annotation",
            "motivation": "tagging",
            "target": f"{cid}#xywh={','.join(str(2 * v) for v in box.xywh)}",
        }
        body = v3_image_body(f"{service}/full/max/0/default.jpg", service=v3_service2(service))
        page = {"id": f"{cid}/tags", "type": "AnnotationPage", "items": [tag]}
        canvases.append(v3_canvas(cid, (2 * w, 2 * h), body=body, annotations=[page]))
    doc = v3_manifest("https://example.org/P2", canvases, "P2")
    return static_server.write_json("inspect/p2.json", doc), boxes


@pytest.mark.slow
def test_inspect_against_iipsrv(iipsrv: Any, static_server: Any, fetcher: Any) -> None:
    url, boxes = _manifest(iipsrv, static_server)
    report = inspect_manifest(url, fetcher=fetcher)
    assert report["manifest"]["version"] == 3 and report["summary"]["canvases"] == 2
    image = report["canvases"][0]["images"][0]
    assert image["image_api_version"] == 2 and image["info"]["level"] == 1
    assert image["info"]["tiles"][0]["width"] == 256 and image["info"]["sizes"]
    with Image.open(boxes[0].folio) as folio:
        assert (image["info"]["width"], image["info"]["height"]) == folio.size
    assert [r["xywh"] for r in report["regions"]] == [[2 * v for v in b.xywh] for b in boxes]
    assert [r["annotation_id"] for r in report["regions"]] == [
        f"https://example.org/iiif/P2/canvas/{n}/box" for n in range(2)
    ]
    assert report["problems"] == [] and report["summary"]["info_read"] == 2
    json.dumps(report)  # JSON-ready
    assert "region 1: canvas 1" in format_inspection(report)


def test_login_required_is_a_clear_problem(static_server: Any, fetcher: Any) -> None:
    base = f"{static_server.url}/auth/img"
    static_server.routes["/auth/img/info.json"] = lambda handler: (
        401,
        {"Content-Type": "text/html"},
        b"<html>please log in</html>",
    )
    doc = json.loads((CORPUS / "cookbook-0021-tagging.json").read_text())
    body = doc["items"][0]["items"][0]["items"][0]["body"]
    body["service"] = [
        {
            "id": base,
            "type": "ImageService3",
            "profile": "level1",
            "service": [
                {
                    "id": f"{static_server.url}/auth/probe",
                    "type": "AuthProbeService2",
                    "service": [
                        {"id": f"{static_server.url}/login", "type": "AuthAccessService2", "profile": "active"}
                    ],
                }
            ],
        }
    ]
    url = static_server.write_json("auth/manifest.json", doc)
    report = inspect_manifest(url, fetcher=fetcher)
    assert report["canvases"][0]["images"][0]["info"] is None
    assert [p["message"] for p in report["problems"]] == [
        f"image service {base}: login required at {static_server.url}/login (HTTP 401)"
    ]


def test_inspect_a_corpus_file_from_the_command_line(capsys: Any) -> None:
    assert main(["inspect", str(CORPUS / "cookbook-0036-composition.json"), "--json", "--max-info", "0"]) == 0
    report = json.loads(capsys.readouterr().out)
    images = report["canvases"][0]["images"]
    assert [i["target"] for i in images] == [None, [3949, 994, 1091, 1232]]
    assert report["summary"]["regions"] == 0 and report["problems"]  # no annotations: it says so
    assert main(["inspect", str(CORPUS / "cookbook-0040-rotation.json"), "--max-info", "0"]) == 0
    assert "rotation 90" in capsys.readouterr().out


def test_fetching_a_region_behind_a_login_says_where_to_log_in(static_server: Any, fetcher: Any) -> None:
    from collation.core.errors import FetchError
    from collation.iiif.fetch import fetch_region
    from collation.iiif.manifests import load_manifest
    from collation.iiif.regions import find_regions

    static_server.routes["/locked/img/info.json"] = lambda handler: (401, {"Content-Type": "text/html"}, b"<html/>")
    doc = json.loads((CORPUS / "cookbook-0021-tagging.json").read_text())
    doc["items"][0]["items"][0]["items"][0]["body"]["service"] = [
        {
            "@id": f"{static_server.url}/locked/img",
            "@type": "ImageService2",
            "profile": "http://iiif.io/api/image/2/level1.json",
            "service": {"@id": f"{static_server.url}/login", "profile": "http://iiif.io/api/auth/1/login"},
        }
    ]
    doc["items"][0]["items"][0]["items"][0]["body"]["id"] = f"{static_server.url}/locked/none.jpg"
    manifest = load_manifest(static_server.write_json("locked/manifest.json", doc), fetcher=fetcher)
    region = find_regions(manifest)[0][0]
    with pytest.raises(FetchError, match=f"login required at {static_server.url}/login"):
        fetch_region(region, manifest.canvases[0], fetcher=fetcher)

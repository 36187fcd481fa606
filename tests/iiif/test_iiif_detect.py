"""Regions by detection on manifests without region annotations (collation.iiif.detected, sources):
one reduced-size request per canvas, boxes mapped to canvas units, the record line, the problems
of canvases whose image failed, and never zero regions without a word."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from builders import v3_canvas, v3_image_body, v3_manifest, v3_region_annotation
from test_detection import iou, page

from collation.core.errors import InputError
from collation.iiif.detected import DETECT_LONG_SIDE
from collation.iiif.dryrun import format_inspection, inspect_manifest
from collation.iiif.manifests import parse_manifest
from collation.iiif.regions import Region
from collation.iiif.sources import list_regions, load_manuscript_regions, select_regions
from collation.publish.parts import UrlScheme
from collation.publish.viewer_layer import build_annotation_page, build_derived_manifest

SCALE = 2  # canvases twice the size of the images served, like the Vatican's
BOXES = [[(120, 300, 520, 400)], [], [(100, 90, 540, 330), (150, 620, 460, 330)]]
TEXT = [[(90, 80, 670, 290), (90, 720, 670, 980)], [(90, 80, 670, 980)], [(90, 440, 670, 600)]]
"""Drawings (x, y, w, h in image pixels) on the three folios: one, none (script only), two."""


def _folios(server: Any, name: str, missing: tuple[int, ...] = ()) -> tuple[str, list[str]]:
    """A Presentation 3 manifest of static folio images (no annotations); ``missing`` folios are not
    on the server. Returns (manifest URL, canvas ids)."""
    canvases, ids = [], []
    for n, boxes in enumerate(BOXES):
        image = page(drawings=boxes, text=TEXT[n], seed=n)
        relative = f"detect/{name}/f{n}.jpg"
        if n not in missing:
            (server.root / relative).parent.mkdir(parents=True, exist_ok=True)
            image.save(server.root / relative, quality=90)
        canvas_id = f"{server.url}/detect/{name}/canvas/{n}"
        size = (image.width * SCALE, image.height * SCALE)
        canvases.append(
            v3_canvas(canvas_id, size, body=v3_image_body(f"{server.url}/{relative}", image.size), label=f"f{n}")
        )
        ids.append(canvas_id)
    return server.write_json(f"detect/{name}/manifest.json", v3_manifest(f"{server.url}/detect/{name}", canvases)), ids


def test_a_manifest_without_annotations_is_detected_in_canvas_units(static_server: Any, fetcher: Any) -> None:
    url, ids = _folios(static_server, "plain")
    before = len(static_server.paths("/detect/plain/f"))
    result = load_manuscript_regions(url, fetcher=fetcher)
    assert result.source == "detected"
    assert result.note == "no region annotations: 3 illustrations detected on 2 of 3 canvases"
    assert result.problems == []  # "the manifest links no annotations" is replaced by the note
    assert [r.canvas_id for r in result.regions] == [ids[0], ids[2], ids[2]]
    assert [r.index for r in result.regions] == [0, 1, 2]
    truth = [BOXES[0][0], BOXES[2][0], BOXES[2][1]]
    for region, box in zip(result.regions, truth, strict=True):
        assert iou(region.xywh, tuple(v * SCALE for v in box)) >= 0.7, (region, box)
        assert 0.5 <= region.score <= 1.0 and "detected illustration" in region.label
    assert [img.size for img in result.images] == [(352, round(352 * r.xywh[3] / r.xywh[2])) for r in result.regions]
    # one request per folio for detection (static images: the file; the fetcher's cache serves the crops)
    assert len(static_server.paths("/detect/plain/f")) - before == 3
    assert Region.from_dict(result.regions[0].to_dict()) == result.regions[0]


def test_failed_canvases_are_problems_and_nothing_found_is_said(static_server: Any, fetcher: Any) -> None:
    url, ids = _folios(static_server, "partial", missing=(0,))
    result = load_manuscript_regions(url, fetcher=fetcher)
    assert [r.canvas_id for r in result.regions] == [ids[2], ids[2]]
    assert result.note == (
        "no region annotations: 2 illustrations detected on 1 of 3 canvases (1 could not be searched)"
    )
    assert [p.canvas_id for p in result.problems] == [ids[0]]
    assert "could not be loaded for detection" in result.problems[0].message

    url, ids = _folios(static_server, "gone", missing=(0, 1, 2))
    with pytest.raises(InputError, match=r"no illustration regions found.*could not be loaded for detection"):
        load_manuscript_regions(url, fetcher=fetcher)
    result = load_manuscript_regions(url, fetcher=fetcher, require_regions=False)  # the service's way
    assert result.regions == [] and result.source == "detected"
    messages = [p.message for p in result.problems]
    assert len(messages) == 4 and all("could not be loaded for detection" in m for m in messages[:3])
    assert messages[3] == (
        "no region annotations: 0 illustrations detected on 0 of 3 canvases (3 could not be "
        "searched) (no canvas image could be loaded)"
    )


def test_script_only_pages_are_detected_and_found_empty_with_a_word(
    static_server: Any, fetcher: Any, tmp_path: Path
) -> None:
    _folios(static_server, "text")
    doc = json.loads((static_server.root / "detect/text/manifest.json").read_text())
    doc["items"] = [doc["items"][1]]  # the script-only folio
    path = tmp_path / "text.json"
    path.write_text(json.dumps(doc))
    result = load_manuscript_regions(str(path), fetcher=fetcher, require_regions=False)
    assert result.regions == [] and [p.message for p in result.problems] == [
        "no region annotations: 0 illustrations detected on 0 of 1 canvas"
    ]


def test_detect_true_replaces_annotations_and_false_keeps_them(
    static_server: Any, fetcher: Any, tmp_path: Path
) -> None:
    url, ids = _folios(static_server, "annotated")
    doc = json.loads((static_server.root / "detect/annotated/manifest.json").read_text())
    doc["items"][0]["annotations"] = [
        {
            "id": f"{ids[0]}/a",
            "type": "AnnotationPage",
            "items": [v3_region_annotation(f"{ids[0]}/a/1", f"{ids[0]}#xywh=10,10,100,100")],
        }
    ]
    path = tmp_path / "annotated.json"
    path.write_text(json.dumps(doc))
    annotated = select_regions(str(path), fetcher=fetcher)
    assert annotated.source == "annotations" and [r.xywh for r in annotated.regions] == [(10, 10, 100, 100)]
    assert annotated.note is None and annotated.regions[0].score is None
    detected = select_regions(str(path), fetcher=fetcher, detect=True)
    assert detected.source == "detected" and len(detected.regions) == 3
    assert detected.note.startswith("illustrations detected as asked (annotations not used): 3 illustrations")
    with pytest.raises(InputError, match="one of them"):
        select_regions(str(path), fetcher=fetcher, detect=True, whole_canvases=True)
    # list_regions (``collate regions``) fetches no pixels unless asked
    _, regions, problems = list_regions(url, fetcher=fetcher)
    assert regions == [] and "links no annotations" in problems[0].message


def test_inspect_shows_the_regions_detection_would_use(static_server: Any, fetcher: Any) -> None:
    url, ids = _folios(static_server, "inspect")
    report = inspect_manifest(url, fetcher=fetcher)
    assert report["regions_source"] == "detected"
    assert report["regions_note"] == "no region annotations: 3 illustrations detected on 2 of 3 canvases"
    assert [r["canvas_id"] for r in report["regions"]] == [ids[0], ids[2], ids[2]]
    assert all(0.5 <= r["score"] <= 1 for r in report["regions"])
    text = format_inspection(report)
    assert "no region annotations: 3 illustrations detected" in text and "(detected, score " in text
    assert inspect_manifest(url, fetcher=fetcher, detect=False)["regions"] == []


def test_detected_regions_are_shown_in_the_viewer_layer(static_server: Any, fetcher: Any) -> None:
    url, _ = _folios(static_server, "viewer")
    result = load_manuscript_regions(url, fetcher=fetcher)
    other = parse_manifest({**result.manifest.raw, "id": "https://example.org/other"}, url="https://example.org/other")
    manuscripts = [(result.manifest, result.regions), (other, [])]
    urls = UrlScheme("https://collation.test/c/1")
    page_doc = build_annotation_page(0, 3, manuscripts, [], urls=urls)
    items = page_doc["items"]
    assert len(items) == 2 and all(a["motivation"] == "commenting" for a in items)
    assert [a["target"]["selector"]["value"] for a in items] == [
        "xywh={},{},{},{}".format(*r.xywh) for r in result.regions[1:]
    ]
    assert items[0]["imcol:detectionScore"] == result.regions[1].score
    assert "Illustration found by detection" in items[0]["body"][0]["value"]
    manifest = build_derived_manifest(0, manuscripts, [], urls=urls)
    assert [bool(c.get("annotations")) for c in manifest["items"]] == [True, False, True]
    assert DETECT_LONG_SIDE >= 1000

"""Manifests without region annotations in the service (in-process RQ worker, real Redis): detected
by default with the record saying so, ``{"detect": true}``, detected regions replaced by POSTed
ones, and a manuscript where nothing can be found never ends without a word."""

from __future__ import annotations

import json
from typing import Any

from PIL import Image
from service_helpers import status, submit

from collation.jobs.manuscripts import region_arguments

API = "/api/v1"


def test_region_arguments_and_the_detect_field_of_the_request(api: Any) -> None:
    assert region_arguments({"detect": True}) == {"detect": True}
    assert region_arguments({"detect": False}) == {"detect": False}
    assert region_arguments(None) == {} and region_arguments({}) == {}
    for spec in ({"detect": True, "whole_canvases": True}, {"detect": True, "selector": "tag=x"}, {"detect": "maybe"}):
        r = api.post(f"{API}/collations", json={"manifests": ["http://h/a", "http://h/b"], "regions": {"0": spec}})
        assert r.status_code == 400, spec


def test_no_annotations_detected_then_replaced_by_given_regions(api: Any, synthetic: Any, run_jobs: Any) -> None:
    cid = submit(api, [synthetic.a, synthetic.b])  # B is published without annotations
    run_jobs()
    doc = status(api, cid)
    assert doc["status"] == "finished", doc
    a, b = doc["manuscripts"]
    assert (a["regions_source"], a["regions_note"]) == ("annotations", None)
    assert b["regions_source"] == "detected" and b["errors"] == [] and b["regions"] >= synthetic.n - 1
    assert b["regions_note"].startswith(f"no region annotations: {b['regions']} illustrations detected on ")
    assert b["regions_note"].endswith(f" of {synthetic.n} canvases")
    corr = api.get(f"{API}/collations/{cid}/correspondences?pair=1,0&top=1").get_json()
    canvases = sorted({int(i["source"]["canvas"].rsplit("/", 1)[-1]) for i in corr["items"]})
    page = api.get(f"{API}/collations/{cid}/pages/1/{canvases[0] + 1}").get_json()  # B is 2.1: an AnnotationList
    detected = [r for r in page["resources"] if "imcol:detectionScore" in r]
    assert len(detected) == 1 and 0.5 <= detected[0]["imcol:detectionScore"] <= 1
    assert "Illustration found by detection" in detected[0]["resource"][0]["chars"]
    manifest = api.get(f"{API}/collations/{cid}/manifests/1").get_json()
    assert sum(bool(c.get("otherContent")) for c in manifest["sequences"][0]["canvases"]) == len(canvases)

    given = submit(api, [synthetic.a, synthetic.b], regions={"1": synthetic.b_regions})  # replace them
    explicit = submit(api, [synthetic.a, synthetic.b], regions={"0": {"detect": True}, "1": {"detect": False}})
    run_jobs()
    doc = status(api, given)
    assert [(m["regions_source"], m["regions"]) for m in doc["manuscripts"]] == [("annotations", 4), ("given", 4)]
    corr = api.get(f"{API}/collations/{given}/correspondences?pair=1,0&top=1").get_json()
    assert [i["source"]["xywh"] for i in corr["items"]] == [r["xywh"] for r in synthetic.b_regions]
    page = api.get(f"{API}/collations/{given}/pages/1/1").get_json()
    assert not [r for r in page["resources"] if "imcol:detectionScore" in r]
    doc = status(api, explicit)
    a, b = doc["manuscripts"]
    assert a["regions_source"] == "detected" and a["regions_note"].startswith("illustrations detected as asked")
    assert b["regions_source"] == "annotations" and b["regions"] == 0 and b["status"] == "failed"
    assert b["errors"][-1]["message"] == "no illustration regions found in this manifest"


def test_a_manuscript_whose_images_all_fail_says_why(api: Any, synthetic: Any, site: Any, run_jobs: Any) -> None:
    doc = json.loads((site.root / "B" / "manifest.json").read_text())
    text = json.dumps(doc).replace(f"{site.url}/B/f", f"{site.url}/B/gone-f")
    broken = site.write_json("B/all-gone.json", {**json.loads(text), "@id": f"{site.url}/B/all-gone.json"})
    blank = Image.new("RGB", (420, 600), (250, 245, 235))  # a page with nothing on it
    blank.save(site.root / "B" / "blank.jpg")
    empty = json.loads(json.dumps(doc).replace(f"{site.url}/B/f0.jpg", f"{site.url}/B/blank.jpg"))
    empty["sequences"][0]["canvases"] = empty["sequences"][0]["canvases"][:1]
    empty = site.write_json("B/blank.json", {**empty, "@id": f"{site.url}/B/blank.json"})
    cid = submit(api, [synthetic.a, broken, empty])
    run_jobs()
    doc = status(api, cid)
    gone, nothing = doc["manuscripts"][1:]
    assert gone["status"] == "failed" and gone["regions"] == 0 and gone["regions_source"] == "detected"
    messages = [e["message"] for e in gone["errors"]]
    assert len(messages) == synthetic.n + 1
    assert all("could not be loaded for detection" in m for m in messages[:-1])
    assert messages[-1].endswith("(no canvas image could be loaded)")
    assert nothing["status"] == "failed" and nothing["regions_source"] == "detected"
    assert [e["message"] for e in nothing["errors"]] == [
        "no region annotations: 0 illustrations detected on 0 of 1 canvas"
    ]

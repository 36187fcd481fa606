"""Detection for review on the workers (``POST /detections``, issue 39, item 1): Manuscript B (no region
annotations, one drawing per folio) searched page by page by the in-process RQ worker on the real Redis,
the document saved after each batch of pages with the pages done and the regions so far; ``GET /inspect``
detects only in a manifest of at most ``detect_up_to`` pages (or never with ``detect=false``). Every
response is checked against ``openapi.yaml``."""

from __future__ import annotations

from typing import Any

import pytest

from collation.jobs import review

API = "/api/v1"


def test_the_pages_are_searched_on_the_workers_and_counted_as_they_are_done(
    api: Any, synthetic: Any, run_jobs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = api.get(f"{API}/inspect", query_string={"manifest": synthetic.b, "detect_up_to": 3}).get_json()
    assert report["regions"] == [] and report["summary"]["canvases"] == synthetic.n  # too long: not detected there
    report = api.get(f"{API}/inspect", query_string={"manifest": synthetic.b, "detect_up_to": 4}).get_json()
    assert len(report["regions"]) == synthetic.n and report["regions_source"] == "detected"
    report = api.get(f"{API}/inspect", query_string={"manifest": synthetic.b, "detect": "false"}).get_json()
    assert report["regions"] == []
    r = api.post(f"{API}/detections", json={"manifest": synthetic.b})
    assert r.status_code == 202, r.get_json()
    did = r.get_json()["id"]
    assert r.headers["Location"].endswith(f"/detections/{did}") and r.get_json()["status"] == "queued"
    saved: list[tuple[str, int, int]] = []
    save = review._save
    monkeypatch.setattr(review, "BATCH", 1)  # one page a batch: the document after each page
    monkeypatch.setattr(
        review,
        "_save",
        lambda store, doc: (saved.append((doc["status"], doc["done"], len(doc["regions"]))), save(store, doc)),
    )
    run_jobs()
    doc = api.get(f"{API}/detections/{did}").get_json()
    assert (doc["status"], doc["done"], doc["total"]) == ("finished", synthetic.n, synthetic.n)
    assert [r["canvas_index"] for r in doc["regions"]] == list(range(synthetic.n))  # one drawing a folio
    assert [r["index"] for r in doc["regions"]] == list(range(synthetic.n)) and doc["problems"] == []
    assert saved == [("running", 0, 0)] + [("running", k, k) for k in range(1, synthetic.n + 1)] + [
        ("finished", synthetic.n, synthetic.n)
    ]


def test_a_detection_of_a_missing_manifest_fails_in_words_and_unknown_ids_are_404(
    api: Any, synthetic: Any, run_jobs: Any
) -> None:
    did = api.post(f"{API}/detections", json={"manifest": synthetic.broken}).get_json()["id"]
    run_jobs()
    doc = api.get(f"{API}/detections/{did}").get_json()
    assert doc["status"] == "failed" and "404" in doc["error"]
    assert api.get(f"{API}/detections/{'0' * 16}").status_code == 404
    assert api.get(f"{API}/detections/nope").status_code == 404
    assert api.post(f"{API}/detections", json={"manifest": "ftp://x"}).status_code == 400


class OneBox:
    """A detector that finds the upper left quarter of every page (as a model file would load)."""

    name = "one box"

    def __call__(self, image: Any) -> list[Any]:
        from collation.engine import detection

        return [detection.Detection((0, 0, image.width // 2, image.height // 2), 0.9, "miniature")]


def test_the_pages_are_searched_with_the_detector_of_the_collations(
    api: Any, synthetic: Any, run_jobs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's detector (``Runtime.detector``: ``COLLATION_DETECTOR_MODEL`` and its floor), not the
    built-in one whatever the settings: the regions reviewed are those the collation would find."""
    from collation.engine import detection

    monkeypatch.setattr(detection, "load_detector", lambda *args, **kwargs: OneBox())
    did = api.post(f"{API}/detections", json={"manifest": synthetic.b}).get_json()["id"]
    run_jobs()
    doc = api.get(f"{API}/detections/{did}").get_json()
    assert doc["status"] == "finished" and len(doc["regions"]) == synthetic.n
    assert {(r["xywh"][0], r["xywh"][1], r["score"]) for r in doc["regions"]} == {(0, 0, 0.9)}


def test_the_inspection_detects_with_the_detector_of_the_collations(
    api: Any, synthetic: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A short manuscript detected by ``GET /inspect`` itself: with the collations' detector too (it used
    the built-in one whatever ``COLLATION_DETECTOR_MODEL`` said)."""
    from collation.engine import detection

    monkeypatch.setattr(detection, "load_detector", lambda *args, **kwargs: OneBox())
    report = api.get(f"{API}/inspect", query_string={"manifest": synthetic.b, "detect_up_to": 4}).get_json()
    assert report["regions_source"] == "detected" and len(report["regions"]) == synthetic.n
    assert {(r["xywh"][0], r["xywh"][1]) for r in report["regions"]} == {(0, 0)}

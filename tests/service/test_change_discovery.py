"""IIIF Change Discovery 1.0 (``GET /activity``): the activities of a finished collation's annotation
collection and derived manifests (Create when it ended, Update at a verdict, Delete when it is
deleted), paged as the specification requires; its own complete examples (``tests/iiif/spec``) pass
the same checks, and a harvester following its processing algorithm (3.5) ends with what is published."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from service_helpers import OpenAPIClient
from test_concordance_api import API, CID, write_three_witnesses

from collation.app import create_app
from collation.core.settings import Settings
from collation.service.state import service_state

HOST = "http://collation.test"
SPEC = Path(__file__).parents[1] / "iiif" / "spec"
CONTEXT = "http://iiif.io/api/discovery/1/context.json"
ENDED = "2026-01-02T03:04:05Z"


def collection_musts(doc: dict[str, Any]) -> list[str]:
    """The MUSTs of the specification's 3.1 and 3.4.1 an OrderedCollection fails."""
    failed = [] if doc.get("@context") == CONTEXT else ["@context"]
    failed += (
        [] if doc.get("type") == "OrderedCollection" and str(doc.get("id", "")).startswith("http") else ["id/type"]
    )
    for name in ("first", "last"):  # last is required, first recommended: both are written
        ref = doc.get(name) or {}
        failed += [] if ref.get("type") == "OrderedCollectionPage" and ref.get("id", "").startswith("http") else [name]
    total = doc.get("totalItems", 0)
    return failed + ([] if isinstance(total, int) and total >= 0 else ["totalItems"])


def page_musts(doc: dict[str, Any], first: bool) -> list[str]:
    """The MUSTs of the specification's 3.2 and 3.3 a page fails (``first``: it needs no ``prev``)."""
    failed = [] if doc.get("@context") == CONTEXT and doc.get("type") == "OrderedCollectionPage" else ["type"]
    failed += [] if (doc.get("partOf") or {}).get("type") == "OrderedCollection" else ["partOf"]
    failed += [] if first or (doc.get("prev") or {}).get("type") == "OrderedCollectionPage" else ["prev"]
    items = doc.get("orderedItems")
    if not isinstance(items, list):
        return [*failed, "orderedItems"]
    for k, item in enumerate(items):
        ok = item.get("type") in ("Create", "Update", "Delete") and item.get("object", {}).get("id", "").startswith(
            "http"
        )
        ok = ok and bool(item["object"].get("type")) and str(item.get("endTime", "")).endswith("Z")
        failed += [] if ok else [f"orderedItems[{k}]"]
    stamps = [item.get("endTime", "") for item in items]
    return failed + ([] if stamps == sorted(stamps) else ["orderedItems order"])


def test_the_specification_s_examples_pass_the_checks() -> None:
    assert collection_musts(json.loads((SPEC / "discovery-1.0-collection.json").read_text())) == []
    assert page_musts(json.loads((SPEC / "discovery-1.0-page.json").read_text()), first=False) == []


@pytest.fixture
def finished_api(tmp_path: Path, redis_url: str, openapi: dict[str, Any]) -> Any:
    store = write_three_witnesses(tmp_path / "data")
    store.update_record(CID, lambda record: setattr(record, "ended", ENDED))
    settings = Settings.from_env({}, data_dir=store.root, redis_url=redis_url, public_url=HOST, page_size=3)
    app = create_app(settings, TESTING=True)
    yield OpenAPIClient(app.test_client(), openapi)
    service_state(app).close()


def harvest(finished_api: Any) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The specification's collection and page algorithms (3.5.1-2): from ``last`` backwards, the most
    recent activity of each object decides; (object id -> its last activity's type, the pages read)."""
    collection = finished_api.get("/api/v1/activity").get_json()
    assert collection_musts(collection) == []
    state: dict[str, str] = {}
    pages, url = [], collection["last"]["id"]
    while url:
        page = finished_api.get(url.removeprefix(HOST)).get_json()
        assert page_musts(page, first=url == collection["first"]["id"]) == [], page
        pages.insert(0, page)
        for activity in reversed(page["orderedItems"]):
            state.setdefault(activity["object"]["id"], activity["type"])
        url = page.get("prev", {}).get("id")
    assert [p["startIndex"] for p in pages] == [3 * n for n in range(len(pages))]
    assert sum(len(p["orderedItems"]) for p in pages) == collection["totalItems"]
    return state, pages


def test_a_collation_is_created_updated_and_deleted_in_the_feed(finished_api: Any) -> None:
    root = f"{HOST}{API}"
    objects = [f"{root}/annotations", *(f"{root}/manifests/{m}" for m in range(3))]
    state, pages = harvest(finished_api)
    assert state == dict.fromkeys(objects, "Create")
    items = [item for page in pages for item in page["orderedItems"]]
    assert {item["endTime"] for item in items} == {ENDED}
    assert {item["object"]["type"] for item in items} == {"AnnotationCollection", "Manifest"}
    assert finished_api.get(f"{API}/manifests/2").status_code == 200  # each object is there at its URI

    verdict = {"pair": [0, 1], "source": 1, "target": 1, "verdict": "confirmed"}
    created = finished_api.post(f"{API}/assessments", json=verdict).get_json()["created"]
    state, pages = harvest(finished_api)
    assert state == dict.fromkeys(objects, "Update")
    updates = [i for p in pages for i in p["orderedItems"] if i["type"] == "Update"]
    assert len(updates) == 4 and {i["endTime"] for i in updates} == {created}

    assert finished_api.delete(API).status_code == 204
    state, pages = harvest(finished_api)
    assert state == dict.fromkeys(objects, "Delete")  # the harvester drops all four
    assert finished_api.get(f"{API}/manifests/0").status_code == 404
    # the deleted collation's Create and Update left with it: its four Deletes remain, on two pages
    assert [len(p["orderedItems"]) for p in pages] == [3, 1] and finished_api.get(
        "/api/v1/activity?page=2"
    ).status_code == 404

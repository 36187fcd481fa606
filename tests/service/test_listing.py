"""``GET /api/v1/collations``: newest first, paged, filtered by status, and, with tokens, only the
caller's own collations. Every response is checked against ``openapi.yaml`` by the ``api`` fixture."""

from __future__ import annotations

from typing import Any

import pytest

from collation.app import create_app
from collation.core.settings import Settings
from collation.service.state import service_state

PROBLEM = "application/problem+json"


def body(synthetic: Any, seed: int) -> dict[str, Any]:
    return {"manifests": [synthetic.a, synthetic.b], "regions": {"1": synthetic.b_regions}, "options": {"seed": seed}}


def submit(api: Any, synthetic: Any, seed: int, created: str, **kwargs: Any) -> str:
    """Submits a collation and dates it ``created`` (records are stamped to the second)."""
    r = api.post("/api/v1/collations", json=body(synthetic, seed), **kwargs)
    assert r.status_code == 202, r.get_json()
    cid = r.get_json()["id"]
    store = service_state(api.client.application).runtime.store
    store.update_record(cid, lambda record: setattr(record, "created", created))
    return cid


def test_list_is_newest_first_paged_and_filtered(api: Any, synthetic: Any) -> None:
    assert api.get("/api/v1/collations").get_json()["items"] == []
    old = submit(api, synthetic, 1, "2026-01-01T00:00:00Z")
    new = submit(api, synthetic, 2, "2026-03-01T00:00:00Z")
    mid = submit(api, synthetic, 3, "2026-02-01T00:00:00Z")
    doc = api.get("/api/v1/collations").get_json()
    assert [item["id"] for item in doc["items"]] == [new, mid, old] and doc["total"] == 3
    first = doc["items"][0]
    assert [w["manifest"] for w in first["witnesses"]] == [synthetic.a, synthetic.b]
    assert first["status"] == "queued" and first["progress"]["stage"] == "queued"
    assert first["links"]["status"].endswith(f"/api/v1/collations/{new}")
    assert first["links"]["view"].endswith(f"/collations/{new}/view")
    assert first["links"]["concordance_view"].endswith(f"/collations/{new}/concordance/view")

    page1 = api.get("/api/v1/collations?limit=2").get_json()
    assert [i["id"] for i in page1["items"]] == [new, mid] and "prev" not in page1["links"]
    page2 = api.get("/" + page1["links"]["next"].split("/", 3)[3]).get_json()
    assert [i["id"] for i in page2["items"]] == [old] and page2["page"] == 2 and "next" not in page2["links"]

    store = service_state(api.client.application).runtime.store
    store.update_record(mid, lambda record: setattr(record, "status", "failed"))
    assert [i["id"] for i in api.get("/api/v1/collations?status=failed").get_json()["items"]] == [mid]
    both = api.get("/api/v1/collations?status=failed,queued").get_json()
    assert [i["id"] for i in both["items"]] == [new, mid, old]
    assert api.get("/api/v1/collations?status=finished").get_json() == {
        "total": 0,
        "page": 1,
        "limit": 20,
        "items": [],
        "links": {},
    }


@pytest.mark.parametrize(
    ("query", "field"),
    [("status=done", "status"), ("limit=0", "limit"), ("limit=101", "limit"), ("page=0", "page"), ("page=x", "page")],
)
def test_bad_queries_are_problems_naming_the_field(api: Any, query: str, field: str) -> None:
    r = api.get(f"/api/v1/collations?{query}")
    assert r.status_code == 400 and r.headers["Content-Type"].startswith(PROBLEM)
    doc = r.get_json()
    assert field in (doc.get("field"), *(e["field"] for e in doc.get("errors", []))), doc
    assert doc["type"] == "about:blank" and "Traceback" not in r.get_data(as_text=True)


@pytest.fixture
def token_api(settings: Settings, openapi: dict[str, Any]) -> Any:
    from service_helpers import OpenAPIClient

    app = create_app(settings.replace(api_tokens=("s3cret", "other")), TESTING=True)
    yield OpenAPIClient(app.test_client(), openapi)
    service_state(app).close()


def test_with_tokens_each_caller_lists_its_own(token_api: Any, synthetic: Any) -> None:
    mine = {"Authorization": "Bearer s3cret"}
    theirs = {"Authorization": "Bearer other"}
    a = submit(token_api, synthetic, 1, "2026-01-01T00:00:00Z", headers=mine)
    b = submit(token_api, synthetic, 2, "2026-02-01T00:00:00Z", headers=theirs)
    assert [i["id"] for i in token_api.get("/api/v1/collations", headers=mine).get_json()["items"]] == [a]
    assert [i["id"] for i in token_api.get("/api/v1/collations", headers=theirs).get_json()["items"]] == [b]
    assert token_api.get("/api/v1/collations").get_json()["items"] == []  # no token: nothing listed
    r = token_api.get("/api/v1/collations", headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401 and r.get_json()["field"] == "Authorization"
    # the same request made with the other token is a collation of its own: A's is not listed for it
    again = token_api.post("/api/v1/collations", json=body(synthetic, 1), headers=theirs)
    assert again.get_json()["id"] != a and again.get_json()["created"] is True
    assert [i["id"] for i in token_api.get("/api/v1/collations", headers=theirs).get_json()["items"]] == [
        again.get_json()["id"],
        b,
    ]
    assert [i["id"] for i in token_api.get("/api/v1/collations", headers=mine).get_json()["items"]] == [a]
    record = service_state(token_api.client.application).runtime.store.load_record(a)
    assert "s3cret" not in str(record) and len(record.owners) == 1  # a hash, never the token


def test_the_list_reads_only_the_records_that_changed(api: Any, synthetic: Any, monkeypatch: Any) -> None:
    """One listing of the store's versions per request; a record is read again only when its version
    changed (on an object store, one request instead of one per collation)."""
    cids = [submit(api, synthetic, seed, f"2026-01-0{seed}T00:00:00Z") for seed in (1, 2, 3)]
    store = service_state(api.client.application).runtime.store
    reads: list[str] = []
    load = store.load_record
    monkeypatch.setattr(store, "load_record", lambda cid: reads.append(cid) or load(cid))
    assert api.get("/api/v1/collations").get_json()["total"] == 3
    assert sorted(reads) == sorted(cids)  # the first listing reads each record once
    reads.clear()
    assert [i["id"] for i in api.get("/api/v1/collations").get_json()["items"]] == cids[::-1]
    assert reads == []
    store.update_record(cids[0], lambda record: setattr(record, "status", "failed"))
    reads.clear()
    doc = api.get("/api/v1/collations?status=failed").get_json()
    assert [i["id"] for i in doc["items"]] == [cids[0]] and reads == [cids[0]]

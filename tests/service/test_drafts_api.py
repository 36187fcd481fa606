"""Drafts of a collation-to-be (``/drafts``, issue 39, item 6): created, read back and replaced through the
API, every response checked against ``openapi.yaml``; bad bodies and unknown ids are problems naming the
field; the undo history is bounded."""

from __future__ import annotations

from typing import Any

API = "/api/v1"
BOX = {"canvas": "https://lib.example.org/ms/canvas/1", "xywh": [10, 20, 300, 200]}


def test_a_draft_is_created_read_and_replaced(api: Any) -> None:
    body = {"text": "https://lib.example.org/ms/manifest.json\n", "regions": {"https://x/m.json": [BOX]}}
    r = api.post(f"{API}/drafts", json=body)
    assert r.status_code == 201, r.get_json()
    doc = r.get_json()
    assert r.headers["Location"].endswith(f"/drafts/{doc['id']}") and len(doc["id"]) == 16
    assert api.get(f"{API}/drafts/{doc['id']}").get_json() == doc
    editor = {"regions": [BOX], "history": ["[]", '[{"id": "box-1"}]'], "at": 1}
    r = api.put(f"{API}/drafts/{doc['id']}", json={"text": "changed", "editors": {"https://x/m.json": editor}})
    assert r.status_code == 200
    again = api.get(f"{API}/drafts/{doc['id']}").get_json()
    assert again["text"] == "changed" and again["regions"] == {} and again["created"] == doc["created"]
    assert again["editors"]["https://x/m.json"] == {**editor, "regions": [{**BOX, "xywh": [10.0, 20.0, 300.0, 200.0]}]}


def test_bad_drafts_and_unknown_ids_are_problems_naming_the_field(api: Any) -> None:
    for body, field in (
        ({"text": 5}, "text"),
        ({"regions": {"u": [{"canvas": "c", "xywh": [1, 2, 3]}]}}, "regions"),
        ({"editors": {"u": {"at": -1}}}, "editors"),
    ):
        r = api.post(f"{API}/drafts", json=body)
        assert r.status_code == 400 and r.get_json()["field"].startswith(field), (body, r.get_json())
    assert api.get(f"{API}/drafts/{'0' * 16}").status_code == 404
    assert api.get(f"{API}/drafts/not-an-id").status_code == 404
    assert api.put(f"{API}/drafts/{'0' * 16}", json={}).status_code == 404


def test_the_undo_history_keeps_its_newest_steps(api: Any) -> None:
    editor = {"history": [str(k) for k in range(250)], "at": 240}
    doc = api.post(f"{API}/drafts", json={"editors": {"u": editor}}).get_json()
    kept = doc["editors"]["u"]
    assert kept["history"] == [str(k) for k in range(50, 250)] and kept["at"] == 190

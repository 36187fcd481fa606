"""A collation's name (given, trimmed, by default its witnesses' labels, renamed with PATCH, never part of
its id) and the retry of a failed collation (``POST /collations/{id}/retry``: same id, queued again,
409 unless failed). Collations run by the in-process RQ worker on the real Redis over the synthetic
manuscripts; every response is checked against ``openapi.yaml``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from service_helpers import OpenAPIClient

from collation.app import create_app
from collation.core.settings import Settings
from collation.service.state import service_state

API = "/api/v1"


def start(api: Any, manifests: list[str], **extra: Any) -> dict[str, Any]:
    r = api.post(f"{API}/collations", json={"manifests": manifests, **extra})
    assert r.status_code == 202, r.get_json()
    return r.get_json()


def status(api: Any, cid: str) -> dict[str, Any]:
    return api.get(f"{API}/collations/{cid}").get_json()


def stored_record(settings: Settings, cid: str) -> dict[str, Any]:
    return json.loads((settings.data_dir / "collations" / cid / "record.json").read_text())


def listed_names(api: Any) -> dict[str, str]:
    return {item["id"]: item["name"] for item in api.get(f"{API}/collations").get_json()["items"]}


def test_a_given_name_is_trimmed_kept_by_the_same_request_and_not_in_the_id(api: Any, synthetic: Any) -> None:
    first = start(api, [synthetic.a, synthetic.c], name="  Bestiaries, A and C \n")
    again = start(api, [synthetic.a, synthetic.c], name="Another name")
    unnamed = start(api, [synthetic.a, synthetic.c])
    assert again["id"] == unnamed["id"] == first["id"] and first["created"] and not again["created"]
    assert status(api, first["id"])["name"] == "Bestiaries, A and C"  # the first name stays
    assert listed_names(api) == {first["id"]: "Bestiaries, A and C"}


@pytest.mark.parametrize("name", ["", "   ", "x" * 201, 5, None, ["A"]])
def test_a_bad_name_is_a_400_naming_the_field(api: Any, synthetic: Any, name: Any) -> None:
    r = api.post(f"{API}/collations", json={"manifests": [synthetic.a, synthetic.c], "name": name})
    assert r.status_code == 400 and r.get_json()["field"] == "name", r.get_json()
    assert api.get(f"{API}/collations").get_json()["total"] == 0  # nothing stored


def test_the_default_name_is_the_witnesses_labels_stored_once_read(
    api: Any, synthetic: Any, run_jobs: Any, settings: Settings
) -> None:
    cid = start(api, [synthetic.a, synthetic.c])["id"]
    assert status(api, cid)["name"] == "A/manifest.json · C/manifest.json"  # before the manifests are read
    assert "name" not in stored_record(settings, cid)
    run_jobs()
    doc = status(api, cid)
    assert doc["status"] == "finished" and doc["name"] == "Manuscript A · Manuscript C"
    assert stored_record(settings, cid)["name"] == "Manuscript A · Manuscript C"
    assert listed_names(api) == {cid: "Manuscript A · Manuscript C"}


def test_a_rename_changes_the_name_not_the_id(
    api: Any, client: Any, synthetic: Any, run_jobs: Any, settings: Settings
) -> None:
    cid = start(api, [synthetic.a, synthetic.c], name="First")["id"]
    r = api.patch(f"{API}/collations/{cid}", json={"name": "  Physiologus, two witnesses "})
    assert r.status_code == 200 and r.get_json()["id"] == cid and r.get_json()["name"] == "Physiologus, two witnesses"
    run_jobs()  # the labels, read now, do not replace a given name
    assert status(api, cid)["name"] == stored_record(settings, cid)["name"] == "Physiologus, two witnesses"
    for path, heading in (("view", "Physiologus, two witnesses"), ("concordance/view", "Concordance of Physiologus")):
        html = client.get(f"{API}/collations/{cid}/{path}").get_data(as_text=True)
        assert f"<h1>{heading}" in html and f"<title>{heading}" in html  # the pages' title, not the id
    for body in ({"name": " "}, {"name": "y" * 201}, {}, {"name": "ok", "other": 1}):
        r = api.patch(f"{API}/collations/{cid}", json=body)
        assert r.status_code == 400 and r.get_json()["field"] in {"name", "other"}, (body, r.get_json())
    assert api.patch(f"{API}/collations/{'0' * 16}", json={"name": "x"}).status_code == 404
    assert status(api, cid)["name"] == "Physiologus, two witnesses"


def test_only_the_creating_token_renames_or_retries(settings: Settings, openapi: Any, synthetic: Any) -> None:
    app = create_app(settings.replace(api_tokens=("token-of-A", "token-of-B")), TESTING=True)
    try:
        api = OpenAPIClient(app.test_client(), openapi)
        mine = {"Authorization": "Bearer token-of-A"}
        cid = api.post(f"{API}/collations", json={"manifests": [synthetic.a, synthetic.c]}, headers=mine).get_json()
        cid = cid["id"]
        other = {"Authorization": "Bearer token-of-B"}
        r = api.patch(f"{API}/collations/{cid}", json={"name": "Mine now"}, headers=other)
        assert r.status_code == 403 and r.get_json()["field"] == "Authorization"
        assert api.post(f"{API}/collations/{cid}/retry", headers=other).status_code == 403
        r = api.patch(f"{API}/collations/{cid}", json={"name": "Ours"}, headers=mine)
        assert r.status_code == 200 and r.get_json()["name"] == "Ours"
    finally:
        service_state(app).close()


@pytest.fixture
def late_manifest(site: Any, synthetic: Any) -> Iterator[tuple[str, Any]]:
    """A manifest URL that answers 404 until ``publish()`` writes manuscript A's manifest there."""
    path = site.root / "late" / "manifest.json"
    path.unlink(missing_ok=True)

    def publish() -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text((site.root / "A" / "manifest.json").read_text())

    yield f"{site.url}/late/manifest.json", publish
    path.unlink(missing_ok=True)


def test_a_failed_collation_is_retried_under_its_id(
    api: Any, synthetic: Any, run_jobs: Any, late_manifest: tuple[str, Any]
) -> None:
    url, publish = late_manifest
    cid = start(api, [url, synthetic.c], name="Late witness")["id"]
    r = api.post(f"{API}/collations/{cid}/retry")
    assert r.status_code == 409 and r.get_json()["field"] == "status"  # queued, not failed
    run_jobs()
    failed = status(api, cid)
    assert failed["status"] == "failed" and "404" in failed["manuscripts"][0]["errors"][0]["message"]
    publish()  # the library's server answers again
    r = api.post(f"{API}/collations/{cid}/retry")
    assert r.status_code == 202 and r.get_json()["id"] == cid and r.get_json()["status"] == "queued"
    assert r.headers["Location"].endswith(f"/collations/{cid}")
    run_jobs()
    doc = status(api, cid)
    assert doc["status"] == "finished" and doc["errors"] == [] and doc["name"] == "Late witness"
    assert [m["regions"] for m in doc["manuscripts"]] == [synthetic.n, synthetic.n]
    r = api.post(f"{API}/collations/{cid}/retry")
    assert r.status_code == 409 and "finished" in r.get_json()["detail"]
    assert api.post(f"{API}/collations/{'0' * 16}/retry").status_code == 404


def test_an_unnamed_collation_takes_the_label_of_a_witness_read_on_retry(
    api: Any, synthetic: Any, run_jobs: Any, late_manifest: tuple[str, Any], settings: Settings
) -> None:
    """Issue 39, item 7: the witness that could not be read does not freeze the name with the end of its
    address; after a successful retry the name is the witnesses' labels."""
    url, publish = late_manifest
    cid = start(api, [url, synthetic.c])["id"]
    run_jobs()
    assert status(api, cid)["status"] == "failed"
    assert status(api, cid)["name"] == "late/manifest.json · Manuscript C"
    assert "name" not in stored_record(settings, cid)  # not frozen: the witness was not read
    publish()
    assert api.post(f"{API}/collations/{cid}/retry").status_code == 202
    run_jobs()
    doc = status(api, cid)
    assert doc["status"] == "finished" and doc["name"] == "Manuscript A · Manuscript C"
    assert stored_record(settings, cid)["name"] == "Manuscript A · Manuscript C"

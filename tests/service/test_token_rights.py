"""Who may change a collation, with ``COLLATION_API_TOKENS=A,B`` (README, "A public deployment"): the
token that started a collation alone may delete it (finished or running) or record verdicts on it;
another token gets a 403 naming the reason and changes nothing. The same request from another token
is a collation of its own (the id is salted with the token's hash), not a way into the first one.
Without tokens everything stays as open as before. Through the real app; every response is checked
against ``openapi.yaml``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from service_helpers import OpenAPIClient

from collation.app import create_app
from collation.core.settings import Settings
from collation.service.state import service_state

API = "/api/v1"
A = {"Authorization": "Bearer token-of-A"}
B = {"Authorization": "Bearer token-of-B"}
VERDICT = {"pair": [0, 1], "source": 0, "target": 0, "verdict": "exact"}
BATCH = {"members": [{"manuscript": 0, "index": 1}, {"manuscript": 1, "index": 1}], "verdict": "none"}


@pytest.fixture
def two_tokens(settings: Settings, openapi: dict[str, Any]) -> Iterator[OpenAPIClient]:
    app = create_app(settings.replace(api_tokens=("token-of-A", "token-of-B")), TESTING=True)
    yield OpenAPIClient(app.test_client(), openapi)
    service_state(app).close()


def body(synthetic: Any) -> dict[str, Any]:
    return {"manifests": [synthetic.a, synthetic.b], "regions": {"1": synthetic.b_regions}}


def start(api: OpenAPIClient, synthetic: Any, headers: dict[str, str]) -> str:
    r = api.post(f"{API}/collations", json=body(synthetic), headers=headers)
    assert r.status_code == 202, r.get_json()
    return r.get_json()["id"]


def forbidden(response: Any, cid: str) -> str:
    """The 403 problem's detail, checked: it names the token as the reason (field Authorization)."""
    assert response.status_code == 403, response.get_json()
    doc = response.get_json()
    assert response.headers["Content-Type"].startswith("application/problem+json")
    assert doc["field"] == "Authorization" and doc["title"] == "Forbidden"
    assert f"collation {cid} was started with another token" in doc["detail"]
    return doc["detail"]


def status(api: OpenAPIClient, cid: str) -> str:
    return api.get(f"{API}/collations/{cid}").get_json()["status"]


def test_another_token_cannot_delete_a_running_or_a_finished_collation(
    two_tokens: OpenAPIClient, synthetic: Any, run_jobs: Any
) -> None:
    cid = start(two_tokens, synthetic, A)
    run_jobs(max_jobs=2)  # the manuscripts are being prepared: running
    assert status(two_tokens, cid) == "running"
    assert "may delete it" in forbidden(two_tokens.delete(f"{API}/collations/{cid}", headers=B), cid)
    run_jobs()
    assert status(two_tokens, cid) == "finished"  # B's DELETE stopped nothing
    forbidden(two_tokens.delete(f"{API}/collations/{cid}", headers=B), cid)
    assert status(two_tokens, cid) == "finished"
    assert two_tokens.delete(f"{API}/collations/{cid}", headers=A).status_code == 204
    assert two_tokens.get(f"{API}/collations/{cid}").status_code == 404


def test_another_token_cannot_record_verdicts(two_tokens: OpenAPIClient, synthetic: Any, run_jobs: Any) -> None:
    cid = start(two_tokens, synthetic, A)
    run_jobs()
    pair = f"{API}/collations/{cid}/correspondences?pair=0,1&score=propagated&top=4"
    before = two_tokens.get(pair).get_json()
    detail = forbidden(two_tokens.post(f"{API}/collations/{cid}/assessments", json=VERDICT, headers=B), cid)
    assert "may record verdicts on it" in detail
    forbidden(two_tokens.post(f"{API}/collations/{cid}/assessments/batch", json=BATCH, headers=B), cid)
    assert two_tokens.get(f"{API}/collations/{cid}/assessments").get_json()["items"] == []
    assert two_tokens.get(pair).get_json() == before  # A's scores untouched
    # the creator's verdicts are stored and change P_S, as before
    assert two_tokens.post(f"{API}/collations/{cid}/assessments", json=VERDICT, headers=A).status_code == 201
    assert two_tokens.post(f"{API}/collations/{cid}/assessments/batch", json=BATCH, headers=A).status_code == 201
    assert len(two_tokens.get(f"{API}/collations/{cid}/assessments").get_json()["items"]) == 2
    assert two_tokens.get(pair).get_json() != before


def test_the_same_request_from_another_token_is_another_collation(two_tokens: OpenAPIClient, synthetic: Any) -> None:
    mine = start(two_tokens, synthetic, A)
    theirs = two_tokens.post(f"{API}/collations", json=body(synthetic), headers=B).get_json()
    assert theirs["created"] is True and theirs["id"] != mine  # B cannot find A's id by asking the same
    again = two_tokens.post(f"{API}/collations", json=body(synthetic), headers=A).get_json()
    assert again == {**again, "id": mine, "created": False}  # the same token, the same request: one collation
    listed = {
        name: [i["id"] for i in two_tokens.get(f"{API}/collations", headers=h).get_json()["items"]]
        for name, h in (("A", A), ("B", B))
    }
    assert listed == {"A": [mine], "B": [theirs["id"]]}
    assert two_tokens.get(f"{API}/collations/{mine}").status_code == 200  # reads stay open by id
    forbidden(two_tokens.delete(f"{API}/collations/{mine}", headers=B), mine)
    assert two_tokens.delete(f"{API}/collations/{theirs['id']}", headers=B).status_code == 204


def test_collations_started_without_a_token_stay_open(
    settings: Settings, openapi: dict[str, Any], two_tokens: OpenAPIClient, synthetic: Any
) -> None:
    """A collation made before tokens were configured has no creator: any valid token may change it; and
    without tokens (open mode) writes need none, as before."""
    open_app = create_app(settings, TESTING=True)
    try:
        open_api = OpenAPIClient(open_app.test_client(), openapi)
        first = start(open_api, synthetic, {})
        assert two_tokens.delete(f"{API}/collations/{first}", headers=B).status_code == 204
        second = start(open_api, synthetic, {})
        assert open_api.delete(f"{API}/collations/{second}").status_code == 204
    finally:
        service_state(open_app).close()

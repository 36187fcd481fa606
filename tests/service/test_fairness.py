"""What one client may have running (issue 41, item 4): with budgets lowered to 40 regions, one token's
15 concurrent collations under budget were all accepted (540 regions), and another token's 2 x 2
collation then took 330.6 s instead of 6.2 s alone. Now a token (or, without tokens, an address) has at
most ``COLLATION_CLIENT_MAX_ACTIVE`` collations and ``COLLATION_CLIENT_MAX_REGIONS`` regions running
(429 and Retry-After beyond), and a client's only collation goes to the front of the queues."""

from __future__ import annotations

from typing import Any

import pytest
from rq import Queue

from collation.app import create_app
from collation.core.settings import Settings
from collation.service.state import service_state

API = "/api/v1"
A, B = {"Authorization": "Bearer token-of-A"}, {"Authorization": "Bearer token-of-B"}


def body(synthetic: Any, seed: int) -> dict[str, Any]:
    """A collation of 4 + 4 listed regions (B with itself), distinct by its seed."""
    return {
        "manifests": [synthetic.b, synthetic.b],
        "regions": {"0": synthetic.b_regions, "1": synthetic.b_regions},
        "options": {"seed": seed},
    }


@pytest.fixture
def limited(settings: Settings) -> Any:
    app = create_app(
        settings.replace(api_tokens=("token-of-A", "token-of-B"), client_max_active=3, client_max_regions=20),
        TESTING=True,
    )
    yield app
    service_state(app).close()


def test_a_token_over_its_running_collations_gets_429_and_others_do_not(limited: Any, synthetic: Any) -> None:
    client = limited.test_client()
    for seed in range(2):
        assert client.post(f"{API}/collations", json=body(synthetic, seed), headers=A).status_code == 202
    over = client.post(f"{API}/collations", json=body(synthetic, 2), headers=A)  # 24 regions > 20
    assert over.status_code == 429 and over.headers["Retry-After"] == "30"
    assert over.get_json()["field"] == "regions" and "COLLATION_CLIENT_MAX_REGIONS" in over.get_json()["detail"]
    again = client.post(f"{API}/collations", json=body(synthetic, 1), headers=A)  # the same request: admitted
    assert again.status_code == 202 and again.get_json()["created"] is False
    assert client.post(f"{API}/collations", json=body(synthetic, 0), headers=B).status_code == 202  # B's own

    small = {"manifests": [synthetic.b, synthetic.b], "regions": {"0": synthetic.b_regions[:1]}}
    assert client.post(f"{API}/collations", json={**small, "options": {"seed": 9}}, headers=A).status_code == 202
    over = client.post(f"{API}/collations", json={**small, "options": {"seed": 10}}, headers=A)
    assert over.status_code == 429 and "COLLATION_CLIENT_MAX_ACTIVE" in over.get_json()["detail"]

    first = client.post(f"{API}/collations", json=body(synthetic, 0), headers=A).get_json()["id"]
    assert client.delete(f"{API}/collations/{first}", headers=A).status_code == 204  # one ends: room again
    assert client.post(f"{API}/collations", json={**small, "options": {"seed": 10}}, headers=A).status_code == 202


def test_without_tokens_each_address_has_its_own_limit(settings: Settings, synthetic: Any) -> None:
    app = create_app(settings.replace(client_max_active=1), TESTING=True)
    try:
        client = app.test_client()
        one, two = {"REMOTE_ADDR": "192.0.2.1"}, {"REMOTE_ADDR": "192.0.2.2"}
        assert client.post(f"{API}/collations", json=body(synthetic, 0), environ_base=one).status_code == 202
        assert client.post(f"{API}/collations", json=body(synthetic, 1), environ_base=one).status_code == 429
        assert client.post(f"{API}/collations", json=body(synthetic, 1), environ_base=two).status_code == 202
    finally:
        service_state(app).close()


def test_a_clients_only_collation_goes_before_another_clients_flood(limited: Any, synthetic: Any) -> None:
    """A's three collations are queued first; B's one collation is next to run, not fourth."""
    client = limited.test_client()
    flood = [client.post(f"{API}/collations", json=body(synthetic, s), headers=A).get_json()["id"] for s in (3, 4)]
    flood.append(
        client.post(f"{API}/collations", json={**body(synthetic, 5), "regions": {}}, headers=A).get_json()["id"]
    )
    mine = client.post(f"{API}/collations", json=body(synthetic, 6), headers=B).get_json()["id"]
    runtime = service_state(limited).runtime
    queued = Queue(runtime.settings.workers.queue_io, connection=runtime.connection()).get_job_ids()
    owners = [jid.split("-", 1)[0] for jid in queued]
    assert owners[0] == mine and owners.count(mine) == 2, owners  # both its prepare steps, first
    assert owners[2:4] == [flood[0]] * 2, owners  # A's first collation was its only one then: light too
    assert set(owners[4:]) == set(flood[1:]), owners  # A's others wait behind

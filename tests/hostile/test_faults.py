"""Fault injection against the running service: POST/DELETE churn under a live worker, collations
deleted while their jobs write, a worker that loses Redis for 10 s, a worker killed with SIGKILL at
each stage, a data directory that cannot be written.

Real Redis on a private port, real worker subprocesses (``python -m collation.service worker``), the
synthetic manuscripts of ``tests/service/conftest.py`` on a loopback site. Each test is bounded.
"""

from __future__ import annotations

import time
from typing import Any

from service_fixtures import app, client, openapi, redis_server, redis_url, settings, site, synthetic, workers
from service_helpers import wait_for

__all__ = ["app", "client", "openapi", "redis_server", "redis_url", "settings", "site", "synthetic", "workers"]

API = "/api/v1"


def request_body(synthetic: Any, seed: int = 0) -> dict[str, Any]:
    return {"manifests": [synthetic.a, synthetic.b], "regions": {"1": synthetic.b_regions},
            "options": {"seed": seed}}


def test_post_delete_churn_keeps_the_worker_alive(client: Any, synthetic: Any, workers: Any) -> None:
    worker = workers.start(threads=1)
    wait_for(lambda: client.get(f"{API}/readyz").status_code == 200, 60, "the worker to register")
    deadline = time.monotonic() + 12
    n = 0
    while time.monotonic() < deadline:
        r = client.post(f"{API}/collations", json=request_body(synthetic, seed=n % 3))
        assert r.status_code == 202, r.get_json()
        time.sleep(0.05 * (n % 4))
        r = client.delete(f"{API}/collations/{r.get_json()['id']}")
        assert r.status_code in (204, 404), r.get_json()
        n += 1
    assert worker.poll() is None, workers.logs()
    assert "Traceback" not in workers.logs(), workers.logs()
    r = client.post(f"{API}/collations", json=request_body(synthetic, seed=7))
    cid = r.get_json()["id"]
    wait_for(lambda: client.get(f"{API}/collations/{cid}").get_json()["status"] == "finished", 120,
             "the last collation to finish", interval=0.25)
    assert client.get(f"{API}/readyz").status_code == 200

"""schemathesis against the live app: every operation of openapi.yaml, generated requests (valid and
invalid), no server error and no contract mismatch (status code, content type, headers, body schema).

Bounded and deterministic: ``EXAMPLES`` examples per operation, ``derandomize`` (a fixed seed). Half
of the examples that name a collation name a finished one, so the result routes answer 200 too, not
only 404. The figures (operations, examples, statuses) are printed by the last test of the module.
"""

from __future__ import annotations

import hashlib
import os
import socket
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from redis import Redis
from rq import SimpleWorker
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from service_helpers import REPO, drain

from collation.app import create_app
from collation.core.settings import Settings
from collation.jobs.runtime import Runtime
from collation.jobs.worker import queue_names
from collation.net.http import fetcher_for
from collation.service.state import service_state

EXAMPLES = int(os.environ.get("HOSTILE_EXAMPLES", "12"))
"""Generated examples per operation in the suite (``scripts/hostile.sh`` runs many more)."""
UPSTREAM_FAILURES = {("GET", "/inspect"): 502}
"""Documented 5xx answers: the inspected manifest's server failed (here: its name does not resolve)."""


def no_undocumented_server_error(ctx: Any, response: Any, case: Any) -> bool | None:
    """``not_a_server_error``, except the 5xx that the contract documents for an upstream failure."""
    if UPSTREAM_FAILURES.get((case.method.upper(), case.path)) == response.status_code:
        return None
    return not_a_server_error(ctx, response, case)


CHECKS = [
    no_undocumented_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


def loopback_only(host: str, port: Any = None, *args: Any, **kwargs: Any) -> Any:
    """The app's resolver: generated manifest URLs name random hosts, and no DNS query may leave."""
    if host != "127.0.0.1":
        raise socket.gaierror(-2, f"the contract test resolves no host names ({host})")
    return socket.getaddrinfo(host, port, *args, **kwargs)


class Live:
    """The app under test, a finished collation in it, and what the run saw."""

    def __init__(self, app: Any, cid: str) -> None:
        self.app = app
        self.cid = cid
        self.statuses: Counter[int | str] = Counter()  # "502 upstream": documented upstream failures
        self.operations: set[str] = set()


@pytest.fixture(scope="module")
def live(redis_server: Any, synthetic: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    url = redis_server[1].rsplit("/", 1)[0] + "/3"  # a database of its own
    Redis.from_url(url).flushdb()
    data = tmp_path_factory.mktemp("contract") / "data"
    config = Settings.from_env(
        {},
        redis_url=url,
        data_dir=Path(data),
        allowed_hosts=("127.0.0.1",),
        backbone="efficientnet-lite0",
        device="cpu",
        chunk_pairs=64,
        sweep_interval=0,
        public_url="http://collation.test",
    )
    app = create_app(runtime=Runtime.create(config, fetcher=fetcher_for(config, resolve=loopback_only)), TESTING=True)
    client = app.test_client()
    r = client.post(
        "/api/v1/collations", json={"manifests": [synthetic.a, synthetic.b], "regions": {"1": synthetic.b_regions}}
    )
    cid = r.get_json()["id"]
    drain(config)
    assert client.get(f"/api/v1/collations/{cid}").get_json()["status"] == "finished"
    # A worker registered on both queues (it never works): /readyz answers 200, its 503 is tested elsewhere.
    listener = SimpleWorker(queue_names(config), connection=Redis.from_url(url), worker_ttl=3600)
    listener.register_birth()
    yield Live(app, cid)
    listener.register_death()
    service_state(app).close()


schema = schemathesis.openapi.from_path(REPO / "openapi.yaml")


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_keeps_the_contract(case: Any, live: Live) -> None:
    if "id" in (case.path_parameters or {}):
        digest = hashlib.sha256(repr(case.path_parameters).encode() + repr(case.query).encode()).digest()
        if digest[0] % 2 == 0:  # deterministic: half of them ask for the finished collation
            case.path_parameters = {**case.path_parameters, "id": live.cid}
        if case.method.upper() == "DELETE" and case.path_parameters["id"] == live.cid:
            case.path_parameters = {**case.path_parameters, "id": "0" * 16}  # keep it for the others
    response = case.call_and_validate(app=live.app, checks=CHECKS)
    documented = UPSTREAM_FAILURES.get((case.method.upper(), case.path)) == response.status_code
    live.statuses[f"{response.status_code} upstream" if documented else response.status_code] += 1
    live.operations.add(f"{case.method.upper()} {case.path}")  # also undocumented methods (405 expected)


def test_contract_figures(live: Live) -> None:
    """Prints what the run above did; every operation of the contract was exercised."""
    total = sum(live.statuses.values())
    errors = sum(count for status, count in live.statuses.items() if isinstance(status, int) and status >= 500)
    documented = {
        f"{method.upper()} {path}"
        for path, item in schema.raw_schema["paths"].items()
        for method in item
        if method in ("get", "post", "delete", "put", "patch")
    }
    print(
        f"\nschemathesis: {len(documented & live.operations)} of {len(documented)} operations "
        f"(+{len(live.operations - documented)} undocumented method probes), {total} examples, "
        f"statuses {dict(sorted(live.statuses.items(), key=str))}, server errors {errors}, contract mismatches 0"
    )
    assert documented <= live.operations
    assert not any(isinstance(status, int) and status >= 500 for status in live.statuses)

"""schemathesis against the live app: every operation of openapi.yaml, generated requests (valid and
invalid), no server error and no contract mismatch (status code, content type, headers, body schema).

Bounded and deterministic: ``EXAMPLES`` examples per operation, ``derandomize`` (a fixed seed). Half
of the examples that name a collation name a finished one, so the result routes answer 200 too, not
only 404. The figures (operations, examples, statuses) are printed by the last test of the module.

One plain test per operation (``pytest.mark.parametrize`` over ``schema.get_all_operations()``) runs
the three kinds of cases that ``@schema.parametrize()`` ran: the schema's examples, the coverage
phase's cases (each parameter's boundary and invalid values, the methods a path does not document),
and ``EXAMPLES`` cases drawn by Hypothesis in the positive and negative modes. Not
``@schema.parametrize()`` itself: under pytest 9.2 its items all have one node id, and pytest-xdist's
scheduler, which keys tests by node id, then ran one operation of the 26 and silently dropped the
others. pytest-xdist runs the whole module on one worker, in order (``--dist loadfile``),
so the figures test sees what every operation's test recorded in the module's ``live`` app.
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
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
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
        self.cases: Counter[str] = Counter()  # cases sent per operation of the contract ("GET /collations")


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


OPERATIONS = [result.ok() for result in schema.get_all_operations()]
"""Every operation of the contract, one test each (ids such as ``GET /collations/{id}``)."""


def coverage_cases(operation: Any) -> Iterator[Any]:
    """schemathesis's coverage phase for one operation: boundary and invalid values of each parameter
    and body field, and the methods its path does not document (answered 405)."""
    config = schema.config.generation_for(operation=operation, phase="coverage")
    return schema.iter_coverage_cases(operation, generation_modes=config.modes, generation_config=config)


def fuzzing(operation: Any) -> Any:
    """Hypothesis cases of one operation in each generation mode the config enables (positive, negative)."""
    modes = schema.config.generation_for(operation=operation, phase="fuzzing").modes
    return st.one_of([operation.as_strategy(generation_mode=mode) for mode in modes])


def drive(strategy: Any, examples: int, live: Live) -> None:
    """Runs ``keep_the_contract`` on ``examples`` cases that Hypothesis draws, with a fixed seed."""

    @settings(
        max_examples=examples,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def run(case: Any) -> None:
        keep_the_contract(case, live)

    run()


def keep_the_contract(case: Any, live: Live) -> None:
    """Sends one case to the live app, checks the answer against the contract and records its status."""
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
    live.cases[case.operation.label] += 1


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda operation: operation.label)
def test_every_operation_keeps_the_contract(operation: Any, live: Live) -> None:
    for example in operation.get_strategies_from_examples():  # the schema's own examples, one case each
        drive(example, 1, live)
    for case in coverage_cases(operation):
        keep_the_contract(case, live)
    drive(fuzzing(operation), EXAMPLES, live)
    assert operation.label in live.operations  # the documented method itself was called, not only probes
    assert live.cases[operation.label] > EXAMPLES // 2, live.cases[operation.label]


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

"""The API without workers: validation, problem documents, ids, auth, CORS, health, the OpenAPI
contract. Every response is checked against ``openapi.yaml`` by the ``api`` fixture."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import yaml
from openapi_spec_validator import validate as validate_spec

from collation.app import create_app
from collation.core.settings import Settings
from collation.service import schemas
from collation.service.state import service_state

PROBLEM = "application/problem+json"


def body(synthetic: Any, **extra: Any) -> dict[str, Any]:
    return {"manifests": [synthetic.a, synthetic.b], "regions": {"1": synthetic.b_regions}, **extra}


def assert_problem(response: Any, status: int, field: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.get_json()
    assert response.headers["Content-Type"].startswith(PROBLEM)
    doc = response.get_json()
    assert doc["status"] == status and doc["title"]
    assert "Traceback" not in response.get_data(as_text=True)
    if field is not None:
        assert doc.get("field") == field, doc
    return doc


# -- the contract --------------------------------------------------------------------------------


def test_openapi_spec_is_valid(openapi: dict[str, Any]) -> None:
    validate_spec(openapi)


def test_every_route_is_in_the_spec(app: Any, openapi: dict[str, Any]) -> None:
    documented = {
        (path, method)
        for path, item in openapi["paths"].items()
        for method in item
        if method in ("get", "post", "delete")
    }
    served = set()
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/v1/") or "<path:" in rule.rule:
            continue
        path = rule.rule.removeprefix("/api/v1")
        for converter in ("<int:", "<"):
            path = path.replace(converter, "{")
        path = path.replace(">", "}").replace("{cid}", "{id}").replace("{did}", "{id}").replace("{m}", "{index}")
        served |= {(path, method.lower()) for method in rule.methods if method in ("GET", "POST", "DELETE")}
    assert served == documented


def test_openapi_yaml_is_served(api: Any) -> None:
    r = api.get("/api/v1/openapi.yaml")
    assert r.status_code == 200
    assert yaml.safe_load(r.get_data(as_text=True))["openapi"].startswith("3.1")


def test_the_api_takes_every_option_of_the_command_line() -> None:
    """One list of options and values (``collation.core.options``): the API's schema, the command line
    and the engine take theirs from it."""
    from collation.cli.main import OPTION_FLAGS, build_parser
    from collation.core import options
    from collation.engine import backbones

    fields = schemas.OptionsSchema().fields
    assert set(fields) == {f.name for f in dataclasses.fields(options.CollationOptions)}
    assert set(OPTION_FLAGS) | {"candidates"} == set(fields)
    for name, allowed in options.CHOICES.items():
        assert fields[name].validate.choices == allowed, name
    match = build_parser()._subparsers._group_actions[0].choices["match"]
    flags = {action.dest: action for action in match._actions}
    for name, allowed in options.CHOICES.items():
        assert tuple(flags[name].choices) == allowed, name
    assert set(backbones.BACKBONE_CHANNELS) == set(options.BACKBONES)


# -- POST /collations ----------------------------------------------------------------------------


def test_post_answers_202_with_location_and_the_same_id_twice(api: Any, synthetic: Any) -> None:
    r = api.post("/api/v1/collations", json=body(synthetic))
    assert r.status_code == 202
    doc = r.get_json()
    assert len(doc["id"]) == 16 and doc["created"] is True
    assert r.headers["Location"] == doc["status_url"] == f"http://collation.test/api/v1/collations/{doc['id']}"
    again = api.post("/api/v1/collations", json=body(synthetic, options={"seed": 0, "propagation": "2-cycles"}))
    assert again.get_json()["id"] == doc["id"] and again.get_json()["created"] is False
    other = api.post("/api/v1/collations", json=body(synthetic, options={"seed": 1})).get_json()
    assert other["id"] != doc["id"]
    swapped = api.post(
        "/api/v1/collations", json={"manifests": [synthetic.b, synthetic.a], "regions": {"0": synthetic.b_regions}}
    ).get_json()
    assert swapped["id"] != doc["id"]  # manifest order defines the indices: another collation


def test_status_of_a_queued_collation(api: Any, synthetic: Any) -> None:
    cid = api.post("/api/v1/collations", json=body(synthetic)).get_json()["id"]
    doc = api.get(f"/api/v1/collations/{cid}").get_json()
    assert doc["status"] == "queued"
    assert [m["index"] for m in doc["manuscripts"]] == [0, 1]
    assert all(m["status"] == "pending" and m["errors"] == [] for m in doc["manuscripts"])
    assert doc["options"]["backbone"] == "efficientnet-lite0"


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"manifests": ["http://127.0.0.1/a.json"]}, "manifests"),
        ({}, "manifests"),
        ({"manifests": "http://127.0.0.1/a.json"}, "manifests"),
        ({"manifests": ["http://127.0.0.1/a.json", "ftp://127.0.0.1/b.json"]}, "manifests.1"),
        ({"manifests": ["http://127.0.0.1/a.json", "not a url"]}, "manifests.1"),
        ({"manifests": ["http://h/a", "http://h/b"], "options": {"backbone": "vgg"}}, "options.backbone"),
        ({"manifests": ["http://h/a", "http://h/b"], "options": {"similarity": "s_feature"}}, "options.similarity"),
        ({"manifests": ["http://h/a", "http://h/b"], "options": {"kernel": "gauss"}}, "options.kernel"),
        ({"manifests": ["http://h/a", "http://h/b"], "options": {"orientation": "up"}}, "options.orientation"),
        ({"manifests": ["http://h/a", "http://h/b"], "options": {"normalization": "z"}}, "options.normalization"),
        ({"manifests": ["http://h/a", "http://h/b"], "options": {"propagation": "3-cycles"}}, "options.propagation"),
        ({"manifests": ["http://h/a", "http://h/b"], "options": {"seed": -1}}, "options.seed"),
        ({"manifests": ["http://h/a", "http://h/b"], "options": {"seed": "1"}}, "options.seed"),
        ({"manifests": ["http://h/a", "http://h/b"], "options": {"sed": 1}}, "options.sed"),
        ({"manifests": ["http://h/a", "http://h/b"], "options": {"weak_below": -0.1}}, "options.weak_below"),
        ({"manifests": ["http://h/a", "http://h/b"], "options": {"weak_below": 2.5}}, "options.weak_below"),
        ({"manifests": ["http://h/a", "http://h/b"], "options": {"weak_below": "0.5"}}, "options.weak_below"),
        ({"manifests": ["http://h/a", "http://h/b"], "options": {"weak_below": True}}, "options.weak_below"),
        ({"manifests": ["http://h/a", "http://h/b"], "colour": "red"}, "colour"),
        ({"manifests": ["http://h/a", "http://h/b"], "regions": {"2": []}}, "regions"),
        (
            {"manifests": ["http://h/a", "http://h/b"], "regions": {"0": [{"canvas": "c", "xywh": [1, 2, 3]}]}},
            "regions.0",
        ),
        (
            {"manifests": ["http://h/a", "http://h/b"], "regions": {"0": {"selector": "x", "whole_canvases": True}}},
            "regions.0",
        ),
        ({"manifests": ["http://h/a", "http://h/b"], "callback_url": "file:///etc/passwd"}, "callback_url"),
    ],
)
def test_malformed_bodies_are_400_naming_the_field(api: Any, payload: dict, field: str) -> None:
    r = api.post("/api/v1/collations", json=payload)
    doc = assert_problem(r, 400)
    assert doc["field"].startswith(field), doc
    assert any(e["field"].startswith(field) for e in doc["errors"])


def test_non_json_bodies_are_400(api: Any) -> None:
    assert_problem(api.post("/api/v1/collations", data="{not json", content_type="application/json"), 400, "body")
    assert_problem(api.post("/api/v1/collations", data="x=1", content_type="text/plain"), 400, "body")
    assert_problem(api.post("/api/v1/collations", json=["http://h/a", "http://h/b"]), 400, "body")


def test_post_without_redis_is_503(tmp_path: Any, synthetic: Any, openapi: dict[str, Any]) -> None:
    from service_helpers import OpenAPIClient

    app = create_app(Settings.from_env({}, data_dir=tmp_path), TESTING=True)
    client = OpenAPIClient(app.test_client(), openapi)
    assert_problem(client.post("/api/v1/collations", json=body(synthetic)), 503)


# -- unknown ids, wrong states -------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["", "/correspondences", "/annotations", "/manifests/0", "/pages/0/1", "/assessments", "/view", "/matrix.png"],
)
@pytest.mark.parametrize("cid", ["0123456789abcdef", "nothex", "0123456789ABCDEF", "a" * 300])
def test_unknown_ids_are_404(api: Any, path: str, cid: str) -> None:
    assert_problem(api.get(f"/api/v1/collations/{cid}{path}"), 404)


def test_delete_unknown_is_404(api: Any) -> None:
    assert_problem(api.delete("/api/v1/collations/0123456789abcdef"), 404, "id")


def test_results_of_an_unfinished_collation_are_409(api: Any, synthetic: Any) -> None:
    cid = api.post("/api/v1/collations", json=body(synthetic)).get_json()["id"]
    for path in ("/correspondences", "/annotations", "/manifests/0", "/pages/0/1"):
        assert_problem(api.get(f"/api/v1/collations/{cid}{path}"), 409, "id")
    r = api.post(
        f"/api/v1/collations/{cid}/assessments", json={"pair": [0, 1], "source": 0, "target": 0, "verdict": "confirmed"}
    )
    assert_problem(r, 409, "id")


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("pair=0", "pair"),
        ("pair=0,0", "pair"),
        ("pair=a,b", "pair"),
        ("score=best", "score"),
        ("top=0", "top"),
        ("top=x", "top"),
        ("colour=red", "colour"),
    ],
)
def test_bad_correspondence_queries_are_400(api: Any, query: str, field: str) -> None:
    assert_problem(api.get(f"/api/v1/collations/0123456789abcdef/correspondences?{query}"), 400, field)


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"pair": [0, 1], "source": 0, "target": 0}, "verdict"),
        ({"pair": [0, 1], "source": 0, "target": 0, "verdict": "maybe"}, "verdict"),
        ({"pair": [0, 0], "source": 0, "target": 0, "verdict": "confirmed"}, "pair"),
        ({"pair": [0], "source": 0, "target": 0, "verdict": "confirmed"}, "pair"),
        ({"pair": [0, 1], "source": -1, "target": 0, "verdict": "confirmed"}, "source"),
    ],
)
def test_bad_assessments_are_400(api: Any, payload: dict, field: str) -> None:
    assert_problem(api.post("/api/v1/collations/0123456789abcdef/assessments", json=payload), 400, field)


def test_unknown_routes_and_methods_are_problems(client: Any) -> None:
    assert_problem(client.get("/api/v1/nothing"), 404)
    r = client.put("/api/v1/collations")
    assert_problem(r, 405)
    assert "POST" in r.headers["Allow"]


# -- DELETE, auth, CORS, health ------------------------------------------------------------------


def test_delete_cancels_queued_work(api: Any, synthetic: Any, settings: Settings) -> None:
    from redis import Redis
    from rq import Queue

    cid = api.post("/api/v1/collations", json=body(synthetic)).get_json()["id"]
    redis = Redis.from_url(settings.redis_url)
    assert Queue("collation-io", connection=redis).count == 2
    assert api.delete(f"/api/v1/collations/{cid}").status_code == 204
    assert_problem(api.get(f"/api/v1/collations/{cid}"), 404)
    assert Queue("collation-io", connection=redis).count == 0
    assert not redis.keys(f"rq:job:{cid}-*")
    redis.close()


@pytest.fixture
def token_api(settings: Settings, openapi: dict[str, Any]) -> Any:
    from service_helpers import OpenAPIClient

    app = create_app(settings.replace(api_tokens=("s3cret", "other")), TESTING=True)
    yield OpenAPIClient(app.test_client(), openapi)
    service_state(app).close()


def test_tokens_guard_writes_only(token_api: Any, synthetic: Any) -> None:
    r = token_api.post("/api/v1/collations", json=body(synthetic))
    assert_problem(r, 401, "Authorization")
    assert r.headers["WWW-Authenticate"].startswith("Bearer")
    assert_problem(
        token_api.post("/api/v1/collations", json=body(synthetic), headers={"Authorization": "Bearer wrong"}), 401
    )
    ok = token_api.post("/api/v1/collations", json=body(synthetic), headers={"Authorization": "Bearer other"})
    assert ok.status_code == 202
    cid = ok.get_json()["id"]
    assert token_api.get(f"/api/v1/collations/{cid}").status_code == 200  # reads stay open
    assert_problem(token_api.delete(f"/api/v1/collations/{cid}"), 401)
    # only the token that started it may delete it (tests/service/test_token_rights.py)
    assert_problem(token_api.delete(f"/api/v1/collations/{cid}", headers={"Authorization": "Bearer s3cret"}), 403)
    assert token_api.delete(f"/api/v1/collations/{cid}", headers={"Authorization": "Bearer other"}).status_code == 204


def test_cors_on_reads_and_preflight(api: Any, client: Any, synthetic: Any) -> None:
    cid = api.post("/api/v1/collations", json=body(synthetic)).get_json()["id"]
    for r in (
        api.get(f"/api/v1/collations/{cid}"),
        api.get("/api/v1/healthz"),
        client.get("/api/v1/collations/0123456789abcdef"),
    ):
        assert r.headers["Access-Control-Allow-Origin"] == "*"
    pre = client.options(
        f"/api/v1/collations/{cid}/assessments",
        headers={"Origin": "https://viewer.example", "Access-Control-Request-Method": "POST"},
    )
    assert pre.status_code in (200, 204)
    assert "POST" in pre.headers["Access-Control-Allow-Methods"]
    assert "Authorization" in pre.headers["Access-Control-Allow-Headers"]


def test_healthz_and_readyz(api: Any, settings: Settings) -> None:
    from redis import Redis
    from rq import SimpleWorker

    assert api.get("/api/v1/healthz").get_json() == {"status": "ok"}
    not_ready = assert_problem(api.get("/api/v1/readyz"), 503)
    assert not_ready["checks"]["redis"] is True
    redis = Redis.from_url(settings.redis_url)
    worker = SimpleWorker(["collation-io", "collation-compute"], connection=redis)
    worker.register_birth()
    try:
        assert api.get("/api/v1/readyz").get_json()["status"] == "ready"
    finally:
        worker.register_death()
        redis.close()


def test_readyz_without_redis(tmp_path: Any, openapi: dict[str, Any]) -> None:
    from service_helpers import OpenAPIClient

    from collation.cli.private_servers import free_port

    app = create_app(Settings.from_env({}, data_dir=tmp_path, redis_url=f"redis://127.0.0.1:{free_port()}/0"))
    doc = assert_problem(OpenAPIClient(app.test_client(), openapi).get("/api/v1/readyz"), 503)
    assert doc["checks"]["redis"] is False


# -- one runtime per app, the sweeper, the layering ----------------------------------------------


def test_two_apps_share_nothing(tmp_path: Any) -> None:
    from collation.service.urls import base_url

    a = create_app(Settings.from_env({}, data_dir=tmp_path / "a", public_url="http://a.test"), TESTING=True)
    b = create_app(Settings.from_env({}, data_dir=tmp_path / "b"), TESTING=True)
    state_a, state_b = service_state(a), service_state(b)
    assert state_a.runtime is not state_b.runtime and state_a.runtime.store.root != state_b.runtime.store.root
    assert state_a.documents is not state_b.documents and state_a.sweeper is not state_b.sweeper
    with a.test_request_context("/"):
        assert base_url() == "http://a.test/api/v1"
    with b.test_request_context("/", base_url="http://b.example"):
        assert base_url() == "http://b.example/api/v1"
    assert not state_a.sweeper.enabled  # no Redis, nothing to sweep
    state_a.sweeper.start()
    assert not state_a.sweeper.running


def test_sweeper_logs_expected_failures_and_bugs_and_keeps_sweeping(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from redis.exceptions import ConnectionError as RedisConnectionError

    from collation.service.sweeper import Sweeper

    outcomes: list[Any] = [RedisConnectionError("Redis is restarting"), OSError("disk gone"), KeyError("bug"), 2]

    def recover() -> int:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    sweeper = Sweeper(recover, interval=0)
    with caplog.at_level(logging.INFO, logger="collation.service.sweeper"):
        assert [sweeper.sweep() for _ in range(4)] == [0, 0, 0, 2]
    redis_down, disk_gone, bug, advanced = caplog.records
    for record in (redis_down, disk_gone):  # expected: a warning, no traceback
        assert record.levelno == logging.WARNING and record.exc_info is None
    assert "Redis is restarting" in redis_down.getMessage() and "disk gone" in disk_gone.getMessage()
    assert bug.levelno == logging.ERROR and bug.exc_info is not None and bug.exc_info[0] is KeyError  # traceback
    assert advanced.levelno == logging.INFO and "2 unfinished" in advanced.getMessage()


def test_sweeper_thread_starts_and_stops() -> None:
    import threading

    from collation.service.sweeper import Sweeper

    swept = threading.Event()
    sweeper = Sweeper(lambda: swept.set() or 0, interval=0.01)
    sweeper.start()
    try:
        assert swept.wait(10) and sweeper.running
    finally:
        sweeper.stop()
    assert not sweeper.running


def test_sweeper_expires_old_drafts_once_an_hour() -> None:
    from collation.service.sweeper import EXPIRE_EVERY, Sweeper

    now, expired = [0.0], []
    sweeper = Sweeper(lambda: 0, interval=15, expire=lambda: expired.append(now[0]) or 1, clock=lambda: now[0])
    for moment in (0.0, 15.0, EXPIRE_EVERY - 1, EXPIRE_EVERY, EXPIRE_EVERY + 15):
        now[0] = moment
        sweeper.sweep()
    assert expired == [0.0, EXPIRE_EVERY]  # at the first sweep, then once EXPIRE_EVERY has passed


def test_the_apps_sweep_removes_drafts_unchanged_for_draft_days(settings: Settings) -> None:
    import json

    app = create_app(settings.replace(store_draft_days=2), TESTING=True)
    client, store = app.test_client(), service_state(app).runtime.store
    old, new = (client.post("/api/v1/drafts", json={"text": t}).get_json()["id"] for t in ("old", "new"))
    doc = json.loads(store.read(f"drafts/{old}.json"))
    store.write(f"drafts/{old}.json", json.dumps({**doc, "updated": "2026-01-01T00:00:00+00:00"}).encode())
    service_state(app).sweeper.sweep()
    assert client.get(f"/api/v1/drafts/{old}").status_code == 404
    assert client.get(f"/api/v1/drafts/{new}").get_json()["text"] == "new"
    service_state(app).close()

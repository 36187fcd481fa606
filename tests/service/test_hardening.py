"""Regression tests of what the hostile run of issue 12 broke (items 6-11): each failed before its fix.

Fast: the API with a real Redis and no worker, or one in-process burst worker. The slower fault tests
(worker kills, Redis outages, churn under a live worker) are in ``tests/hostile``.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from redis import Redis
from rq.executions import Execution
from rq.job import Job
from rq.registry import ReadyJobRegistry

from collation.app import create_app
from collation.core.errors import ManifestError
from collation.core.options import CollationOptions
from collation.core.settings import Settings
from collation.core.vocabulary import CollationStatus
from collation.jobs.scheduling import delete_job
from collation.net.decode import parse_json_bytes
from collation.service.state import service_state
from collation.store.datastore import CollationNotFound
from collation.store.folder import FolderStore
from collation.store.records import CollationRequest, new_record
from collation.store.stored import PreparedManuscript
from collation.store.transitions import cancel as mark_cancelled

API = "/api/v1"


def body(synthetic: Any, **extra: Any) -> dict[str, Any]:
    return {"manifests": [synthetic.a, synthetic.b], "regions": {"1": synthetic.b_regions}, **extra}


def problem(response: Any, status: int, field: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.get_data(as_text=True)[:300])
    assert response.headers["Content-Type"].startswith("application/problem+json")
    doc = response.get_json()
    if field is not None:
        assert doc.get("field") == field, doc
    return doc


# -- 6: DELETE after a retried job ------------------------------------------------------------------


def test_delete_after_a_job_with_an_expired_execution(client: Any, synthetic: Any, settings: Settings) -> None:
    """A job retried after its worker died keeps an execution entry whose data expired; DELETE was a
    500 ("Execution ... not found") and left the collation cancelled for ever."""
    cid = client.post(f"{API}/collations", json=body(synthetic)).get_json()["id"]
    redis = Redis.from_url(settings.redis_url)
    job = Job.fetch(f"{cid}-prepare-0", connection=redis)
    with redis.pipeline() as pipe:
        execution = Execution.create(job, ttl=60, pipeline=pipe)
        pipe.execute()
    redis.delete(execution.key)  # the execution's hash expired, its registry entries did not
    assert client.delete(f"{API}/collations/{cid}").status_code == 204
    problem(client.get(f"{API}/collations/{cid}"), 404)
    r = client.post(f"{API}/collations", json=body(synthetic))
    assert r.status_code == 202 and r.get_json()["status"] == "queued" and r.get_json()["created"]
    redis.close()


def test_a_collation_left_cancelled_is_created_again(client: Any, synthetic: Any, settings: Settings) -> None:
    """A DELETE that stopped after marking the record cancelled (Redis failed) no longer blocks the id."""
    cid = client.post(f"{API}/collations", json=body(synthetic)).get_json()["id"]
    assert mark_cancelled(FolderStore(settings.data_dir), cid)
    r = client.post(f"{API}/collations", json=body(synthetic))
    assert (r.status_code, r.get_json()["id"], r.get_json()["status"]) == (202, cid, "queued")
    assert client.delete(f"{API}/collations/{cid}").status_code == 204


# -- 7: churn: job remnants, writes into a deleted collation -----------------------------------------


def test_deleting_a_job_removes_it_from_its_parents_dependents(client: Any, synthetic: Any, settings: Settings) -> None:
    """A parent that finishes while its dependent is deleted must not write into the deleted job's hash:
    the dependent leaves the parent's dependents set in the transaction that deletes it."""
    cid = client.post(f"{API}/collations", json=body(synthetic)).get_json()["id"]
    redis = Redis.from_url(settings.redis_url)
    child = Job.fetch(f"{cid}-features-0", connection=redis)
    parents = child.dependency_ids
    assert parents and all(child.id.encode() in redis.smembers(Job.dependents_key_for(p)) for p in parents)
    delete_job(redis, child)
    assert not redis.exists(child.key)
    assert not any(child.id.encode() in redis.smembers(Job.dependents_key_for(p)) for p in parents)
    redis.close()


def test_a_job_remnant_does_not_stop_the_worker(client: Any, synthetic: Any, settings: Settings, run_jobs: Any) -> None:
    """A hash holding only a status, listed as ready: RQ's maintenance failed on it and the worker quit."""
    redis = Redis.from_url(settings.redis_url)
    redis.hset(Job.key_for("remnant"), "status", "ready_to_enqueue")
    redis.zadd(ReadyJobRegistry(settings.workers.queue_io, connection=redis).key, {"remnant": 1})
    broken = [synthetic.broken, synthetic.broken.replace("manifest.json", "other.json")]  # no features to compute
    cid = client.post(f"{API}/collations", json={"manifests": broken}).get_json()["id"]
    run_jobs()  # before: maintenance raised NoSuchJobError at the start and the worker quit with nothing done
    assert client.get(f"{API}/collations/{cid}").get_json()["status"] == "failed"
    assert not redis.exists(Job.key_for("remnant"))
    redis.close()


def test_writes_never_bring_back_a_deleted_collation(settings: Settings) -> None:
    store = FolderStore(settings.data_dir)
    record = new_record("00000000000000aa", CollationRequest(("http://a", "http://b")), CollationOptions(), settings)
    assert store.create_collation(record)
    cdir = store.collation_dir(record.id)
    assert store.delete_collation(record.id)
    for write in (
        lambda: store.save_manuscript(record.id, PreparedManuscript(0, "http://a"), {"id": "m"}),
        lambda: store.update_record(record.id, lambda r: setattr(r, "status", CollationStatus("running"))),
        lambda: store.save_assessments(record.id, []),
    ):
        with pytest.raises(CollationNotFound):
            write()
    store.record_failure(record.id, __import__("collation.store.stepnames", fromlist=["Step"]).Step.plan(), "x")
    assert not cdir.exists()  # no folder without its record (it answered 404 to the same POST again)
    assert store.create_collation(record)


# -- 8: concurrent identical POSTs -------------------------------------------------------------------


def test_fifty_concurrent_identical_posts_all_get_the_one_collation(app: Any, synthetic: Any) -> None:
    barrier = threading.Barrier(50)

    def post(_: int) -> tuple[int, str | None, bool | None]:
        client = app.test_client()
        barrier.wait()
        r = client.post(f"{API}/collations", json=body(synthetic))
        doc = r.get_json()
        return r.status_code, doc.get("id"), doc.get("created")

    with ThreadPoolExecutor(50) as pool:
        results = list(pool.map(post, range(50)))
    assert {status for status, _, _ in results} == {202}, results
    assert len({cid for _, cid, _ in results}) == 1
    assert sum(bool(created) for _, _, created in results) == 1


def test_a_folder_without_record_is_replaced(settings: Settings) -> None:
    store = FolderStore(settings.data_dir)
    record = new_record("00000000000000bb", CollationRequest(("http://a", "http://b")), CollationOptions(), settings)
    (store.collation_dir(record.id) / "manuscripts").mkdir(parents=True)  # left by an older version
    assert store.create_collation(record) and store.load_record(record.id).id == record.id


# -- 9: manifests nested too deeply, NaN -------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"a": ' * 700 + "1" + "}" * 700,
        '{"id": "m", "width": NaN}',
        '{"id": "m", "width": Infinity}',
        '{"id": "m", "width": -Infinity}',
    ],
)
def test_manifests_with_deep_nesting_or_non_numbers_are_refused(text: str) -> None:
    with pytest.raises(ManifestError):
        parse_json_bytes(text.encode(), url="http://x/m.json", what="manifest")


def test_a_deep_or_nan_manifest_is_a_manuscript_error_not_a_500(
    client: Any, synthetic: Any, site: Any, run_jobs: Any
) -> None:
    doc = json.loads((site.root / "A" / "manifest.json").read_text())
    deep: Any = "end"
    for _ in range(700):
        deep = {"x": deep}
    urls = [site.write_json("hostile/deep.json", {**doc, "seeAlso": [{"id": "s", "type": "Dataset", "x": deep}]})]
    nan_doc = json.dumps({**doc, "navDate": 1.0}).replace("1.0", "NaN", 1)
    (site.root / "hostile" / "nan.json").write_text(nan_doc)
    urls.append(f"{site.url}/hostile/nan.json")
    cid = client.post(
        f"{API}/collations", json={"manifests": [*urls, synthetic.b], "regions": {"2": synthetic.b_regions}}
    ).get_json()["id"]
    run_jobs()
    status = client.get(f"{API}/collations/{cid}").get_json()
    messages = [e["message"] for m in status["manuscripts"][:2] for e in m["errors"]]
    assert "nested more than" in messages[0] and "NaN" in messages[1], messages
    for m in range(3):
        r = client.get(f"{API}/collations/{cid}/manifests/{m}")
        assert r.status_code < 500 and b"NaN" not in r.data


# -- 10: other 500s ------------------------------------------------------------------------------------


def test_a_non_ascii_bearer_token_is_401(settings: Settings, synthetic: Any) -> None:
    app = create_app(settings.replace(api_tokens=("s3cret",)), TESTING=True)
    try:
        client = app.test_client()
        for token in ("sécret", "s3cret\u00e9", "\u2603"):
            r = client.post(
                f"{API}/collations",
                json=body(synthetic),
                headers={"Authorization": f"Bearer {token}".encode().decode("latin-1")},
            )
            problem(r, 401)
        assert (
            client.post(
                f"{API}/collations", json=body(synthetic), headers={"Authorization": "Bearer s3cret"}
            ).status_code
            == 202
        )
    finally:
        service_state(app).close()


def test_a_body_nested_100k_deep_is_400(client: Any) -> None:
    data = b'{"manifests": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    problem(client.post(f"{API}/collations", data=data, content_type="application/json"), 400)
    nested = (
        b'{"pair": [0, 1], "source": 0, "target": 0, "verdict": "confirmed", "note": ' + b"[" * 40 + b"]" * 40 + b"}"
    )
    problem(client.post(f"{API}/collations", data=nested, content_type="application/json"), 400)


@pytest.mark.parametrize("field", ["manifests.0", "callback_url", "regions.1.0.label", "options.backbone"])
def test_a_lone_surrogate_is_400(client: Any, synthetic: Any, field: str) -> None:
    doc: dict[str, Any] = json.loads(json.dumps(body(synthetic)))  # a copy: the fixture is the session's
    marker = "http://127.0.0.1/\udc80" if field in ("manifests.0", "callback_url") else "\udc80"
    if field == "manifests.0":
        doc["manifests"][0] = marker
    elif field == "callback_url":
        doc["callback_url"] = marker
    elif field == "regions.1.0.label":
        doc["regions"]["1"][0] = {**doc["regions"]["1"][0], "label": marker}
    else:
        doc["options"] = {"backbone": marker}
    data = json.dumps(doc).encode()  # ensure_ascii: the surrogate travels as the escape \udc80
    problem(client.post(f"{API}/collations", data=data, content_type="application/json"), 400, field)


@pytest.mark.parametrize("key", ["\u00b2", "\u0661", "\uff11", "01", "+1", " 1"])
def test_regions_keys_are_ascii_indices(client: Any, synthetic: Any, key: str) -> None:
    doc = {**body(synthetic), "regions": {key: synthetic.b_regions}}
    problem(client.post(f"{API}/collations", json=doc), 400, "regions")


@pytest.mark.parametrize("route", ["correspondences", "view", "view.json", "matrix.png"])
@pytest.mark.parametrize("pair", ["\u00b9,0", "0,\u00b2", "\u0661,0", "0 ,1", "01,2"])
def test_pair_parameters_are_ascii_indices(client: Any, synthetic: Any, route: str, pair: str) -> None:
    cid = client.post(f"{API}/collations", json=body(synthetic)).get_json()["id"]
    problem(client.get(f"{API}/collations/{cid}/{route}", query_string={"pair": pair}), 400, "pair")


def test_an_unbalanced_ipv6_url_is_400(client: Any, synthetic: Any) -> None:
    doc = {**body(synthetic), "manifests": ["http://[::1/manifest.json", synthetic.b]}
    problem(client.post(f"{API}/collations", json=doc), 400, "manifests.0")


# -- 11: the contract says what the code does ----------------------------------------------------------


def _parameter(openapi: dict[str, Any], path: str, name: str) -> dict[str, Any]:
    item = openapi["paths"][path]
    return next(p for p in item["get"].get("parameters", []) if p["name"] == name)["schema"]


@pytest.mark.parametrize(
    ("pair", "valid"),
    [
        ("0,1", True),
        ("1,0", True),
        ("10,1", True),
        ("2,2", False),
        ("0,00", False),
        ("01,1", False),
        ("\u00b9,0", False),
    ],
)
@pytest.mark.parametrize(
    "path",
    [
        "/collations/{id}/correspondences",
        "/collations/{id}/view",
        "/collations/{id}/view.json",
        "/collations/{id}/matrix.png",
    ],
)
def test_the_pair_pattern_is_what_the_code_accepts(
    openapi: dict[str, Any], client: Any, synthetic: Any, path: str, pair: str, valid: bool
) -> None:
    schema = _parameter(openapi, path, "pair")
    assert Draft202012Validator(schema).is_valid(pair) is valid
    cid = client.post(f"{API}/collations", json=body(synthetic)).get_json()["id"]
    r = client.get(API + path.replace("{id}", cid), query_string={"pair": pair})
    assert (r.status_code == 400 and r.get_json().get("field") == "pair") is not valid


def test_the_viewer_values_are_what_the_code_accepts(openapi: dict[str, Any], client: Any, synthetic: Any) -> None:
    cid = client.post(f"{API}/collations", json=body(synthetic)).get_json()["id"]
    view = "/collations/{id}/view"
    cases = [
        ("mirador", "3", True),
        ("mirador", "4", True),
        ("mirador", "5", False),
        ("mirador", "", False),
        ("side", "a", True),
        ("side", "c", False),
        ("link", "0-1-2-3", True),
        ("link", "1-1-0-0", False),
        ("link", "01-1-0-0", False),
        ("link", "0-1-2", False),
    ]
    for name, value, valid in cases:
        assert Draft202012Validator(_parameter(openapi, view, name)).is_valid(value) is valid, (name, value)
        r = client.get(f"{API}/collations/{cid}/view", query_string={name: value})
        assert (r.status_code == 200) is valid, (name, value, r.status_code)


@pytest.mark.parametrize(("manifests", "valid"), [(2, False), (3, True)])
def test_three_cycles_needs_three_manifests_in_the_contract_too(
    openapi: dict[str, Any], client: Any, synthetic: Any, manifests: int, valid: bool
) -> None:
    from referencing import Registry, Resource

    doc = {"manifests": [synthetic.a, synthetic.b, synthetic.c][:manifests], "options": {"propagation": "3-cycles"}}
    from referencing.jsonschema import DRAFT202012

    resource = Resource.from_contents(openapi, default_specification=DRAFT202012)
    registry = Registry().with_resource("urn:openapi", resource)
    validator = Draft202012Validator({"$ref": "urn:openapi#/components/schemas/CollationRequest"}, registry=registry)
    assert validator.is_valid(doc) is valid
    assert (client.post(f"{API}/collations", json=doc).status_code == 202) is valid


def test_batch_verdicts_with_incomplete_members_are_400(api: Any) -> None:
    """Found by schemathesis: a member without ``manuscript`` reached the cross-member check (500)."""
    r = api.post(
        f"{API}/collations/0123456789abcdef/assessments/batch",
        json={"members": [{"index": 0}, {"manuscript": 1, "index": 0}], "verdict": "exact"},
    )
    assert r.status_code == 400 and "members" in r.get_json()["detail"] + str(r.get_json().get("field"))


def test_deleting_a_job_whose_execution_ends_meanwhile_succeeds(
    client: Any, synthetic: Any, settings: Settings, monkeypatch: Any
) -> None:
    """An execution that ends between the cleanup of dangling executions and RQ's delete (which reads
    every listed execution) made RQ raise ValueError and the DELETE answer 500; now the delete retries."""
    from rq.executions import ExecutionRegistry

    from collation.jobs import scheduling

    cid = client.post(f"{API}/collations", json=body(synthetic)).get_json()["id"]
    redis = Redis.from_url(settings.redis_url)
    job = Job.fetch(f"{cid}-features-0", connection=redis)
    registry = ExecutionRegistry(job_id=job.id, connection=redis)
    cleanups = []
    real_cleanup = scheduling.drop_dangling_executions

    def cleanup_then_an_execution_ends(connection: Any, job: Job) -> int:
        dropped = real_cleanup(connection, job)
        if not cleanups:  # listed, its hash already gone: as if it ended right after the cleanup
            redis.zadd(registry.key, {"ended-meanwhile": time.time() + 600})  # not expired
        cleanups.append(dropped)
        return dropped

    monkeypatch.setattr(scheduling, "drop_dangling_executions", cleanup_then_an_execution_ends)
    scheduling.delete_job(redis, job)
    assert not redis.exists(job.key)
    assert cleanups == [0, 1]  # the second try dropped the ended execution
    redis.close()


def _validator(openapi: dict[str, Any], name: str) -> Draft202012Validator:
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    resource = Resource.from_contents(openapi, default_specification=DRAFT202012)
    registry = Registry().with_resource("urn:openapi", resource)
    return Draft202012Validator({"$ref": f"urn:openapi#/components/schemas/{name}"}, registry=registry)


@pytest.mark.parametrize(
    ("extra", "valid"),
    [
        ({"callback_url": "\fhtTp://\u0006"}, False),  # found by schemathesis (issue 23): a control character as host
        ({"callback_url": "http://127.0.0.1/\x7fdone"}, False),
        ({"callback_url": "http://:80/done"}, False),
        ({"callback_url": " http://127.0.0.1/done "}, True),
        ({"regions": {"1": []}}, False),  # issue 23: the contract allowed it, the code refused it
    ],
)
def test_collation_requests_the_contract_and_the_code_agree_on(
    openapi: dict[str, Any], client: Any, synthetic: Any, extra: dict, valid: bool
) -> None:
    doc = {"manifests": [synthetic.a, synthetic.b], **extra}
    assert _validator(openapi, "CollationRequest").is_valid(doc) is valid
    r = client.post(f"{API}/collations", json=doc)
    assert r.status_code == (202 if valid else 400), r.get_json()


@pytest.mark.parametrize(
    ("schema", "path", "doc"),
    [
        ("AssessmentRequest", "assessments", {"pair": [0, 0], "source": 0, "target": 0, "verdict": "exact"}),
        (
            "BatchAssessmentRequest",
            "assessments/batch",
            {"members": [{"manuscript": 0, "index": 1}, {"manuscript": 0, "index": 1}], "verdict": "exact"},
        ),
    ],
)
def test_assessments_of_one_manuscript_with_itself_are_invalid_in_the_contract_too(
    openapi: dict[str, Any], client: Any, synthetic: Any, schema: str, path: str, doc: dict
) -> None:
    """Issue 23: schemathesis sent these as valid and got 400s; the contract now says unique items."""
    assert not _validator(openapi, schema).is_valid(doc)
    cid = client.post(f"{API}/collations", json=body(synthetic)).get_json()["id"]
    assert client.post(f"{API}/collations/{cid}/{path}", json=doc).status_code == 400


@pytest.mark.parametrize(
    ("host", "public_url", "warns"),
    [
        ("127.0.0.1", None, False),
        ("localhost", None, False),
        ("::1", None, False),
        ("0.0.0.0", None, True),
        ("192.0.2.7", None, True),
        ("0.0.0.0", "https://collation.example.org", False),
    ],
)
def test_serve_warns_when_it_binds_a_public_address_without_a_public_url(
    host: str, public_url: str | None, warns: bool, caplog: pytest.LogCaptureFixture
) -> None:
    from collation.cli.serve import warn_public_url

    with caplog.at_level("WARNING", logger="collation.service"):
        assert warn_public_url(Settings.from_env({}, host=host, public_url=public_url)) is warns
    assert ("COLLATION_PUBLIC_URL" in caplog.text) is warns

"""IIIF Auth 2.0 end to end, on loopback servers: a manifest whose images sit behind an access service
(a protected Image API answering 401 with an info.json that declares its probe and access services)
is collated when the POST carries a token for that service; without one the collation says, in words,
which service to log in to. The token goes only to that service's host, and is found nowhere
afterwards: not in the data store, not in Redis in the clear, not in the logs, not in any document the
service publishes."""

from __future__ import annotations

import contextlib
import json
import logging
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import StaticServer, static_server
from redis import Redis
from service_helpers import service_settings

from collation.core.settings import Settings

API = "/api/v1"
HOST = "http://collation.test"
TOKEN = "tok-7f3c-secret-access-token"


@pytest.fixture
def settings(tmp_path: Path, redis_url: str) -> Settings:
    return service_settings(tmp_path / "data", redis_url, chunk_pairs=6, access_token_key="a key both sides hold")


@pytest.fixture
def protected(tmp_path: Path, site: StaticServer, synthetic: Any) -> Iterator[tuple[StaticServer, str, str]]:
    """A loopback Image API (level 0, one full size) serving manuscript A's folios only with the bearer
    ``TOKEN``, and A's manifest on the public site pointing to it; (server, manifest URL, access service id)."""
    with static_server(tmp_path / "protected") as server:
        access = f"{server.url}/auth/access"
        probe = {
            "id": f"{server.url}/auth/probe",
            "type": "AuthProbeService2",
            "service": [{"id": access, "type": "AuthAccessService2", "profile": "active", "label": {"en": ["Log in"]}}],
        }
        doc = json.loads((site.root / "A" / "manifest.json").read_text())
        for f, canvas in enumerate(doc["items"]):
            body = canvas["items"][0]["items"][0]["body"]
            width, height = canvas["width"], canvas["height"]
            service_id = f"{server.url}/iiif/A-f{f}"
            body["id"] = f"{service_id}/full/max/0/default.jpg"  # the static image is behind it too
            body["service"] = [{"id": service_id, "type": "ImageService3", "profile": "level0", "service": [probe]}]
            folio = (site.root / "A" / f"f{f}.jpg").read_bytes()
            info = {
                "@context": "http://iiif.io/api/image/3/context.json",
                "id": service_id,
                "type": "ImageService3",
                "protocol": "http://iiif.io/api/image",
                "profile": "level0",
                "width": width,
                "height": height,
                "sizes": [{"width": width, "height": height}],
                "service": [probe],
            }

            def answer(handler: Any, info: dict = info, folio: bytes = folio) -> tuple[int, dict[str, str], bytes]:
                allowed = handler.headers.get("Authorization") == f"Bearer {TOKEN}"
                if handler.path.endswith("/info.json"):
                    return (200 if allowed else 401), {"Content-Type": "application/json"}, json.dumps(info).encode()
                if not allowed:
                    return 401, {"Content-Type": "text/html"}, b"<html>log in first</html>"
                return 200, {"Content-Type": "image/jpeg"}, folio

            server.routes[f"/iiif/A-f{f}/"] = answer
        server.routes["/auth/probe"] = lambda h: (200, {"Content-Type": "application/json"}, b"{}")
        url = site.write_json("A/protected.json", {**doc, "id": f"{site.url}/A/protected.json"})
        yield server, url, access


def redis_values(redis: Redis) -> list[bytes]:
    """Every key and value in Redis, RQ's compressed job data decompressed too."""
    out = []
    for key in redis.scan_iter():
        kind = redis.type(key).decode()
        if kind == "string":
            items = [redis.get(key)]
        elif kind == "hash":
            items = [v for pair in redis.hgetall(key).items() for v in pair]
        elif kind == "list":
            items = redis.lrange(key, 0, -1)
        elif kind == "set":
            items = list(redis.smembers(key))
        elif kind == "zset":
            items = redis.zrange(key, 0, -1)
        else:
            items = []
        for item in [key, *items]:
            item = item or b""
            out.append(item)
            with contextlib.suppress(zlib.error):
                out.append(zlib.decompress(item))
    return out


def published(api: Any, cid: str) -> str:
    """Every document the service publishes about collation ``cid``, as text."""
    root = f"{API}/collations/{cid}"
    paths = [root, f"{root}/annotations", f"{root}/container/", f"{root}/manifests/0", f"{root}/pages/0/1"]
    paths += [f"{root}/correspondences?pair=0,1", f"{root}/concordance", f"{root}/concordance.csv", f"{API}/activity"]
    paths += [f"{root}/view", f"{root}/view.json?pair=0,1", f"{API}/collations", "/metrics"]
    return "\n".join(api.client.get(p).get_data(as_text=True) for p in paths)


def test_a_token_for_the_access_service_opens_the_images_and_stays_secret(
    api: Any,
    run_jobs: Any,
    synthetic: Any,
    protected: Any,
    settings: Settings,
    site: StaticServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, manifest, access = protected
    caplog.set_level(logging.DEBUG)
    body = {"manifests": [manifest, synthetic.b], "regions": {"1": synthetic.b_regions}}

    # without a token: refused, in words naming the service to log in to
    refused = api.post(f"{API}/collations", json=body).get_json()["id"]
    run_jobs()
    status = api.get(f"{API}/collations/{refused}").get_json()
    errors = " ".join(e["message"] for e in status["manuscripts"][0]["errors"])
    assert status["manuscripts"][0]["status"] == "failed" and f"login required at {access}" in errors

    # with a token for that access service: another collation, which finishes with every folio of A
    with_token = {**body, "access_tokens": [{"service": access, "token": TOKEN}]}
    response = api.post(f"{API}/collations", json=with_token)
    cid = response.get_json()["id"]
    assert response.status_code == 202 and cid != refused
    stored = Redis.from_url(settings.redis_url).get(f"collation:access:{cid}") or b""
    assert stored and TOKEN.encode() not in stored  # kept encrypted while it is prepared
    run_jobs()
    status = api.get(f"{API}/collations/{cid}").get_json()
    assert status["status"] == "finished", status
    assert status["manuscripts"][0]["regions"] == synthetic.n and not status["manuscripts"][0]["errors"]

    # the token went to the protected service's host only, and only after it asked for one
    sent = [(path, headers.get("Authorization")) for path, headers in server.log]
    assert {auth for _path, auth in sent} == {None, f"Bearer {TOKEN}"}
    assert all(path.startswith("/iiif/") for path, auth in sent if auth)
    assert not any("Authorization" in headers for _path, headers in site.log)

    # and it is nowhere: the store's files, Redis, the logs, what the service publishes
    redis = Redis.from_url(settings.redis_url)
    assert not any(TOKEN.encode() in value for value in redis_values(redis))
    assert redis.get(f"collation:access:{cid}") is None  # forgotten once every manuscript is prepared
    files = [p for p in Path(settings.data_dir).rglob("*") if p.is_file()]
    assert files and not any(TOKEN.encode() in p.read_bytes() for p in files)
    assert TOKEN not in caplog.text
    assert TOKEN not in published(api, cid)


def test_a_service_without_a_key_refuses_tokens_in_words(tmp_path: Path, redis_url: str, openapi: Any) -> None:
    from service_helpers import OpenAPIClient

    from collation.app import create_app
    from collation.service.state import service_state

    app = create_app(service_settings(tmp_path / "data", redis_url), TESTING=True)
    api = OpenAPIClient(app.test_client(), openapi)
    body = {
        "manifests": ["http://127.0.0.1:9/a.json", "http://127.0.0.1:9/b.json"],
        "access_tokens": [{"service": "http://127.0.0.1:9/auth/access", "token": TOKEN}],
    }
    response = api.post(f"{API}/collations", json=body)
    problem = response.get_json()
    assert response.status_code == 400 and problem["field"] == "access_tokens", problem
    assert "does not accept access tokens" in problem["detail"] and TOKEN not in response.get_data(as_text=True)
    service_state(app).close()

"""Security headers on every response (issue 31, item 5; README, "A public deployment"): every page
carries the pages' Content-Security-Policy (scripts of our origin only, never framed), everything
else the documents' one; all carry nosniff, X-Frame-Options DENY and no-referrer; a header a route
sets itself is kept. Every GET route of the app is asked, without Redis (errors carry them too)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import RECORD_ID, record
from flask import Response

from collation.app import create_app
from collation.core.settings import Settings
from collation.service.headers import DOCUMENT_POLICY, PAGE_POLICY
from collation.service.state import service_state

COMMON = {"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"}
VALUES = {
    "cid": RECORD_ID,
    "did": "0" * 16,
    "m": "0",
    "region": "0",
    "canvas_number": "1",
    "filename": "common.js",
    "link": "0-1-0-0",
}
PAGES = {"/", "/new", f"/collations/{RECORD_ID}", f"/api/v1/collations/{RECORD_ID}/view"}
PAGES |= {f"/api/v1/collations/{RECORD_ID}/view?mirador=3", f"/api/v1/collations/{RECORD_ID}/concordance/view"}


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Any]:
    app = create_app(Settings.from_env({}, data_dir=tmp_path / "data"), TESTING=True)

    @app.route("/own-headers")
    def own_headers() -> Response:  # a route that sets headers of its own, as content negotiation does
        response = Response("{}", mimetype="application/json")
        response.headers["X-Frame-Options"] = "SAMEORIGIN"
        response.headers["Vary"] = "Accept"
        return response

    service_state(app).runtime.store.create_collation(record(status="running"))
    yield app
    service_state(app).close()


def every_get_route(app: Any) -> list[str]:
    """The URL of every GET rule of the app, its variables filled with ``VALUES``."""
    urls = []
    for rule in app.url_map.iter_rules():
        if "GET" in rule.methods:
            urls.append(re.sub(r"<(?:\w+:)?(\w+)>", lambda m: VALUES[m.group(1)], rule.rule))
    return sorted(urls)


def test_every_response_carries_the_security_headers(app: Any) -> None:
    client = app.test_client()
    urls = every_get_route(app)
    assert len(urls) >= 25 and {u.split("?")[0] for u in PAGES} <= set(urls)
    asked = {}
    for url in [*urls, *PAGES, "/api/v1/nowhere", "/api/v1/collations/fedcba9876543210"]:
        r = client.get(url)
        r.close()  # a static file's response holds the file open
        asked[url] = (r.status_code, r.mimetype)
        for name, value in COMMON.items():
            assert r.headers.get(name) == value or url == "/own-headers", (url, name, dict(r.headers))
        policy = PAGE_POLICY if r.mimetype == "text/html" else DOCUMENT_POLICY
        assert r.headers["Content-Security-Policy"] == policy, url
    for page in PAGES:
        assert asked[page] == (200, "text/html"), page
    # writes, problems and preflights too
    for r in (
        client.post("/api/v1/collations", json={"manifests": []}),  # 400 problem
        client.delete(f"/api/v1/collations/{RECORD_ID}"),  # 503: no Redis
        client.options("/api/v1/collations", headers={"Access-Control-Request-Method": "POST"}),
    ):
        assert {name: r.headers.get(name) for name in COMMON} == COMMON, r.status_code
        policy = PAGE_POLICY if r.mimetype == "text/html" else DOCUMENT_POLICY  # Flask's OPTIONS: text/html
        assert r.headers["Content-Security-Policy"] == policy


def test_the_pages_policy_lets_only_our_scripts_run_and_forbids_framing() -> None:
    rules = dict(rule.strip().split(" ", 1) for rule in PAGE_POLICY.split(";"))
    assert rules["script-src"] == "'self'" and rules["frame-ancestors"] == "'none'"
    assert rules["object-src"] == "'none'" and rules["base-uri"] == "'none'"
    assert "unsafe-eval" not in PAGE_POLICY and "unsafe-inline" not in rules["script-src"]


def test_headers_set_by_a_route_are_kept(app: Any) -> None:
    r = app.test_client().get("/own-headers")
    assert r.headers["X-Frame-Options"] == "SAMEORIGIN" and r.headers["Vary"] == "Accept"
    assert r.headers["X-Content-Type-Options"] == "nosniff"  # the others are added

"""Metrics that no client can grow (issue 41, item 1): every label from a bounded set. Made-up HTTP
methods are ``other``; refused addresses add nothing; fetched hosts are ``other`` unless the operator
names them (``COLLATION_METRICS_HOSTS``); fifty scrapes at once cost one rendering; a worker's metrics
port listens on loopback unless the operator opens it."""

from __future__ import annotations

import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlencode

import pytest
from prometheus_client.parser import text_string_to_metric_families

from collation.app import create_app
from collation.core.errors import FetchError
from collation.core.metrics import Metrics
from collation.core.settings import Settings
from collation.jobs.worker import serve_metrics
from collation.net.http import Fetcher
from collation.service.state import service_state


def series(text: str) -> list[tuple[str, dict[str, str]]]:
    """Every sample of a scrape: (name, labels)."""
    return [(s.name, s.labels) for f in text_string_to_metric_families(text) for s in f.samples]


def label_values(text: str, name: str, label: str) -> set[str]:
    return {labels[label] for n, labels in series(text) if n == name and label in labels}


@pytest.fixture
def public_app(settings: Settings) -> Any:
    """The app with the address policy of a public deployment: no private address is fetched."""
    app = create_app(settings.replace(allowed_hosts=()), TESTING=True)
    yield app
    service_state(app).close()


def test_made_up_methods_and_refused_addresses_add_no_series(public_app: Any) -> None:
    """2,000 made-up methods added 2,000 ``method`` values (187 -> 32,219 series); 1,000 refused
    ``/inspect`` addresses, answered 400 with nothing fetched, added 1,000 ``host`` values."""
    client = public_app.test_client()
    if "collation_scrapes" in public_app.extensions:  # (so that this test runs on the code before too)
        public_app.extensions["collation_scrapes"].reuse = 0  # every scrape renders (Scrapes)
    metrics = service_state(public_app).runtime.metrics

    def attack(first: int, count: int) -> str:
        """``count`` made-up methods, refused addresses and unnamed fetched hosts; the scrape after."""
        for k in range(first, first + count):
            client.open("/api/v1/collations", method=f"X{k}FORGED")
            query = urlencode({"manifest": f"http://10.{k // 250}.{k % 250}.7/manifest.json"})
            assert client.get(f"/api/v1/inspect?{query}").status_code == 400
            metrics.fetched(f"library{k}.example", "ok", 0.1)  # what a worker fetched from hosts nobody named
        return client.get("/metrics").get_data(as_text=True)

    attack(0, 1)
    once = attack(1, 1)  # every series those requests make, the scrape's own included
    after = attack(2, 300)
    assert len(series(after)) == len(series(once))
    assert label_values(after, "collation_http_requests_total", "method") == {"GET", "other"}
    assert label_values(after, "collation_fetches_total", "host") == {"other"}
    assert "10.0." not in after and "FORGED" not in after and "library7.example" not in after


def test_fetched_hosts_are_other_unless_the_operator_names_them(tmp_path: Path) -> None:
    """One POST whose manifest paints 2,000 canvases from 2,000 hosts added 2,001 ``host`` values."""
    named = Metrics(hosts=["127.0.0.2"])
    hosts = [f"127.0.0.{k}" for k in range(2, 22)]  # loopback addresses nobody listens on: refused at once
    fetcher = Fetcher(allowed_hosts=hosts, retries=0, metrics=named)
    for host in hosts:
        with pytest.raises(FetchError):
            fetcher.get(f"http://{host}:9/m.json")
    text = named.render()[0].decode()
    assert label_values(text, "collation_fetches_total", "host") == {"127.0.0.2", "other"}
    assert named.registry.get_sample_value("collation_fetches_total", {"host": "other", "outcome": "unreachable"}) == 19


def test_fifty_scrapes_at_once_render_the_metrics_once(app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """50 concurrent scrapes took p50 37 s, p95 53 s: each rendered every series again."""
    renders = []
    real = Metrics.render

    def counted(self: Metrics, accept: str = "") -> tuple[bytes, str]:
        renders.append(threading.get_ident())
        return real(self, accept)

    monkeypatch.setattr(Metrics, "render", counted)
    client = app.test_client()
    barrier = threading.Barrier(50)

    def scrape(_: int) -> int:
        barrier.wait()
        return client.get("/metrics").status_code

    with ThreadPoolExecutor(50) as pool:
        assert set(pool.map(scrape, range(50))) == {200}
    assert len(renders) <= 3, len(renders)


def test_a_workers_metrics_port_listens_on_loopback_unless_opened(tmp_path: Path) -> None:
    """The worker's metrics port listened on every interface, without a token."""
    port = free_port()
    settings = Settings.from_env({}, data_dir=tmp_path, worker_metrics_port=port)
    server = serve_metrics(SimpleNamespace(settings=settings, metrics=Metrics()))
    try:
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.shutdown()
        server.server_close()
    opened = settings.replace(worker_metrics_host="0.0.0.0", worker_metrics_port=free_port())
    server = serve_metrics(SimpleNamespace(settings=opened, metrics=Metrics()))
    try:
        assert server.server_address[0] == "0.0.0.0"
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

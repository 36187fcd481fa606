"""What an operator sees of a running service: the API's and a worker's Prometheus metrics, the worker's
JSON log lines and the API's access log, read from a real collation (a private Redis, a real
``collate worker`` subprocess with a metrics port and JSON logs, the app), and the ``/metrics``
endpoint's own rules (format, token)."""

from __future__ import annotations

import io
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families
from redis import Redis
from service_helpers import ONE_THREAD, WorkerProcesses, service_settings, wait_for

from collation import __version__
from collation.app import create_app
from collation.cli.private_servers import free_port
from collation.core.logs import ContextFilter, formatter
from collation.core.settings import Settings
from collation.jobs.worker import STEP_KINDS
from collation.service.state import service_state

API = "/api/v1"


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """``{(sample name, frozenset of its labels): value}`` of a scrape in the Prometheus text format."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(text: str, name: str, **labels: str) -> float | None:
    return samples(text).get((name, frozenset(labels.items())))


def total(text: str, name: str, **labels: str) -> float:
    """The sum of the samples ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(v for (n, got), v in samples(text).items() if n == name and wanted <= got)


@dataclass
class Observed:
    """One real collation, scraped while it ran and after, with the worker's and the API's log lines."""

    cid: str
    api_during: str
    worker_during: str
    api_after: str
    worker_after: str
    settings: Settings
    worker_lines: list[dict]
    access_lines: list[dict]


@pytest.fixture(scope="module")
def observed(redis_server: Any, synthetic: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Observed]:
    url = redis_server[1].rsplit("/", 1)[0] + "/6"  # a database of its own: other tests' workers never see it
    Redis.from_url(url).flushdb()
    tmp = tmp_path_factory.mktemp("monitoring")
    port = free_port()
    settings = service_settings(
        tmp / "data", url, chunk_pairs=6, worker_metrics_port=port, metrics_hosts=("127.0.0.1",)
    )
    app = create_app(settings, TESTING=True)
    client = app.test_client()
    access, access_log = io.StringIO(), logging.getLogger("collation.access")
    handler = logging.StreamHandler(access)
    handler.setFormatter(formatter("json"))
    handler.addFilter(ContextFilter())
    access_log.addHandler(handler)
    access_log.setLevel(logging.DEBUG)
    workers = WorkerProcesses(settings, tmp)
    workers.env.update({"COLLATION_LOG_FORMAT": "json", "COLLATION_LOG_LEVEL": "INFO"})
    metrics_url = f"http://127.0.0.1:{port}/metrics"

    def scrape_worker() -> str | None:
        try:
            return requests.get(metrics_url, timeout=5).text
        except requests.ConnectionError:
            return None

    try:
        workers.start(threads=ONE_THREAD)
        wait_for(scrape_worker, 120, "the worker's metrics port", interval=0.5)
        # A's copy whose third folio answers 404, and a callback URL the site answers 501 (it serves GET only)
        hook = synthetic.a.rsplit("/", 2)[0] + "/hook"
        body = {
            "manifests": [synthetic.partial, synthetic.b],
            "regions": {"1": synthetic.b_regions},
            "callback_url": hook,
        }
        r = client.post(f"{API}/collations", json=body)
        assert r.status_code == 202, r.get_json()
        cid = r.get_json()["id"]
        during, deadline = None, time.monotonic() + 240
        while (status := client.get(f"{API}/collations/{cid}").get_json()["status"]) != "finished":
            assert status in ("queued", "running") and time.monotonic() < deadline, (status, workers.logs())
            if during is None or status == "running":  # the last scrape while it ran
                during = (client.get("/metrics").get_data(as_text=True), scrape_worker())
            time.sleep(0.3)
        assert during is not None, "the collation finished before it could be scraped"

        def api_counts_it() -> str | None:  # the counts by status are refreshed every STATUS_REFRESH s
            text = client.get("/metrics").get_data(as_text=True)
            return text if value(text, "collation_collations", status="finished") == 1 else None

        def worker_counts_the_callback() -> str | None:  # it runs after finalize, and fails: RQ retries it
            text = scrape_worker()
            return text if text and total(text, "collation_jobs_total", step="callback") >= 1 else None

        api_after = wait_for(api_counts_it, 30, "the API to count the finished collation", interval=0.5)
        worker_after = wait_for(worker_counts_the_callback, 30, "the worker to count the callback", interval=0.3)
        client.get(f"{API}/collations/{cid}")  # one more access line, after the collation
        workers.stop_all()
        text = (tmp / "worker0.log").read_text(errors="replace")
        worker_lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        access_lines = [json.loads(line) for line in access.getvalue().splitlines()]
        yield Observed(cid, *during, api_after, worker_after, settings, worker_lines, access_lines)
    finally:
        workers.stop_all()
        access_log.removeHandler(handler)
        access_log.setLevel(logging.NOTSET)
        service_state(app).close()


def test_the_worker_counts_its_jobs_fetches_store_operations_and_feature_cache(observed: Observed) -> None:
    after = observed.worker_after
    jobs = {step: total(after, "collation_jobs_total", step=step, outcome="ok") for step in ("prepare", "features")}
    assert jobs == {"prepare": 2, "features": 2}
    assert total(after, "collation_jobs_total", step="plan", outcome="ok") == 1
    assert total(after, "collation_jobs_total", step="chunk", outcome="ok") >= 1
    assert total(after, "collation_jobs_total", step="finalize", outcome="ok") == 1
    # the callback failed (HTTP 501) and is scheduled again 5 s later, then 20 s, 60 s: retried, not failed
    assert total(after, "collation_jobs_total", step="callback", outcome="retried") >= 1
    assert total(after, "collation_jobs_total", step="callback", outcome="ok") == 0
    assert total(after, "collation_jobs_total", outcome="failed") == 0
    assert total(after, "collation_job_duration_seconds_count") == total(after, "collation_jobs_total")
    assert total(after, "collation_job_duration_seconds_sum", step="features") > 0
    # the two manifests and the folios of both manuscripts from the loopback site, but one folio: 404
    assert value(after, "collation_fetches_total", host="127.0.0.1", outcome="ok") >= 2 + 3 + 4
    assert value(after, "collation_fetches_total", host="127.0.0.1", outcome="http_404") >= 1
    assert total(after, "collation_fetches_total", host="127.0.0.1") == total(after, "collation_fetches_total")
    assert total(after, "collation_store_operations_total", backend="folder", outcome="ok") > 0
    assert total(after, "collation_store_operations_total", outcome="error") == 0
    cache = {r: total(after, "collation_feature_cache_lookups_total", result=r) for r in ("hit", "miss")}
    assert cache["hit"] >= 2 and cache["hit"] + cache["miss"] >= 4  # plan, then every chunk, read both sets
    assert value(after, "process_resident_memory_bytes") > 50e6  # a worker with its backbone loaded
    assert total(observed.worker_during, "collation_jobs_total") <= total(after, "collation_jobs_total")


def test_the_api_reports_queues_workers_collations_and_requests(observed: Observed) -> None:
    queues = (observed.settings.workers.queue_io, observed.settings.workers.queue_compute)
    during, after = observed.api_during, observed.api_after
    assert value(during, "collation_redis_up") == 1
    assert (
        total(during, "collation_collations", status="queued") + total(during, "collation_collations", status="running")
        == 1
    )
    for queue in queues:
        assert value(during, "collation_workers", queue=queue) == 1
        jobs = [dict(labels) for name, labels in samples(during) if name == "collation_queue_jobs"]
        states = {labels["state"] for labels in jobs if labels["queue"] == queue}
        assert states == {"queued", "started", "deferred", "scheduled", "failed"}
        assert value(after, "collation_queue_jobs", queue=queue, state="queued") == 0
        assert value(after, "collation_queue_jobs", queue=queue, state="failed") == 0
    assert value(after, "collation_collations", status="finished") == 1
    assert total(after, "collation_collations") == 1
    post = {"method": "POST", "route": f"{API}/collations", "status": "202"}
    assert value(after, "collation_http_requests_total", **post) == 1
    polls = value(after, "collation_http_requests_total", method="GET", route=f"{API}/collations/<cid>", status="200")
    assert polls >= 2
    assert total(after, "collation_store_operations_total", backend="folder", operation="read", outcome="ok") > 0


def test_a_worker_logs_json_lines_with_the_collation_job_and_step(observed: Observed) -> None:
    cid = observed.cid
    mine = [line for line in observed.worker_lines if line.get("collation_id") == cid]
    steps = {line["step"] for line in mine}
    assert {"prepare-0", "prepare-1", "features-0", "features-1", "plan", "finalize"} <= steps
    assert all(line["job_id"] == f"{cid}-{line['step']}" for line in mine)
    ok = [line for line in mine if line["logger"] == "rq.worker" and "Job OK" in line["message"]]
    assert {line["step"] for line in ok} >= {"prepare-0", "features-1", "plan", "finalize"}
    failure = [line for line in mine if line["level"] == "ERROR" and line["step"] == "callback"]
    assert failure and "CallbackFailed" in failure[0]["message"]  # RQ writes the traceback into the message
    assert all({"time", "level", "logger", "message"} <= set(line) for line in observed.worker_lines)
    # RQ's maintenance ran every few seconds (COLLATION_HEARTBEAT_TTL=3): none of it at INFO
    assert not [line for line in observed.worker_lines if "cleaning registries" in line["message"]]
    assert not [line for line in observed.worker_lines if "result is kept" in line["message"]]


def test_the_api_logs_an_access_line_per_request(observed: Observed) -> None:
    cid, lines = observed.cid, observed.access_lines
    post = [line for line in lines if line["method"] == "POST" and line["collation_id"] == cid]
    assert len(post) == 1
    assert post[0]["path"] == f"{API}/collations" and post[0]["status"] == 202 and post[0]["collation_id"] == cid
    assert post[0]["remote_addr"] == "127.0.0.1" and post[0]["duration_ms"] > 0
    assert post[0]["message"].startswith(f"POST {API}/collations 202 ")
    polls = [line for line in lines if line["path"] == f"{API}/collations/{cid}"]
    assert len(polls) >= 2 and all(p["collation_id"] == cid and p["level"] == "INFO" for p in polls)
    scrapes = [line for line in lines if line["path"] == "/metrics"]
    assert scrapes and all(s["level"] == "DEBUG" for s in scrapes)


# --------------------------------------------------------------------------------------------------
# The endpoint itself (no Redis: an API without one answers too)


def test_metrics_are_open_unless_a_setting_asks_for_a_token(tmp_path: Path) -> None:
    base = {"data_dir": tmp_path, "api_tokens": ("s3cret",)}
    for need, anonymous in ((False, 200), (True, 401)):
        app = create_app(Settings.from_env({}, metrics_need_token=need, **base), TESTING=True)
        client = app.test_client()
        for path in ("/metrics", f"{API}/metrics"):
            r = client.get(path)
            assert r.status_code == anonymous, path
            if anonymous == 401:
                assert r.get_json()["field"] == "Authorization"
                assert "COLLATION_METRICS_NEED_TOKEN" in r.get_json()["detail"]
            r = client.get(path, headers={"Authorization": "Bearer s3cret"})
            assert r.status_code == 200 and r.content_type == "text/plain; version=0.0.4; charset=utf-8"
            assert value(r.get_data(as_text=True), "collation_redis_up") == 0  # no Redis configured
        service_state(app).close()


def test_openmetrics_when_the_scraper_asks_for_it(tmp_path: Path) -> None:
    app = create_app(Settings.from_env({}, data_dir=tmp_path), TESTING=True)
    client = app.test_client()
    client.get(f"{API}/healthz")
    r = client.get("/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert r.content_type.startswith("application/openmetrics-text; version=1.0.0")
    assert r.get_data(as_text=True).endswith("# EOF\n")
    plain = client.get("/metrics").get_data(as_text=True)
    assert value(plain, "collation_http_requests_total", method="GET", route=f"{API}/healthz", status="200") == 1
    service_state(app).close()


# --------------------------------------------------------------------------------------------------
# Dashboards that work as they are (issue 40, item 6)

DASHBOARD = Path(__file__).parents[2] / "docs" / "grafana" / "collation-dashboard.json"


def families(text: str) -> set[str]:
    return {family.name for family in text_string_to_metric_families(text)}


def test_failure_series_start_at_zero_and_each_process_exposes_what_it_fills(observed: Observed) -> None:
    during, api = observed.worker_during, observed.api_after
    for step in STEP_KINDS:  # every step's failure series, at 0 until a job of that step fails
        for outcome in ("ok", "retried", "failed"):
            assert value(during, "collation_jobs_total", step=step, outcome=outcome) is not None, (step, outcome)
    assert value(observed.worker_after, "collation_jobs_total", step="plan", outcome="failed") == 0
    for text in (during, api):
        build = [labels for name, labels in samples(text) if name == "collation_build_info"]
        assert len(build) == 1 and ("version", __version__) in build[0]
    worker_only = {"collation_jobs", "collation_job_duration_seconds", "collation_feature_cache_lookups"}
    api_only = {"collation_http_requests", "collation_http_request_duration_seconds", "rq_jobs", "rq_workers"}
    assert worker_only <= families(observed.worker_after) and not worker_only & families(api)
    assert api_only <= families(api) and not api_only & families(observed.worker_after)


def test_the_api_exposes_rq_exporter_s_names_beside_its_own(observed: Observed) -> None:
    for text in (observed.api_during, observed.api_after):
        for queue in (observed.settings.workers.queue_io, observed.settings.workers.queue_compute):
            statuses = {
                dict(labels)["status"]
                for name, labels in samples(text)
                if name == "rq_jobs" and dict(labels)["queue"] == queue
            }
            assert statuses == {"queued", "started", "finished", "failed", "deferred", "scheduled"}
            for state in ("queued", "failed"):
                assert value(text, "rq_jobs", queue=queue, status=state) == value(
                    text, "collation_queue_jobs", queue=queue, state=state
                )
        workers = [dict(labels) for name, labels in samples(text) if name == "rq_workers"]
        assert len(workers) == 1 and workers[0]["state"] in ("busy", "idle")
        assert set(workers[0]["queues"].split(",")) == {
            observed.settings.workers.queue_io,
            observed.settings.workers.queue_compute,
        }
    assert total(observed.api_after, "rq_jobs", status="finished") >= 1
    assert total(observed.api_after, "rq_workers_success_total") >= 1


def prometheus_binary() -> str:
    import os
    import shutil

    found = os.environ.get("COLLATION_PROMETHEUS") or shutil.which("prometheus")
    if not found:
        pytest.skip("no prometheus binary (Debian's `prometheus`, installed by scripts/setup.sh)")
    return found


def test_every_dashboard_query_answers_on_a_real_prometheus(observed: Observed, tmp_path: Path) -> None:
    """A real Prometheus scrapes the collation's API and worker scrapes (replayed from a loopback server:
    those taken while it ran, then those after) and evaluates every query of the Grafana dashboard
    shipped in docs/grafana: each one is valid and returns series."""
    import subprocess

    from builders import serving

    binary = prometheus_binary()
    scrapes = {
        "api": [observed.api_during, observed.api_after],
        "worker": [observed.worker_during, observed.worker_after],
    }
    served: dict[str, int] = {"api": 0, "worker": 0}

    class Replay(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            kind = self.path.strip("/").split("/")[0]
            texts = scrapes[kind]
            body = texts[min(served[kind] // 3, len(texts) - 1)].encode()  # three scrapes of each
            served[kind] += 1
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    with serving(Replay) as replay:
        target = f"127.0.0.1:{replay.server_address[1]}"
        jobs = [
            {
                "job_name": kind,
                "scrape_interval": "1s",
                "metrics_path": f"/{kind}/metrics",
                "static_configs": [{"targets": [target]}],
            }
            for kind in scrapes
        ]
        config = tmp_path / "prometheus.yml"
        config.write_text(json.dumps({"global": {"scrape_interval": "1s"}, "scrape_configs": jobs}))
        port = free_port()
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            api = f"http://127.0.0.1:{port}/api/v1/query"

            def query(expr: str) -> dict[str, Any] | None:
                try:
                    return requests.get(api, params={"query": expr}, timeout=5).json()
                except (requests.ConnectionError, ValueError):
                    return None

            def scraped_enough() -> bool:  # both kinds of scrape, twice each, in the store
                answer = query("min(count_over_time(collation_build_info[1m]))")
                result = (answer or {}).get("data", {}).get("result", [])
                return bool(result) and float(result[0]["value"][1]) >= 5 and min(served.values()) >= 6

            wait_for(scraped_enough, 60, "Prometheus to scrape the replayed metrics", interval=0.5)
            dashboard = json.loads(DASHBOARD.read_text())
            exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
            assert len(exprs) >= 15
            for expr in exprs:
                answer = query(expr)
                assert answer is not None and answer["status"] == "success", (expr, answer)
                assert answer["data"]["result"], f"no series for {expr!r}"
        finally:
            process.terminate()
            process.wait(10)

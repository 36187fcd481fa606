"""The object store misbehaving under a real API server and real workers (issue 31, items 7 and 8).

- A frozen store (SeaweedFS stopped with SIGSTOP, not killed: connections open, nothing answers): status
  GETs answer 503 naming the store within seconds, ``/healthz`` (liveness) answers at once while
  they wait, ``/readyz`` says the store is not ready, and everything works again after SIGCONT.
  Before: each of 16 status GETs took 30.1 s, every request thread waited on the store and
  ``/healthz`` timed out.
- A worker given wrong store credentials refuses to start (exit status 3, one clear line), and a
  job that meets refused credentials fails its collation with a message naming the store instead
  of leaving it queued while the worker logs thousands of lines.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from service_helpers import WorkerProcesses, drain, served_like_production, service_settings, stop_seaweedfs

from collation.app import create_app
from collation.cli.private_servers import SEAWEEDFS_KEYS, start_seaweedfs
from collation.service.state import service_state
from collation.store.location import open_store

pytestmark = pytest.mark.slow

API = "/api/v1"


def body(synthetic: Any) -> dict[str, Any]:
    return {"manifests": [synthetic.a, synthetic.b], "regions": {"1": synthetic.b_regions}}


def timed_get(url: str, timeout: float = 60) -> tuple[int, dict[str, Any], float]:
    """(status, JSON body, seconds) of a GET; status 0 when no answer came within ``timeout``."""
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            status, data = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, data = exc.code, exc.read()
    except TimeoutError:
        status, data = 0, b""
    return status, json.loads(data or b"{}"), time.monotonic() - started


@pytest.fixture(scope="module")
def seaweedfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[subprocess.Popen, str]]:
    """One SeaweedFS (process, endpoint) for the module's tests, each with a bucket of its own: starting
    and stopping one per test cost some 4.5 s each. The frozen store's test thaws it again and checks that
    it answers before the next test uses it."""
    process, endpoint, _ = start_seaweedfs(tmp_path_factory.mktemp("seaweedfs"))
    try:
        yield process, endpoint
    finally:
        process.send_signal(signal.SIGCONT)  # whatever a failed test left it in
        stop_seaweedfs(process)


@pytest.fixture
def weed_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The credentials of ``start_seaweedfs``'s user, for this process and the workers it starts."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", SEAWEEDFS_KEYS[0])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SEAWEEDFS_KEYS[1])
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


@pytest.mark.usefixtures("weed_keys")
def test_a_frozen_object_store_does_not_freeze_the_api(
    synthetic: Any, redis_url: str, tmp_path: Path, seaweedfs: tuple[subprocess.Popen, str]
) -> None:
    weed, endpoint = seaweedfs
    config = service_settings(tmp_path / "api", redis_url, store_url="s3://frozen/data", store_endpoint=endpoint)
    app = create_app(config)
    thaw = threading.Timer(40, weed.send_signal, args=(signal.SIGCONT,))  # bounds the test on a frozen API
    with served_like_production(app, config) as root:
        try:
            open_store(config).ensure_bucket()
            cid = app.test_client().post(f"{API}/collations", json=body(synthetic)).get_json()["id"]
            assert timed_get(f"{root}/collations/{cid}")[0] == 200
            weed.send_signal(signal.SIGSTOP)
            thaw.start()
            with ThreadPoolExecutor(16) as pool:
                statuses = [pool.submit(timed_get, f"{root}/collations/{cid}") for _ in range(16)]
                time.sleep(0.5)  # every request thread is busy with a status GET by now
                health = timed_get(f"{root}/healthz", timeout=10)
                results = [s.result() for s in statuses]
            ready = timed_get(f"{root}/readyz")
            times = sorted(round(t, 2) for _, _, t in results)
            print(
                f"\nfrozen store: 16 status GETs took {times} s, /healthz {health[2]:.3f} s, /readyz {ready[2]:.2f} s"
            )
            assert health[0] == 200 and health[2] < 1.0, health
            assert {status for status, _, _ in results} == {503}, results
            assert all("object store s3://frozen/data" in doc["detail"] for _, doc, _ in results), results[0]
            assert max(times) < 8.0, times
            assert ready[0] == 503 and "object store s3://frozen/data" in ready[1]["detail"] and ready[2] < 8.0, ready
            weed.send_signal(signal.SIGCONT)
            deadline = time.monotonic() + 30
            while (back := timed_get(f"{root}/collations/{cid}"))[0] != 200 and time.monotonic() < deadline:
                time.sleep(0.5)
            assert back[0] == 200 and back[1]["status"] == "queued", back
        finally:
            thaw.cancel()
            weed.send_signal(signal.SIGCONT)
            service_state(app).close()


def worker_log_lines(processes: WorkerProcesses) -> int:
    return sum(len(p.read_text(errors="replace").splitlines()) for p in processes.log_dir.glob("worker*.log"))


@pytest.mark.usefixtures("weed_keys")
def test_a_worker_with_wrong_store_credentials_refuses_to_start(
    redis_url: str, tmp_path: Path, seaweedfs: tuple[subprocess.Popen, str]
) -> None:
    """Before: the worker started, counted as ready in /readyz, and logged 11,420 lines in 90 s."""
    endpoint = seaweedfs[1]
    config = service_settings(tmp_path / "api", redis_url, store_url="s3://creds/data", store_endpoint=endpoint)
    app = create_app(config)
    client = app.test_client()
    processes = WorkerProcesses(config, tmp_path)
    processes.env["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
    try:
        open_store(config).ensure_bucket()
        worker = processes.start(data_dir=tmp_path / "worker")
        try:
            status = worker.wait(60)
        except subprocess.TimeoutExpired:
            status = None
        ready = client.get(f"{API}/readyz")
        lines = worker_log_lines(processes)
        print(f"\nworker with a wrong secret: exit status {status}, {lines} log lines; /readyz {ready.status_code}")
        assert status == 3, processes.logs()[-2000:]
        log = processes.logs()
        assert "object store s3://creds/data" in log and "refused" in log and "SignatureDoesNotMatch" in log, log
        assert lines <= 5, log
        assert ready.status_code == 503 and ready.get_json()["checks"]["workers"][config.workers.queue_io] == 0
    finally:
        processes.stop_all()
        service_state(app).close()


@pytest.mark.usefixtures("weed_keys")
def test_a_job_refused_by_the_store_fails_its_collation_naming_the_store(
    synthetic: Any,
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    seaweedfs: tuple[subprocess.Popen, str],
) -> None:
    """A worker whose credentials stop working after it started (rotated, revoked): its jobs are refused.
    Before: the collation stayed queued with no problem in its status, its jobs retried for ever."""
    endpoint = seaweedfs[1]
    config = service_settings(
        tmp_path / "api", redis_url, store_url="s3://revoked/data", store_endpoint=endpoint, sweep_interval=1
    )
    app = create_app(config)
    service_state(app).sweeper.start()
    client = app.test_client()
    try:
        open_store(config).ensure_bucket()
        cid = client.post(f"{API}/collations", json=body(synthetic)).get_json()["id"]
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "revoked")  # for the in-process worker's store only
        started = time.monotonic()
        deadline = started + 60
        while (doc := client.get(f"{API}/collations/{cid}").get_json())["status"] != "failed":
            assert time.monotonic() < deadline, doc
            drain(config.replace(data_dir=tmp_path / "worker"), max_jobs=3)
            time.sleep(0.5)
        print(f"\nrefused jobs: the collation failed after {time.monotonic() - started:.1f} s: {doc['errors']}")
        message = " ".join(e["message"] for e in doc["errors"])
        assert "object store s3://revoked/data" in message and "SignatureDoesNotMatch" in message, doc
    finally:
        service_state(app).close()

"""The service on machines that share no disk: the object store as the system of record (SeaweedFS on
loopback ports), and what happens when API and workers do not share a store.

- Features and pair scores are reused across collations through the object store, by workers that
  each have a directory of their own.
- The object store down in the middle of a collation (stopped, probed for ``OUTAGE_SECONDS``, started
  again): nothing is lost, it finishes.
- API and worker each with its own folder and no object store (the issue's three machines): the
  collation ends as failed with a reason naming the stores, instead of looping, and ``/readyz``
  names the worker.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from service_helpers import (
    SEAWEEDFS_ELECTION_TIMEOUT,
    WorkerProcesses,
    drain,
    service_settings,
    stop_seaweedfs,
    wait_for,
)

from collation.app import create_app
from collation.cli.private_servers import SEAWEEDFS_KEYS, start_seaweedfs
from collation.service.state import service_state
from collation.store.location import open_store

pytestmark = pytest.mark.slow

API = "/api/v1"
OUTAGE_SECONDS = 2.0
"""How long the outage test asks the stopped store for the status before starting it again. The store is
down some 6 s in all (1 s to stop, these 2 s, about 3 s to start again), already far longer than one
job's retries (immediate, ``job_retries``): jobs fail, and only the sweeps reaching past the outage
(backing off while the store is down) bring the collation back. 2 s is four status GETs, each answered
at once (the port refuses connections), enough to see the API name the store; 4 and 10 s proved nothing
more."""

OUTAGE_SWEEP_INTERVAL = 0.25
"""The outage test's sweep interval: the sweeper's back-off is capped at 16 intervals, so after the outage
the next sweep comes within 4 s (8 s at 0.5 s, 16 s at 1 s: the collation finished 8 s after the store
was back). The back-off itself is what the outage exercises either way: 0.5, 1, 2, 4 s while it lasts."""


def body(synthetic: Any, manifests: list[str] | None = None, **options: Any) -> dict[str, Any]:
    return {
        "manifests": manifests or [synthetic.a, synthetic.b],
        "regions": {"1": synthetic.b_regions},
        "options": options,
    }


def finished(client: Any, cid: str) -> bool:
    doc = client.get(f"{API}/collations/{cid}").get_json()
    assert doc["status"] not in ("failed", "cancelled"), doc
    return doc["status"] == "finished"


def manuscript_features(versions: dict[str, str]) -> dict[str, str]:
    """The manuscripts' feature objects of a ``store.versions("features/")``, without the pairs' turned ones
    (``records.turned_features_key``: the illustrations a pair chose to describe turned)."""
    return {key: version for key, version in versions.items() if ".turned-" not in key}


def pair_scores(versions: dict[str, str]) -> dict[str, str]:
    """The pairs' score matrices of a ``store.versions("scores/")``, without the transposition beside each
    (``.T.npy``: which transposition gave S, with ``turns``)."""
    return {key: version for key, version in versions.items() if not key.endswith(".T.npy")}


def test_features_and_scores_are_reused_through_the_object_store(
    synthetic: Any, redis_url: str, tmp_path: Path, s3_server: Any, s3_url: str
) -> None:
    options = {"store_url": s3_url, "store_endpoint": s3_server.endpoint}
    api_settings = service_settings(tmp_path / "api", redis_url, chunk_pairs=6, **options)
    app = create_app(api_settings, TESTING=True)
    client = app.test_client()
    store = open_store(api_settings)
    try:
        first = client.post(f"{API}/collations", json=body(synthetic)).get_json()["id"]
        drain(api_settings.replace(data_dir=tmp_path / "machine1"))  # one worker machine
        assert client.get(f"{API}/collations/{first}").get_json()["status"] == "finished"
        features, scores = manuscript_features(store.versions("features/")), pair_scores(store.versions("scores/"))
        assert len(features) == 2 and len(scores) == 1
        turned = store.versions("features/").keys() - features.keys()  # a pair's turned illustrations (turns)

        second = client.post(
            f"{API}/collations", json=body(synthetic, [synthetic.a, synthetic.b, synthetic.c], propagation="3-cycles")
        ).get_json()["id"]
        drain(api_settings.replace(data_dir=tmp_path / "machine2"))  # another one, with an empty cache
        assert finished(client, second)
        everything, scores_after = store.versions("features/"), pair_scores(store.versions("scores/"))
        after = manuscript_features(everything)
        assert len(after) == 3 and {k: after[k] for k in features} == features  # A and B not described again
        assert turned <= everything.keys()  # nor (A, B)'s turned illustrations
        assert len(scores_after) == 3 and {k: scores_after[k] for k in scores} == scores  # (A, B) not rescored
        corr = client.get(f"{API}/collations/{second}/correspondences?pair=0,2&top=1").get_json()
        assert [item["candidates"][0]["index"] for item in corr["items"]] == list(range(synthetic.n))
        assert not (tmp_path / "api" / "features").exists()
    finally:
        service_state(app).close()


def test_an_object_store_down_mid_scoring_loses_nothing(
    synthetic: Any, redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SeaweedFS of its own, stopped once the collation is scoring, then started again on the same folder
    and ports: jobs fail meanwhile with a message naming the store, are retried, and the collation
    finishes with every correspondence right. A sweep every ``OUTAGE_SWEEP_INTERVAL`` s."""
    # its credentials, as the session's s3_server sets them (run alone, nobody else has)
    for key, value in zip(("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"), SEAWEEDFS_KEYS, strict=True):
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    folder = tmp_path / "seaweedfs"
    server, endpoint, ports = start_seaweedfs(folder, election_timeout=SEAWEEDFS_ELECTION_TIMEOUT)
    options = {"store_url": "s3://outage/data", "store_endpoint": endpoint}
    config = service_settings(
        tmp_path / "api", redis_url, chunk_pairs=2, sweep_interval=OUTAGE_SWEEP_INTERVAL, job_retries=2, **options
    )
    open_store(config).ensure_bucket()
    app = create_app(config, TESTING=True)
    service_state(app).sweeper.start()
    client = app.test_client()
    processes = WorkerProcesses(config, tmp_path)
    problems: set[str] = set()
    try:
        cid = client.post(f"{API}/collations", json=body(synthetic, seed=5)).get_json()["id"]
        processes.start(threads=1, data_dir=tmp_path / "worker0")
        wait_for(
            lambda: client.get(f"{API}/collations/{cid}").get_json()["progress"]["stage"] == "scoring",
            120,
            "scoring to start",
            interval=0.05,
        )
        stop_seaweedfs(server)
        down = time.monotonic()
        while time.monotonic() - down < OUTAGE_SECONDS:
            doc = client.get(f"{API}/collations/{cid}")
            if doc.status_code >= 500 or doc.get_json().get("problem"):
                problems.add(doc.get_json().get("detail") or doc.get_json().get("problem"))
            time.sleep(0.5)
        server, _, _ = start_seaweedfs(folder, ports=ports, election_timeout=SEAWEEDFS_ELECTION_TIMEOUT)
        wait_for(lambda: finished(client, cid), 180, "the collation to finish after the outage", interval=0.25)
        corr = client.get(f"{API}/collations/{cid}/correspondences?pair=0,1&top=1").get_json()
        assert [item["candidates"][0]["index"] for item in corr["items"]] == list(range(synthetic.n))
        print(f"\nwhile the store was down, the API said: {sorted(problems)}")
        assert problems and all("object store s3://outage/data" in p for p in problems), problems
        assert "Traceback" not in processes.logs() or "StoreUnavailable" in processes.logs()
    finally:
        processes.stop_all()
        service_state(app).close()
        stop_seaweedfs(server)


def test_api_and_worker_on_separate_folders_fail_with_the_reason(
    synthetic: Any, redis_url: str, tmp_path: Path
) -> None:
    """The issue's report: API and worker each with its own COLLATION_DATA_DIR. Before, every job
    'succeeded' in 0.2 ms and the sweep enqueued them again forever; /readyz said ready."""
    config = service_settings(tmp_path / "api", redis_url, sweep_interval=1)
    app = create_app(config, TESTING=True)
    service_state(app).sweeper.start()
    client = app.test_client()
    processes = WorkerProcesses(config, tmp_path)
    try:
        processes.start(threads=1, data_dir=tmp_path / "elsewhere")
        not_ready = wait_for(
            lambda: (
                (r := client.get(f"{API}/readyz")).status_code == 503
                and all(r.get_json()["checks"]["workers"].values())
                and r
            ),
            60,
            "the worker to register",
        )
        checks = not_ready.get_json()["checks"]
        assert checks["store"] is False and "use another data store than this API" in checks["store_error"]
        cid = client.post(f"{API}/collations", json=body(synthetic)).get_json()["id"]
        doc = wait_for(
            lambda: (d := client.get(f"{API}/collations/{cid}").get_json())["status"] == "failed" and d,
            60,
            "the collation to fail",
            interval=0.25,
        )
        message = " ".join(e["message"] for e in doc["errors"])
        assert "is not the API's" in message and "COLLATION_STORE_URL" in message, doc
    finally:
        processes.stop_all()
        service_state(app).close()


def test_an_unreachable_object_store_is_a_503_naming_it(synthetic: Any, redis_url: str, tmp_path: Path) -> None:
    options = {"store_url": "s3://unreachable/data", "store_endpoint": "http://127.0.0.1:9"}  # refused
    app = create_app(service_settings(tmp_path / "api", redis_url, **options), TESTING=True)
    client = app.test_client()
    try:
        r = client.post(f"{API}/collations", json=body(synthetic))
        assert r.status_code == 503 and r.headers["Content-Type"].startswith("application/problem+json"), r.data
        assert "object store s3://unreachable/data at http://127.0.0.1:9 cannot be reached" in r.get_json()["detail"]
        r = client.get(f"{API}/readyz")
        assert r.status_code == 503 and "s3://unreachable/data" in r.get_json()["checks"]["store_error"]
        assert client.get(f"{API}/collations/0123456789abcdef").status_code == 503
    finally:
        service_state(app).close()


def test_an_io_worker_and_a_compute_worker_on_separate_machines(
    synthetic: Any, redis_url: str, tmp_path: Path, s3_server: Any, s3_url: str
) -> None:
    """The deployment of docs/deployment.md: an io worker and a compute worker (the GPU machine's role),
    each with a directory of its own, exchange everything through the object store."""
    options = {"store_url": s3_url, "store_endpoint": s3_server.endpoint}
    config = service_settings(tmp_path / "api", redis_url, sweep_interval=1, **options)
    app = create_app(config, TESTING=True)
    service_state(app).sweeper.start()
    client = app.test_client()
    processes = WorkerProcesses(config, tmp_path)
    try:
        processes.start("--queues", "io", threads=1, data_dir=tmp_path / "io-machine")
        processes.start("--queues", "compute", threads=1, data_dir=tmp_path / "gpu-machine")
        cid = client.post(f"{API}/collations", json=body(synthetic, seed=9)).get_json()["id"]
        wait_for(lambda: finished(client, cid), 120, "the collation to finish", interval=0.25)
        corr = client.get(f"{API}/collations/{cid}/correspondences?pair=0,1&top=1").get_json()
        assert [item["candidates"][0]["index"] for item in corr["items"]] == list(range(synthetic.n))
        # the compute machine described the images the io machine fetched: it read them from the store
        assert list((tmp_path / "gpu-machine").rglob("*.png")) and not list((tmp_path / "io-machine").rglob("*.pt"))
    finally:
        processes.stop_all()
        service_state(app).close()

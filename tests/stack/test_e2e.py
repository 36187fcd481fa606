"""End to end: real Redis on a private port, real RQ workers in subprocesses, the real IIIF image
server (iipsrv behind lighttpd) serving the Physiologus folios, and ``collate serve`` itself.

P2 is published as Presentation 2.1 with canvases twice the size of the images (like the Vatican's)
and its regions in annotation lists; P3 as Presentation 3.0 with embedded tagging annotations. The
15 illustrations k = 0..14 of P2 must be matched to illustration k of P3, in the JSON and in the
annotations; after a worker is killed with SIGKILL in the middle of scoring, or Redis restarts in
the middle (both with the object store, workers without a shared disk), the collation finishes with
the same scores.
"""

from __future__ import annotations

import csv
import io
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests
from redis import Redis
from service_helpers import (
    ONE_THREAD,
    REPO,
    OpenAPIClient,
    WorkerProcesses,
    physiologus_v2,
    physiologus_v3,
    service_settings,
    wait_for,
)

from collation.app import create_app
from collation.cli.private_servers import free_port, start_redis, stop
from collation.core.settings import Settings
from collation.service.state import service_state
from collation.store.location import open_store

pytestmark = pytest.mark.slow

API = "/api/v1"
K = 15  # illustrations 0..14 of P2 and P3: those whose folios are in the shared data
P2_SCALE = 2  # P2's canvases are twice the size of the images served


def p2_manifest(site: Any, iipsrv: Any) -> str:
    """P2 as Presentation 2.1: ImageService2 from iipsrv, canvas = 2 x image, regions in annotation lists."""
    doc, _ = physiologus_v2(
        f"{site.url}/e2e/P2/manifest.json",
        "Ott.gr.354 (P2), first folios",
        iipsrv.boxes["P2"][:K],
        iipsrv,
        canvas_scale=P2_SCALE,
        site=site,
    )
    return site.write_json("e2e/P2/manifest.json", doc)


def p3_manifest(site: Any, iipsrv: Any) -> str:
    """P3 as Presentation 3.0: ImageService2 from iipsrv, canvas = image, embedded tagging annotations."""
    doc, _ = physiologus_v3(
        f"{site.url}/e2e/P3/manifest.json",
        "Marc. gr. IV.35 (P3), first folios",
        iipsrv.boxes["P3"][:K],
        iipsrv,
        tagging=True,
    )
    return site.write_json("e2e/P3/manifest.json", doc)


@pytest.fixture(scope="module")
def physiologus_manifests(site: Any, iipsrv: Any) -> tuple[str, str]:
    return p2_manifest(site, iipsrv), p3_manifest(site, iipsrv)


@dataclass
class Run:
    """One service (in-process app with its recovery sweep) and its worker subprocesses."""

    api: OpenAPIClient
    app: Any
    settings: Settings
    workers: WorkerProcesses

    def submit(self, manifests: tuple[str, str]) -> str:
        """POSTs the collation, and again after its Retry-After when the answer is 503, as a client does: on a
        loaded machine SeaweedFS can miss the store's 5 s read timeout once (seen at the suite's start), and
        the same request is the same collation."""
        for _ in range(3):
            r = self.api.post(f"{API}/collations", json={"manifests": list(manifests)})
            if r.status_code != 503:
                break
            time.sleep(float(r.headers.get("Retry-After", 5)))
        assert r.status_code == 202, r.get_json()
        return r.get_json()["id"]

    def status(self, cid: str) -> dict[str, Any]:
        return self.api.get(f"{API}/collations/{cid}").get_json()

    def wait_finished(self, cid: str, timeout: float = 240) -> dict[str, Any]:
        def done() -> dict[str, Any] | None:
            doc = self.status(cid)
            assert doc["status"] not in ("failed", "cancelled"), doc
            return doc if doc["status"] == "finished" else None

        try:
            return wait_for(done, timeout, f"collation {cid} to finish", interval=0.25)
        except AssertionError:
            print(self.status(cid), self.workers.logs(), sep="\n")
            raise

    def scores(self, cid: str) -> dict[str, np.ndarray]:
        return open_store(self.settings).load_results(cid, 0, 1).arrays()


def make_run(settings: Settings, openapi: dict[str, Any], log_dir: Path) -> Run:
    app = create_app(settings, TESTING=True)
    service_state(app).sweeper.start()
    return Run(OpenAPIClient(app.test_client(), openapi), app, settings, WorkerProcesses(settings, log_dir))


def seed_features(run: Run, reference: Run) -> None:
    """Copies the reference's region images and features into the run's store (a folder or an object
    store): these tests are about scoring, and features are cached by content anyway (the pair scores
    are not copied)."""
    source, target = open_store(reference.settings), open_store(run.settings)
    for prefix in ("images/", "features/"):
        for key in source.versions(prefix):
            target.write(key, source.read(key))


def close_run(run: Run) -> None:
    run.workers.stop_all()
    service_state(run.app).close()  # stops the sweeper, closes Redis


def e2e_settings(tmp_path: Path, redis_url: str, store_options: dict[str, str] | None = None) -> Settings:
    return service_settings(tmp_path / "data", redis_url, chunk_pairs=16, sweep_interval=1, **(store_options or {}))


def scoring_started(run: Run, cid: str, pairs: int) -> bool:
    progress = run.status(cid)["progress"]
    return progress["stage"] == "scoring" and pairs <= progress["done"] < K * K


@pytest.fixture(scope="module")
def baseline(
    physiologus_manifests: tuple[str, str],
    redis_server: Any,
    openapi: dict[str, Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Run, str]:
    """The Physiologus collation computed once by two worker subprocesses, which stay for the module's
    three-witness collation (a worker's start is seconds of torch and timm imports)."""
    url = redis_server[1].rsplit("/", 1)[0] + "/1"  # a database of its own: other runs' workers never see it
    Redis.from_url(url).flushdb()
    tmp = tmp_path_factory.mktemp("baseline")
    run = make_run(e2e_settings(tmp, url), openapi, tmp)
    try:
        started = time.monotonic()
        cid = run.submit(physiologus_manifests)
        run.workers.start(threads=ONE_THREAD)  # two workers share the two cores
        run.workers.start(threads=ONE_THREAD)
        run.wait_finished(cid)
        print(
            f"\nPhysiologus 15 x 15, folder store, two workers: {time.monotonic() - started:.1f} s (with worker start)"
        )
        yield run, cid
    finally:
        close_run(run)


def test_physiologus_p2_p3_illustrations_match(baseline: tuple[Run, str], iipsrv: Any) -> None:
    run, cid = baseline
    doc = run.status(cid)
    assert [(m["status"], m["regions"], m["errors"]) for m in doc["manuscripts"]] == [("ready", K, [])] * 2
    for pair in ("0,1", "1,0"):
        corr = run.api.get(f"{API}/collations/{cid}/correspondences?pair={pair}&score=propagated&top=3").get_json()
        best = [(i["source"]["index"], i["candidates"][0]["index"]) for i in corr["items"]]
        assert best == [(k, k) for k in range(K)]
        assert all(i["candidates"][0]["cycle_consistent"] for i in corr["items"])
    corr = run.api.get(f"{API}/collations/{cid}/correspondences?pair=0,1&top=1").get_json()
    for k, item in enumerate(corr["items"]):  # canvas coordinates: P2's boxes scaled to its larger canvases
        assert item["source"]["xywh"] == [v * P2_SCALE for v in iipsrv.boxes["P2"][k].xywh]
        assert item["candidates"][0]["xywh"] == list(iipsrv.boxes["P3"][k].xywh)
        assert item["source"]["canvas"].endswith(iipsrv.boxes["P2"][k].folio.stem)

    collection = run.api.get(f"{API}/collations/{cid}/annotations").get_json()
    links = []
    for n in range(1, 1 + -(-collection["total"] // 100)):
        page = run.api.get(f"{API}/collations/{cid}/annotations?page={n}").get_json()
        links += [a for a in page["items"] if a["motivation"] == "linking" and a["imcol:rank"] == 1]
    stems = {p: [b.folio.stem for b in iipsrv.boxes[p][:K]] for p in ("P2", "P3")}
    matched = set()
    for link in links:
        ends = {link["target"]["source"]["id"].rsplit("/", 1)[-1], link["body"]["source"]["id"].rsplit("/", 1)[-1]}
        for k in range(K):
            if ends == {stems["P2"][k], stems["P3"][k]}:
                matched.add(k)
    assert matched == set(range(K))

    manifest = run.api.get(f"{API}/collations/{cid}/manifests/0").get_json()
    assert manifest["@type"] == "sc:Manifest" and all(c["otherContent"] for c in manifest["sequences"][0]["canvases"])
    page = run.api.get(
        manifest["sequences"][0]["canvases"][0]["otherContent"][-1]["@id"].removeprefix("http://collation.test")
    ).get_json()
    x, y, w, h = (v * P2_SCALE for v in iipsrv.boxes["P2"][0].xywh)
    assert any(r["on"]["selector"]["value"] == f"xywh={x},{y},{w},{h}" for r in page["resources"])


def test_a_redis_restart_while_scoring_loses_nothing(
    physiologus_manifests: tuple[str, str],
    baseline: tuple[Run, str],
    openapi: dict[str, Any],
    tmp_path: Path,
    s3_server: Any,
    s3_url: str,
) -> None:
    """Redis stopped and started empty while the worker scores: the API's sweep finds in the object store
    what is missing and enqueues it again (the worker on a machine of its own). The folder store's
    worker outliving a Redis outage: tests/hostile/test_faults.py."""
    reference, reference_cid = baseline
    port = free_port()
    redis_process, url = start_redis(tmp_path / "redis", port=port)
    options = {"store_url": s3_url, "store_endpoint": s3_server.endpoint}
    run = make_run(e2e_settings(tmp_path, url, options), openapi, tmp_path)
    seed_features(run, reference)
    try:
        cid = run.submit(physiologus_manifests)
        run.workers.start(threads=ONE_THREAD, data_dir=tmp_path / "worker0")
        wait_for(lambda: scoring_started(run, cid, 32), 240, "scoring to start", interval=0.05)
        stop(redis_process)  # no persistence: queues, jobs and registries are gone
        redis_process, _ = start_redis(tmp_path / "redis", port=port)
        run.wait_finished(cid)  # the sweep re-enqueued what the store says is missing
        got, want = run.scores(cid), reference.scores(reference_cid)
        for name in ("S", "N_S", "P_S"):
            np.testing.assert_array_equal(got[name], want[name])
    finally:
        close_run(run)
        stop(redis_process)


def test_two_workers_without_a_shared_disk_one_killed_while_scoring(
    physiologus_manifests: tuple[str, str],
    redis_url: str,
    baseline: tuple[Run, str],
    openapi: dict[str, Any],
    tmp_path: Path,
    s3_server: Any,
    s3_url: str,
) -> None:
    """The whole Physiologus collation, every step, with the API and two workers each given a directory of
    its own (three machines without a shared disk) and the object store as the system of record; one
    worker is killed with SIGKILL while scoring, and its chunk, abandoned, is retried by the other. The
    same scores as the folder's undisturbed run, and the API's directory holds no store data.

    (The folder store's worker killed in each stage: tests/hostile/test_faults.py.)"""
    reference, reference_cid = baseline
    url = redis_url.rsplit("/", 1)[0] + "/3"
    Redis.from_url(url).flushdb()
    options = {"store_url": s3_url, "store_endpoint": s3_server.endpoint}
    run = make_run(e2e_settings(tmp_path / "api", url, options), openapi, tmp_path)
    try:
        run.workers.env["COLLATION_LOG_LEVEL"] = "INFO"  # for the bytes each downloaded
        started = time.monotonic()
        cid = run.submit(physiologus_manifests)
        assert cid == reference_cid  # same inputs, same id (another data store)
        killed = run.workers.start(threads=ONE_THREAD, data_dir=tmp_path / "worker0")
        run.workers.start(threads=ONE_THREAD, data_dir=tmp_path / "worker1")
        wait_for(lambda: scoring_started(run, cid, 32), 240, "scoring to start", interval=0.05)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        assert run.status(cid)["status"] == "running"
        run.wait_finished(cid)
        seconds = time.monotonic() - started
        run.workers.stop_all()  # the one left says how many bytes it downloaded
        said = re.findall(r"(\d+) bytes downloaded", run.workers.logs())
        print(
            f"\nPhysiologus 15 x 15, object store, two workers, one killed: {seconds:.1f} s (with worker start), "
            f"downloaded {said}"
        )
        got, want = run.scores(cid), reference.scores(reference_cid)
        for name in ("S", "N_S", "P_S"):
            np.testing.assert_array_equal(got[name], want[name])
        api_files = [p for p in (tmp_path / "api").rglob("*") if p.is_file()]
        assert not [p for p in api_files if "features" in p.parts or "collations" in p.parts], api_files
        cached = [p for w in ("worker0", "worker1") for p in (tmp_path / w).rglob("*.pt")]
        assert cached  # the workers read features through their local caches
    finally:
        close_run(run)


@pytest.mark.stack  # `collate serve` starts Redis and workers
def test_collate_serve_runs_everything_on_one_machine(synthetic: Any, tmp_path: Path) -> None:
    """``serve`` without a Redis URL starts a private redis-server and a worker, prints the URL, serves a
    collation over HTTP and stops cleanly on Ctrl-C."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLLATION_")}
    env.update(
        COLLATION_DATA_DIR=str(tmp_path / "data"),
        COLLATION_ALLOWED_HOSTS="127.0.0.1",
        COLLATION_DEVICE="cpu",
        COLLATION_LOG_LEVEL="WARNING",
        PYTHONPATH=str(REPO),
        OMP_NUM_THREADS=str(ONE_THREAD),  # its worker on one thread, as the others here
    )
    log = tmp_path / "serve.log"  # a file, not a pipe: a pipe nobody reads blocks the children writing to it
    with open(log, "w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "collation", "serve", "--port", "0"],
            env=env,
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        lines = wait_for(
            lambda: (text := log.read_text()).count("\n") >= 2 and "/api/v1" in text and text.splitlines(),
            60,
            "serve to print its URL",
        )
        line = next(x for x in lines if "Collation service on" in x)
        workspace = re.search(r"(http://\S+/) : open it in a browser", line).group(1)
        url = re.search(r"(http://\S+/api/v1)", next(x for x in lines if "API:" in x)).group(1)
        assert url == workspace + "api/v1"
        assert requests.get(f"{url}/healthz", timeout=10).json() == {"status": "ok"}
        home = requests.get(workspace, timeout=10)  # the workspace, where a historian starts
        assert home.status_code == 200 and "New collation" in home.text
        wait_for(lambda: requests.get(f"{url}/readyz", timeout=10).status_code == 200, 120, "a worker")
        r = requests.post(f"{url}/collations", json={"manifests": [synthetic.a, synthetic.c]}, timeout=10)
        assert r.status_code == 202 and r.headers["Access-Control-Allow-Origin"] == "*"
        status_url = r.headers["Location"]
        doc = wait_for(
            lambda: (d := requests.get(status_url, timeout=10).json())["status"] == "finished" and d,
            120,
            "the collation",
            interval=0.25,
        )
        assert [m["regions"] for m in doc["manuscripts"]] == [synthetic.n, synthetic.n]
        corr = requests.get(f"{status_url}/correspondences?pair=1,0&top=1", timeout=10).json()
        assert [i["candidates"][0]["index"] for i in corr["items"]] == list(range(synthetic.n))
        assert (tmp_path / "data" / "redis" / "redis.log").is_file()
    finally:
        process.send_signal(signal.SIGINT)
        try:
            code = process.wait(60)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert code == 0, f"serve ended with {code} after Ctrl-C; it printed: {log.read_text()[-3000:]}"
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{url}/healthz", timeout=2)


def p3_second_manifest(site: Any, iipsrv: Any) -> str:
    """A third witness: P3's illustrations 3..14 published again in a manifest of their own (own canvas ids)."""
    doc, _ = physiologus_v3(
        f"{site.url}/e2e/P3b/manifest.json",
        "Marc. gr. IV.35 (P3), from illustration 3",
        iipsrv.boxes["P3"][3:K],
        iipsrv,
        tagging=True,
    )
    return site.write_json("e2e/P3b/manifest.json", doc)


def test_three_witnesses_concordance_and_verdict_categories(
    baseline: tuple[Run, str], site: Any, iipsrv: Any, physiologus_manifests: tuple[str, str]
) -> None:
    """P2, P3 and P3's illustrations 3..14 again: one row per illustration of P2, three witnesses wide from
    illustration 3 on; a "no match" verdict splits a row and P_S falls, a batch "partial" joins it again."""
    run, _ = baseline
    cid = run.submit((*physiologus_manifests, p3_second_manifest(site, iipsrv)))
    run.wait_finished(cid)  # by the baseline's two workers
    root = f"{API}/collations/{cid}"
    doc = run.api.get(f"{root}/concordance").get_json()
    assert [w["regions"] for w in doc["witnesses"]] == [K, K, K - 3]

    def rows(doc: dict[str, Any]) -> list[list[int | None]]:
        return [[c["index"] if c else None for c in row["cells"]] for row in doc["rows"]]

    expected = [[k, k, k - 3 if k >= 3 else None] for k in range(K)]
    assert rows(doc) == expected and (doc["matched"], doc["unmatched"]) == (K, 0)
    assert all(c["confidence"] > 0.5 for row in doc["rows"] for c in row["cells"] if c)
    cell = doc["rows"][3]["cells"][2]  # P3b's first illustration, cut by iipsrv
    region = requests.get(cell["image"], timeout=30)
    assert region.status_code == 200 and region.headers["Content-Type"].startswith("image/jpeg")
    assert cell["view"].startswith("http://collation.test/api/v1/collations/")
    assert rows(run.api.get(f"{root}/concordance?sort=2").get_json()) == expected[3:] + expected[:3]

    table = list(csv.reader(io.StringIO(run.api.get(f"{root}/concordance.csv").get_data(as_text=True))))
    # group, witnesses, confidence; per witness No., folio, region, image, canvas, verdict; then reviewers,
    # notes, weak and the Content State link (collation/service/exports.py)
    assert len(table) == 1 + K and len(table[0]) == 3 + 3 * 6 + 4
    assert table[4][3:5] == ["4", doc["rows"][3]["cells"][0]["label"]] and table[4][-7] == cell["image"]
    assert table[4][-1] == doc["rows"][3]["share"]

    def p_s(i: int, j: int) -> dict[str, Any]:
        items = run.api.get(f"{root}/correspondences?pair=0,1&top={K}").get_json()["items"]
        return next(c for c in items[i]["candidates"] if c["index"] == j)

    before = p_s(5, 5)["P_S"]
    r = run.api.post(f"{root}/assessments", json={"pair": [0, 1], "source": 5, "target": 5, "verdict": "none"})
    assert r.status_code == 201 and r.get_json()["annotation"]["body"]["value"] == "none"
    split_p_s = p_s(5, 5)["P_S"]
    assert p_s(5, 5)["category"] == "none" and split_p_s < before  # no longer a seed
    split = run.api.get(f"{root}/concordance").get_json()
    # P2 5 and P3 5 part; P3b 2 stays with the one whose link to it scores higher, the other is alone
    assert ([5, None, 2] in rows(split) and [None, 5, None] in rows(split)) or (
        [5, None, None] in rows(split) and [None, 5, 2] in rows(split)
    )
    assert split["unmatched"] == 1 and split["matched"] == K

    members = [{"manuscript": 0, "index": 5}, {"manuscript": 1, "index": 5}, {"manuscript": 2, "index": 2}]
    r = run.api.post(f"{root}/assessments/batch", json={"members": members, "verdict": "partial"})
    assert [i["category"] for i in r.get_json()["items"]] == ["partial"] * 3
    assert p_s(5, 5)["category"] == "partial" and p_s(5, 5)["P_S"] == pytest.approx(before)  # a seed again
    print(
        f"3-witness concordance: {K} rows, {doc['matched']} matched; P_S(P2 5, P3 5): {before:.3f} proposed, "
        f"{split_p_s:.3f} after none, {p_s(5, 5)['P_S']:.3f} after partial"
    )
    joined = run.api.get(f"{root}/concordance").get_json()
    assert rows(joined) == expected
    assert [(c["verdict"], c["confidence"]) for c in joined["rows"][5]["cells"]] == [("partial", 1.0)] * 3

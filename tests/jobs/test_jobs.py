"""Collations run by an in-process RQ worker (the real job graph on the real Redis) over synthetic
manuscripts served on 127.0.0.1: results, annotations, partial failures, caching, assessments,
progress, cancellation and recovery. Responses are checked against ``openapi.yaml``."""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from builders import serving
from redis import Redis
from rq import Queue
from rq.job import Job, JobStatus
from service_helpers import runtime_for, status, submit

from collation.jobs import tasks
from collation.jobs.runtime import activate
from collation.jobs.scheduling import Scheduler
from collation.store.folder import FolderStore

API = "/api/v1"


def top1(api: Any, cid: str, pair: str, score: str = "propagated") -> dict[int, int]:
    doc = api.get(f"{API}/collations/{cid}/correspondences?pair={pair}&score={score}&top=3").get_json()
    return {item["source"]["index"]: item["candidates"][0]["index"] for item in doc["items"]}


def scheduler(settings: dict[str, Any], clock: Any = time.time) -> Scheduler:
    return Scheduler(runtime_for(settings), clock=clock)


# --------------------------------------------------------------------------------------------------


def test_a_collation_runs_to_correspondences_and_annotations(api: Any, synthetic: Any, run_jobs: Any) -> None:
    cid = submit(api, [synthetic.a, synthetic.b], regions={"1": synthetic.b_regions})
    run_jobs()
    doc = status(api, cid)
    assert doc["status"] == "finished", doc
    assert doc["progress"] == {"stage": "finished", "done": 1, "total": 1}
    assert [(m["status"], m["regions"], m["errors"]) for m in doc["manuscripts"]] == [("ready", 4, [])] * 2
    assert doc["manuscripts"][0]["label"] == "Manuscript A"

    diagonal = {k: k for k in range(synthetic.n)}
    for pair in ("0,1", "1,0"):
        for score in ("raw", "normalized", "propagated"):
            assert top1(api, cid, pair, score) == diagonal, (pair, score)
    corr = api.get(f"{API}/collations/{cid}/correspondences?pair=0,1&top=2").get_json()
    first = corr["items"][0]
    assert first["source"] == {
        "index": 0,
        "canvas": f"{synthetic.a.rsplit('/', 1)[0]}/canvas/0",
        "xywh": [30, 40, 200, 150],
    }
    best = first["candidates"][0]
    assert best["xywh"] == [60, 20, 180, 135] and best["rank"] == 1 and best["cycle_consistent"] is True
    assert best["P_S"] > best["N_S"] > 0 and [c["rank"] for c in first["candidates"]] == [1, 2]
    back = api.get(f"{API}/collations/{cid}/correspondences?pair=1,0&top=1").get_json()
    assert back["pair"] == [1, 0] and back["items"][2]["candidates"][0]["S"] == pytest.approx(
        api.get(f"{API}/collations/{cid}/correspondences?pair=0,1&top=1").get_json()["items"][2]["candidates"][0]["S"]
    )

    # The canonical layer: an AnnotationCollection of linking annotations, the matches at rank 1.
    collection = api.get(f"{API}/collations/{cid}/annotations").get_json()
    assert collection["type"] == "AnnotationCollection" and collection["total"] >= synthetic.n
    page = api.get(collection["first"]["id"].removeprefix("http://collation.test")).get_json()
    assert page["type"] == "AnnotationPage"
    links = {
        (a["target"]["source"]["id"].rsplit("/", 1)[-1], a["body"]["source"]["id"].rsplit("/", 1)[-1])
        for a in page["items"]
        if a["motivation"] == "linking" and a["imcol:rank"] == 1
    }
    assert {(str(k), str(k)) for k in range(synthetic.n)} <= links
    assert api.get(f"{API}/collations/{cid}/annotations?page=99").status_code == 404

    # The viewer layer and the derived manifests keep each input's Presentation version.
    manifest_a = api.get(f"{API}/collations/{cid}/manifests/0").get_json()
    manifest_b = api.get(f"{API}/collations/{cid}/manifests/1").get_json()
    assert manifest_a["type"] == "Manifest" and manifest_a["id"].endswith(f"/collations/{cid}/manifests/0")
    assert manifest_b["@type"] == "sc:Manifest"
    page_url = manifest_a["items"][1]["annotations"][-1]["id"]
    assert page_url == f"http://collation.test{API}/collations/{cid}/pages/0/2"
    page_a = api.get(page_url.removeprefix("http://collation.test")).get_json()
    assert page_a["type"] == "AnnotationPage" and page_a["items"][0]["motivation"] == "commenting"
    assert f"/collations/{cid}/view?link=" in json.dumps(page_a["items"][0]["body"])  # compare view link
    list_b = api.get(
        manifest_b["sequences"][0]["canvases"][1]["otherContent"][-1]["@id"].removeprefix("http://collation.test")
    ).get_json()
    assert list_b["@type"] == "sc:AnnotationList" and list_b["resources"]
    assert api.get(f"{API}/collations/{cid}/pages/0/99").status_code == 404
    view = api.get(f"{API}/collations/{cid}/view.json?pair=0,1").get_data(as_text=True)
    assert f"{API}/collations/{cid}/manifests/1" in view
    context_doc = api.get(f"{API}/ns/imcol/1/context.json").get_json()
    assert "imcol" in context_doc["@context"]


def test_unreadable_manifests_and_canvases_are_reported(api: Any, synthetic: Any, run_jobs: Any) -> None:
    cid = submit(api, [synthetic.partial, synthetic.broken, synthetic.b], regions={"2": synthetic.b_regions})
    run_jobs()
    doc = status(api, cid)
    assert doc["status"] == "finished", doc
    partial, broken, b = doc["manuscripts"]
    assert broken["status"] == "failed" and broken["regions"] == 0
    assert "404" in broken["errors"][0]["message"]
    assert partial["status"] == "ready" and partial["regions"] == synthetic.n - 1
    assert [e.get("canvas", "").rsplit("/", 1)[-1] for e in partial["errors"]] == ["2"]
    assert b["status"] == "ready"
    assert doc["links"]["manifests"] == [f"http://collation.test{API}/collations/{cid}/manifests/{m}" for m in (0, 2)]
    assert top1(api, cid, "0,2") == {0: 0, 1: 1, 3: 3}  # region 2 of the partial manuscript is missing
    r = api.get(f"{API}/collations/{cid}/correspondences?pair=0,1")
    assert r.status_code == 409 and r.get_json()["field"] == "pair"
    assert api.get(f"{API}/collations/{cid}/correspondences?pair=0,5").status_code == 400
    assert api.get(f"{API}/collations/{cid}/manifests/1").status_code == 409


def test_fewer_than_two_readable_manuscripts_fail(api: Any, synthetic: Any, run_jobs: Any) -> None:
    cid = submit(api, [synthetic.broken, synthetic.a])
    run_jobs()
    doc = status(api, cid)
    assert doc["status"] == "failed"
    assert "fewer than two" in doc["errors"][-1]["message"]


def test_features_and_pair_scores_are_reused(api: Any, synthetic: Any, run_jobs: Any, settings: Any) -> None:
    data = Path(settings.data_dir)
    first = submit(api, [synthetic.a, synthetic.b], regions={"1": synthetic.b_regions})
    run_jobs()
    assert status(api, first)["status"] == "finished"

    def stored(folder: str, pattern: str) -> dict[str, int]:  # the manuscripts' features, the pairs' matrices
        kept = (p for p in (data / folder).glob(pattern) if ".turned-" not in p.name and not p.name.endswith(".T.npy"))
        return {p.name: p.stat().st_mtime_ns for p in kept}

    before, scores = stored("features", "*.pt"), stored("scores", "*.npy")
    assert len(before) == 2 and len(scores) == 1

    second = submit(
        api,
        [synthetic.a, synthetic.b, synthetic.c],
        regions={"1": synthetic.b_regions},
        options={"propagation": "3-cycles"},
    )
    assert second != first
    run_jobs()
    doc = status(api, second)
    assert doc["status"] == "finished", doc
    after = stored("features", "*.pt")
    assert len(after) == 3 and {k: after[k] for k in before} == before  # A and B were not described again
    scores_after = stored("scores", "*.npy")
    assert len(scores_after) == 3 and {k: scores_after[k] for k in scores} == scores  # (A, B) not rescored
    diagonal = {k: k for k in range(synthetic.n)}
    for pair in ("0,1", "0,2", "1,2", "2,0"):
        assert top1(api, second, pair) == diagonal


def test_assessments_recompute_propagated_scores(api: Any, synthetic: Any, run_jobs: Any) -> None:
    cid = submit(api, [synthetic.a, synthetic.b], regions={"1": synthetic.b_regions})
    run_jobs()

    def candidate(i: int, j: int) -> dict[str, Any]:
        doc = api.get(f"{API}/collations/{cid}/correspondences?pair=0,1&top={synthetic.n}").get_json()
        return next(c for c in doc["items"][i]["candidates"] if c["index"] == j)

    off, diag = candidate(0, 3), candidate(1, 1)
    r = api.post(
        f"{API}/collations/{cid}/assessments",
        json={"pair": [1, 0], "source": 3, "target": 0, "verdict": "confirmed", "creator": "expert A"},
    )
    assert r.status_code == 201 and r.get_json()["verdict"] == "confirmed"
    confirmed = candidate(0, 3)
    assert confirmed["assessment"] == "confirmed"
    assert confirmed["P_S"] > off["P_S"] and confirmed["N_S"] == off["N_S"] and confirmed["S"] == off["S"]
    api.post(
        f"{API}/collations/{cid}/assessments", json={"pair": [0, 1], "source": 1, "target": 1, "verdict": "rejected"}
    )
    rejected = candidate(1, 1)
    assert rejected["assessment"] == "rejected" and rejected["P_S"] < diag["P_S"]
    items = api.get(f"{API}/collations/{cid}/assessments").get_json()["items"]
    assert [(i["pair"], i["source"], i["target"], i["verdict"]) for i in items] == [
        ([1, 0], 3, 0, "confirmed"),
        ([0, 1], 1, 1, "rejected"),
    ]
    # Each verdict is also an "assessing" Web Annotation on the canonical link, stored from the lower index.
    first = items[0]["annotation"]
    assert first["motivation"] == "assessing" and first["body"] == {
        "type": "TextualBody",
        "purpose": "assessing",
        "value": "exact",
    }
    assert first["target"].endswith(f"/collations/{cid}/links/0-1-0-3") and first["creator"]["name"] == "expert A"
    assert items[1]["annotation"]["body"]["value"] == "none"
    statuses = {a["imcol:status"] for a in api.get(f"{API}/collations/{cid}/annotations?page=1").get_json()["items"]}
    assert {"confirmed", "rejected", "proposed"} <= statuses
    bad = api.post(
        f"{API}/collations/{cid}/assessments", json={"pair": [0, 1], "source": 17, "target": 0, "verdict": "confirmed"}
    )
    assert bad.status_code == 400 and bad.get_json()["field"] == "source"


def test_progress_is_visible_while_it_runs(api: Any, synthetic: Any, run_jobs: Any, settings: Any) -> None:
    cid = submit(api, [synthetic.a, synthetic.b], regions={"1": synthetic.b_regions})
    seen = []
    for _ in range(40):
        doc = status(api, cid)
        seen.append((doc["status"], doc["progress"]["stage"], doc["progress"]["done"], doc["progress"]["total"]))
        if doc["status"] == "finished":
            break
        run_jobs(max_jobs=1)
    stages = [s[1] for s in seen]
    assert stages[0] == "queued" and stages[-1] == "finished"
    order = ["queued", "preparing", "features", "scoring", "finished"]
    assert [s for s in order if s in stages] == order
    assert stages == sorted(stages, key=lambda s: order.index(s) if s in order else 3.5)
    scoring = [(done, total) for _, stage, done, total in seen if stage == "scoring"]
    assert scoring[-1] == (16, 16) and len({d for d, _ in scoring}) > 1  # chunks of 6 pairs: 6, 12, 16
    assert all(s[0] == "running" for s in seen[1:-1])


def test_delete_stops_a_running_collation(api: Any, synthetic: Any, run_jobs: Any, settings: Any) -> None:
    cid = submit(api, [synthetic.a, synthetic.b], regions={"1": synthetic.b_regions})
    run_jobs(max_jobs=2)
    assert status(api, cid)["status"] == "running"
    assert api.delete(f"{API}/collations/{cid}").status_code == 204
    assert api.get(f"{API}/collations/{cid}").status_code == 404
    with activate(runtime_for(settings)):
        assert tasks.score_chunk(cid, 0, 1, 0) == "gone"  # a job still running stops at its next check
    run_jobs()
    redis = Redis.from_url(settings.redis_url)
    assert not redis.keys(f"rq:job:{cid}-*")
    assert not (Path(settings.data_dir) / "collations" / cid).exists()
    redis.close()


def test_lost_redis_state_is_rebuilt_from_the_store(api: Any, synthetic: Any, run_jobs: Any, settings: Any) -> None:
    """What a Redis restart does (no persistence): every queue and job is gone; the sweep re-enqueues
    the unfinished collation from the data store, and it finishes with the same result."""
    reference = submit(api, [synthetic.a, synthetic.b], regions={"1": synthetic.b_regions}, options={"seed": 3})
    run_jobs()
    cid = submit(api, [synthetic.a, synthetic.b], regions={"1": synthetic.b_regions}, options={"seed": 4})
    while status(api, cid)["progress"]["done"] < 6 or status(api, cid)["progress"]["stage"] != "scoring":
        run_jobs(max_jobs=1)  # prepared, described (cached), planned, one chunk scored
    redis = Redis.from_url(settings.redis_url)
    redis.flushall()
    run_jobs()
    assert status(api, cid)["status"] == "running"  # nothing left to run...
    assert scheduler(settings).recover() == 1  # ...until the sweep re-enqueues it from the store
    run_jobs()
    assert status(api, cid)["status"] == "finished"
    assert top1(api, cid, "0,1") == {k: k for k in range(synthetic.n)}
    assert scheduler(settings).recover() == 0
    redis.close()
    assert status(api, reference)["status"] == "finished"


def test_an_abandoned_job_is_retried(api: Any, synthetic: Any, run_jobs: Any, settings: Any) -> None:
    """A worker that dies in a job leaves it 'started'; with a short heartbeat it is abandoned within
    HEARTBEAT_TTL seconds and the sweep hands it back to its queue (one retry used)."""
    from collation.jobs.worker import CollationWorker

    cid = submit(api, [synthetic.a, synthetic.b], regions={"1": synthetic.b_regions})
    redis = Redis.from_url(settings.redis_url)
    queue = Queue("collation-io", connection=redis)
    dying = CollationWorker([queue], connection=redis, runtime=runtime_for(settings))
    dying.register_birth()
    job, _ = Queue.dequeue_any([queue], None, connection=redis)
    dying.prepare_execution(job)  # started, then the process 'dies': no heartbeat any more
    with redis.pipeline() as pipe:
        job.prepare_for_execution(dying.name, pipeline=pipe)
        pipe.execute()
    assert Job.fetch(job.id, connection=redis).get_status() == JobStatus.STARTED
    time.sleep(settings.workers.heartbeat_ttl + 0.5)
    scheduler(settings).recover()
    again = Job.fetch(job.id, connection=redis)
    assert again.get_status() == JobStatus.QUEUED and again.retries_left == settings.workers.job_retries - 1
    run_jobs()
    assert status(api, cid)["status"] == "finished"
    redis.close()


def test_failing_steps_are_retried_then_recorded(
    api: Any, synthetic: Any, run_jobs: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import collation.engine.pipeline

    calls = []

    def broken(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        raise RuntimeError("scoring exploded")

    # every chunk scores through the pipeline's score_candidates
    monkeypatch.setattr(collation.engine.pipeline, "score_candidates", broken)
    cid = submit(api, [synthetic.a, synthetic.b], regions={"1": synthetic.b_regions})
    run_jobs()
    doc = status(api, cid)
    assert doc["status"] == "failed"
    assert "scoring exploded" in doc["errors"][-1]["message"]
    tries = 1 + settings.workers.job_retries  # 3 chunks, each tried then retried; once one has failed for good,
    assert tries <= len(calls) < 3 * tries  # the collation is failed and the other chunks stop

    monkeypatch.undo()
    again = submit(api, [synthetic.a, synthetic.b], regions={"1": synthetic.b_regions})
    assert again == cid and status(api, cid)["status"] in ("queued", "running")  # the same request: a new try
    run_jobs()
    assert status(api, cid)["status"] == "finished"


class _Callback(BaseHTTPRequestHandler):
    received: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        _Callback.received.append(json.loads(self.rfile.read(length)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_callback_url_gets_the_final_status(api: Any, synthetic: Any, run_jobs: Any) -> None:
    with serving(_Callback) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/done"
        cid = submit(api, [synthetic.a, synthetic.b], regions={"1": synthetic.b_regions}, callback_url=url)
        run_jobs()
    assert _Callback.received == [
        {"id": cid, "status": "finished", "status_url": f"http://collation.test{API}/collations/{cid}"}
    ]


def test_chunks_do_not_change_scores(api: Any, synthetic: Any, run_jobs: Any, settings: Any) -> None:
    """Scores computed in chunks of 6 pairs equal every pair's scores in one call (the stored candidates
    scored, the others unscored)."""
    from engine_grid import full_scores

    cid = submit(api, [synthetic.a, synthetic.b], regions={"1": synthetic.b_regions})
    run_jobs()
    store = FolderStore(settings.data_dir)
    docs = [store.load_manuscript(cid, m) for m in (0, 1)]
    feats = [store.load_features(d.features_key) for d in docs]
    results = store.load_results(cid, 0, 1)
    stored = results.S
    full = full_scores(*feats, similarity="s_trans", seed=0)
    scored = np.isfinite(stored) & (results.T == 0)  # as drawn (a pair won transposed scores more, by default)
    np.testing.assert_array_equal(stored[scored], full[scored])
    assert (stored[results.T > 0] > full[results.T > 0]).all()


def test_the_service_runs_the_command_line_s_research_options(
    api: Any, synthetic: Any, run_jobs: Any, settings: Any
) -> None:
    """s_features, the paper's kernel and 3-cycle orientation, as collate match takes them: the service
    describes square maps, scores every pair in one job, and records the options that are set."""
    from engine_grid import full_scores

    options = {"similarity": "s_features", "kernel": "paper", "orientation": "both"}
    cid = submit(api, [synthetic.a, synthetic.b], regions={"1": synthetic.b_regions}, options=options)
    run_jobs()
    doc = status(api, cid)
    assert doc["status"] == "finished", doc
    assert doc["options"]["similarity"] == "s_features" and doc["options"]["orientation"] == "both"
    store = FolderStore(settings.data_dir)
    feats = [store.load_features(store.load_manuscript(cid, m).features_key) for m in (0, 1)]
    assert feats[0].scales == (16,) and feats[0].desc.shape[2] == 256  # square maps (A.2)
    stored = store.load_results(cid, 0, 1).S
    assert np.isfinite(stored).all()  # every pair, no candidates
    np.testing.assert_allclose(stored, full_scores(*feats, similarity="s_features"), atol=1e-12)
    assert top1(api, cid, "0,1", "raw") == {k: k for k in range(len(stored))}


def test_a_job_lost_while_being_dequeued_is_enqueued_again(
    api: Any, synthetic: Any, run_jobs: Any, settings: Any
) -> None:
    """A worker killed between taking a job off its queue and starting it leaves the job 'queued' in no
    queue; two sweeps HEARTBEAT_TTL apart see it stuck and enqueue it again."""
    cid = submit(api, [synthetic.a, synthetic.b], regions={"1": synthetic.b_regions})
    redis = Redis.from_url(settings.redis_url)
    lost = redis.lpop("rq:queue:collation-io").decode()
    assert Job.fetch(lost, connection=redis).get_status() == JobStatus.QUEUED
    clock = [1000.0]
    scheduler(settings, clock=lambda: clock[0]).recover()  # first look: suspect, not yet stuck
    assert lost not in Queue("collation-io", connection=redis).job_ids
    clock[0] += settings.workers.heartbeat_ttl - 0.5
    scheduler(settings, clock=lambda: clock[0]).recover()  # still within the heartbeat: not yet
    assert lost not in Queue("collation-io", connection=redis).job_ids
    clock[0] += 0.7
    scheduler(settings, clock=lambda: clock[0]).recover()
    assert lost in Queue("collation-io", connection=redis).job_ids
    run_jobs()
    assert status(api, cid)["status"] == "finished"
    redis.close()


def test_a_worker_loads_its_default_backbone_and_its_detector(
    settings: Any, caplog: Any, monkeypatch: Any, tmp_path: Path
) -> None:
    from dataclasses import replace

    import torch

    from collation.jobs.runtime import Runtime
    from collation.jobs.worker import preload_backbone, preload_detector

    runtime = runtime_for(settings)
    preload_backbone(runtime)
    assert (settings.backbone, runtime.device, runtime.precision) in runtime._backbones
    preload_detector(runtime)
    assert runtime._detector is not None and runtime._detector.name == "builtin"
    with caplog.at_level("WARNING", logger="collation.jobs.worker"):
        preload_detector(Runtime.create(replace(settings, detector_model=tmp_path / "missing.pt")))
    assert "detector was not preloaded" in caplog.text and "missing.pt" in caplog.text
    caplog.clear()

    # A default backbone that cannot load (no ResNet-50 weights anywhere) is logged; the worker still starts.
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path))
    missing = Runtime.create(replace(settings, backbone="resnet50-conv4", weights_dir=str(tmp_path)))
    with caplog.at_level("WARNING", logger="collation.jobs.worker"):
        preload_backbone(missing)
    assert missing._backbones == {}
    assert "not preloaded" in caplog.text and "resnet50-conv4" in caplog.text


def test_a_starting_worker_takes_a_job_while_its_backbone_loads(settings: Any, monkeypatch: Any) -> None:
    """The default backbone loads beside the work loop (issue 39: the first page of a detection for review
    waited the 10-30 s of that load): a job that needs no backbone runs while the load is under way. The
    detector (torch's import) is loaded before the first job."""
    import signal

    from collation.engine import backbones, detection
    from collation.jobs.worker import work

    redis = Redis.from_url(settings.redis_url)
    job = Queue(settings.workers.queue_compute, connection=redis).enqueue_call("time.time")
    finished_while_loading: list[bool] = []

    def slow_load(*args: Any, **kwargs: Any) -> Any:
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline and not finished_while_loading:
            if job.get_status(refresh=True) == JobStatus.FINISHED:
                finished_while_loading.append(True)
            time.sleep(0.05)
        raise RuntimeError("no backbone in this test")

    monkeypatch.setattr(backbones, "load_backbone", slow_load)
    detector_loaded: list[Any] = []
    load_detector = detection.load_detector
    monkeypatch.setattr(
        detection,
        "load_detector",
        lambda *a, **k: (detector_loaded.append(job.get_status(refresh=True)), load_detector(*a, **k))[1],
    )
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        work(settings, ("compute",), burst=True)
    finally:
        for s, handler in handlers.items():
            signal.signal(s, handler)
    assert job.get_status(refresh=True) == JobStatus.FINISHED
    deadline = time.monotonic() + 10
    while not finished_while_loading and time.monotonic() < deadline:
        time.sleep(0.05)
    assert finished_while_loading == [True]
    assert detector_loaded == [JobStatus.QUEUED]
    redis.close()


def test_a_store_failing_while_a_step_finds_its_collation_gone_is_remembered(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step that finds its collation gone asks the store whether it was deleted; when that question
    fails too (the store is down), the failure is remembered for every status to show, as any other."""
    import errno

    from collation.jobs import steps
    from collation.store import writable

    def step(runtime: Any, cid: str) -> str:
        raise steps.Gone(cid)

    runtime = runtime_for(settings)
    try:

        def down(cid: str) -> bool:
            raise OSError(errno.EIO, "Input/output error")

        monkeypatch.setattr(runtime.store, "exists", down)
        with activate(runtime), pytest.raises(OSError):
            tasks.entry_point(step)("c0ffee")
        assert writable.recall(runtime.redis) == "the data store cannot be written: Input/output error"
    finally:
        runtime.close()

"""Writes a small data store with the service as it is: run from a copy of commit 4ef0f29 (format 1,
before formats had numbers) with PYTHONPATH=<copy>:<copy>/tests, it wrote ``store/`` (README.md).

Three collations of two synthetic manuscripts of two wide strips each (small features: 1 cell high):
- finished, with a verdict;
- running: planned (candidate pairs stored), some chunks scored, the rest not;
- failed: its second manifest answers 404 (a failure record).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from builders import static_server, v3_canvas, v3_image_body, v3_manifest
from PIL import Image
from redis import Redis
from service_helpers import drain, service_settings
from synthetic import shapes

from collation.app import create_app
from collation.cli.private_servers import start_redis, stop
from collation.service.state import service_state
from collation.store.records import Step

OUT = Path(sys.argv[1])


def strip(k: int) -> Image.Image:
    return shapes(k, size=(720, 60)).resize((720, 20), Image.Resampling.BICUBIC)


def manifests(site) -> tuple[str, str, list[dict]]:
    urls, regions = {}, {}
    for name, shift in (("A", 10), ("B", 30)):
        folio = Image.new("RGB", (800, 120), (250, 245, 235))
        boxes = []
        for k in range(2):
            folio.paste(strip(k), (shift, 20 + 50 * k))
            boxes.append([shift, 20 + 50 * k, 720, 20])
        path = site.root / name / "f0.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        folio.save(path, quality=92)
        canvas_id = f"{site.url}/{name}/canvas/0"
        canvas = v3_canvas(canvas_id, folio.size, body=v3_image_body(f"{site.url}/{name}/f0.jpg", folio.size))
        urls[name] = site.write_json(
            f"{name}/manifest.json", v3_manifest(f"{site.url}/{name}/manifest.json", [canvas], f"Manuscript {name}")
        )
        regions[name] = [{"canvas": canvas_id, "xywh": box} for box in boxes]
    return urls["A"], urls["B"], regions


def main() -> None:
    work = Path(tempfile.mkdtemp())
    redis, url = start_redis(work / "redis")
    try:
        Redis.from_url(url).flushdb()
        with static_server(work / "site") as site:
            a, b, regions = manifests(site)
            settings = service_settings(work / "data", url, chunk_pairs=1, job_retries=0)
            app = create_app(settings, TESTING=True)
            client = app.test_client()
            body = {
                "manifests": [a, b],
                "regions": {"0": regions["A"], "1": regions["B"]},
                "options": {"candidates": 1},
            }
            done = client.post("/api/v1/collations", json=body).get_json()["id"]
            drain(settings)
            assert client.get(f"/api/v1/collations/{done}").get_json()["status"] == "finished"
            verdict = {"pair": [0, 1], "source": 0, "target": 0, "verdict": "exact", "creator": "A. Tester"}
            r = client.post(f"/api/v1/collations/{done}/assessments", json=verdict)
            assert r.status_code in (200, 201), r.get_json()
            failed = client.post(
                "/api/v1/collations",
                json={"manifests": [a, f"{site.url}/missing/manifest.json"], "regions": {"0": regions["A"]}},
            ).get_json()["id"]
            drain(settings)
            print("failed:", client.get(f"/api/v1/collations/{failed}").get_json()["status"])
            # what a job that failed for good leaves (RQ's failure callback, after the retries)
            store = service_state(app).runtime.store
            store.record_failure(failed, Step.prepare(1), "manifest answered 404 Not Found")
            # a running collation: another seed, so it shares only the features of the first
            running = client.post(
                "/api/v1/collations", json={**body, "options": {"candidates": 1, "seed": 7}}
            ).get_json()["id"]
            data = work / "data"
            for _ in range(20):  # one job at a time, until some chunks are scored and some are not
                drain(settings, max_jobs=1)
                if list(data.glob("scores/*.c1/*.npy")):
                    break
            print("running:", client.get(f"/api/v1/collations/{running}").get_json()["progress"])
            service_state(app).close()
        shutil.rmtree(OUT, ignore_errors=True)
        shutil.copytree(
            work / "data", OUT, ignore=shutil.ignore_patterns("redis", ".probe", "trash", "staging", "features")
        )
        print(done, running, failed)
    finally:
        stop(redis)
        shutil.rmtree(work, ignore_errors=True)


main()

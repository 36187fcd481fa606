"""End to end from manifests WITHOUT region annotations: real Redis, worker subprocesses, iipsrv
serving the Physiologus folios, as tests/stack/test_e2e.py but with P2 (Presentation 2.1, canvases
twice the images) and P3 (3.0) published as whole folios. Both are detected by default (one
reduced-size Image API request per canvas, the built-in detector) and the 15 illustrations k of P2
must be matched to illustration k of P3 (top-1 P_S 15/15, both directions); the record says that
detection was used."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from builders import physiologus_v2, physiologus_v3
from redis import Redis
from test_e2e import API, P2_SCALE, K, close_run, e2e_settings, make_run

pytestmark = pytest.mark.slow


def test_physiologus_without_annotations_is_detected_and_matched(
    site: Any, iipsrv: Any, redis_server: Any, openapi: dict[str, Any], tmp_path: Path
) -> None:
    doc, _ = physiologus_v2(
        f"{site.url}/detect/P2/manifest.json",
        "Ott.gr.354 (P2), whole folios",
        iipsrv.boxes["P2"][:K],
        iipsrv,
        canvas_scale=P2_SCALE,
    )
    p2 = site.write_json("detect/P2/manifest.json", doc)
    doc, _ = physiologus_v3(
        f"{site.url}/detect/P3/manifest.json", "Marc. gr. IV.35 (P3), whole folios", iipsrv.boxes["P3"][:K], iipsrv
    )
    p3 = site.write_json("detect/P3/manifest.json", doc)
    url = redis_server[1].rsplit("/", 1)[0] + "/3"  # a database of its own
    Redis.from_url(url).flushdb()
    run = make_run(e2e_settings(tmp_path, url), openapi, tmp_path)
    try:
        cid = run.submit((p2, p3))
        run.workers.start(threads=1)
        run.workers.start(threads=1)
        status = run.wait_finished(cid)
    finally:
        close_run(run)
    truth = {
        0: [[v * P2_SCALE for v in b.xywh] for b in iipsrv.boxes["P2"][:K]],
        1: [list(b.xywh) for b in iipsrv.boxes["P3"][:K]],
    }
    stems = {m: [b.folio.stem for b in iipsrv.boxes[alias][:K]] for m, alias in enumerate(("P2", "P3"))}
    found = {}  # manuscript -> {region index: k of the annotated illustration it lies on (IoU >= 0.5)}
    for m, doc in enumerate(status["manuscripts"]):
        print(m, doc["regions"], doc["regions_note"])
        assert (doc["status"], doc["regions_source"], doc["errors"]) == ("ready", "detected", [])
        assert doc["regions_note"] == (
            f"no region annotations: {doc['regions']} illustrations detected on {K} of {K} canvases"
        )
        corr = run.api.get(f"{API}/collations/{cid}/correspondences?pair={m},{1 - m}&top=1").get_json()
        found[m] = {}
        for item in corr["items"]:
            k = next(
                (
                    k
                    for k, box in enumerate(truth[m])
                    if item["source"]["canvas"].endswith(stems[m][k]) and iou(item["source"]["xywh"], box) >= 0.5
                ),
                -1,
            )
            if k < 0:
                print(f"manuscript {m}: region {item['source']} lies on no annotated illustration")
            else:
                found[m][item["source"]["index"]] = k
        assert sorted(found[m].values()) == list(range(K))  # every illustration detected, once
    for a, b in ((0, 1), (1, 0)):
        corr = run.api.get(f"{API}/collations/{cid}/correspondences?pair={a},{b}&score=propagated&top=1").get_json()
        hits = sum(
            found[b].get(i["candidates"][0]["index"]) == found[a][i["source"]["index"]]
            for i in corr["items"]
            if i["source"]["index"] in found[a]
        )
        print(f"top-1 P_S {a}->{b}: {hits}/{K}")
        assert hits == K
    manifest = run.api.get(f"{API}/collations/{cid}/manifests/1").get_json()
    page = run.api.get(manifest["items"][0]["annotations"][-1]["id"].removeprefix("http://collation.test")).get_json()
    assert [a["imcol:detectionScore"] >= 0.5 for a in page["items"] if "imcol:detectionScore" in a] == [True]


def iou(a: Any, b: Any) -> float:
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    iw, ih = max(0, min(ax + aw, bx + bw) - max(ax, bx)), max(0, min(ay + ah, by + bh) - max(ay, by))
    return iw * ih / (aw * ah + bw * bh - iw * ih)

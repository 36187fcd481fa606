"""Load, bounded: concurrent POSTs of distinct collations and status polls while a worker computes.
Every answer is 2xx and the latency percentiles are printed (``scripts/hostile.sh`` runs it with
``-s`` to show them)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from service_helpers import wait_for

API = "/api/v1"


def percentiles(name: str, seconds: list[float]) -> str:
    p50, p95, p99 = (1000 * float(np.percentile(seconds, q)) for q in (50, 95, 99))
    worst = 1000 * max(seconds)
    return f"{name}: n={len(seconds)} p50={p50:.1f} ms p95={p95:.1f} ms p99={p99:.1f} ms max={worst:.1f} ms"


def test_concurrent_posts_and_polls_while_a_worker_computes(app: Any, synthetic: Any, workers: Any) -> None:
    workers.start(threads=1)

    def post(seed: int) -> tuple[int, str, float]:
        client, start = app.test_client(), time.perf_counter()
        doc = {"manifests": [synthetic.a, synthetic.c], "options": {"seed": seed}}
        r = client.post(f"{API}/collations", json=doc)
        return r.status_code, r.get_json()["id"], time.perf_counter() - start

    with ThreadPoolExecutor(16) as pool:
        posted = list(pool.map(post, range(3)))  # three collations: the worker computes while we poll
        ids = [cid for _, cid, _ in posted]

        def poll(k: int) -> tuple[int, float]:
            client, start = app.test_client(), time.perf_counter()
            r = client.get(f"{API}/collations/{ids[k % len(ids)]}")
            return r.status_code, time.perf_counter() - start

        polls = list(pool.map(poll, range(200)))
        more = list(pool.map(post, [3 + (k % 5) for k in range(40)]))  # repeats: 5 distinct, 35 found again
    assert {status for status, _, _ in posted + more} == {202}
    assert {status for status, _ in polls} == {200}
    print("\n" + percentiles("POST /collations", [t for _, _, t in posted + more]))
    print(percentiles("GET /collations/{id} while computing", [t for _, t in polls]))
    client = app.test_client()
    wait_for(
        lambda: client.get(f"{API}/collations/{ids[0]}").get_json()["status"] == "finished",
        120,
        "the first collation under load",
    )

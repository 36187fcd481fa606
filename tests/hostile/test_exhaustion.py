"""Attacks that hold the service's resources or race its requests (issue 23), each measured:

1. a DELETE and a POST of the same collation at the same instant, under a live worker;
2. ``GET /inspect`` of manifests served at one byte a second, of a document of a million tiny objects,
   and without a token when the deployer asks for one;
3. a ``callback_url`` that never answers, or trickles its headers, while the next collation waits;
4. request bodies far over the cap, announced or chunked, against the real waitress server;
5. a data store whose disk is full: the status says so, ``/readyz`` too, the sweeps back off, and
   the collation finishes once the disk can be written again.

Real Redis on a private port, real worker subprocesses or the in-process burst worker, the real
waitress server of ``collate serve`` in a thread; every hostile server is on loopback. The figures
are printed (``scripts/hostile.sh`` runs them with ``-s`` and more rounds: ``HOSTILE_ROUNDS``).
"""

from __future__ import annotations

import errno
import json
import os
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests
from hostile_helpers import PeakRSS, SlowServer
from service_helpers import WorkerProcesses, drain, served_like_production, service_settings, wait_for

from collation.app import create_app
from collation.service.state import service_state

API = "/api/v1"
ROUNDS = int(os.environ.get("HOSTILE_ROUNDS", "6"))
"""Rounds of the DELETE/POST race (``scripts/hostile.sh`` runs more)."""
MB = 2**20


def request_body(synthetic: Any, seed: int = 0, **extra: Any) -> dict[str, Any]:
    body = {"manifests": [synthetic.a, synthetic.b], "regions": {"1": synthetic.b_regions}, "options": {"seed": seed}}
    return {**body, **extra}


# --------------------------------------------------------------------------------------------------
# 1. DELETE and POST at the same instant


def at_once(app: Any, body: dict, cid: str) -> tuple[Any, Any]:
    """A POST of ``body`` and a DELETE of ``cid``, released together by a barrier; their responses."""
    barrier = threading.Barrier(2)

    def post() -> Any:
        barrier.wait()
        return app.test_client().post(f"{API}/collations", json=body)

    def delete() -> Any:
        barrier.wait()
        return app.test_client().delete(f"{API}/collations/{cid}")

    with ThreadPoolExecutor(2) as pool:
        p, d = pool.submit(post), pool.submit(delete)
        return p.result(60), d.result(60)


def test_delete_and_post_of_one_collation_at_the_same_instant(app: Any, synthetic: Any, workers: Any) -> None:
    """Each round: the collation exists (its jobs running), then a POST of it and a DELETE of it start
    together. The POST ends with it queued or running (202) or a 409, never a 404 or a 500; the
    DELETE with it gone (204) or a 409; it is never left cancelled; and the worker finishes a
    collation afterwards."""
    workers.start(threads=1)
    posts: Counter[int] = Counter()
    deletes: Counter[int] = Counter()
    wrong = []
    for n in range(ROUNDS):
        body = request_body(synthetic, seed=n % 3)
        first = app.test_client().post(f"{API}/collations", json=body)
        assert first.status_code == 202, first.get_json()
        cid = first.get_json()["id"]
        time.sleep(0.1 * (n % 4))  # its jobs at different stages
        p, d = at_once(app, body, cid)
        posts[p.status_code] += 1
        deletes[d.status_code] += 1
        after = app.test_client().get(f"{API}/collations/{cid}")
        if p.status_code not in (202, 409) or (p.status_code == 202 and p.get_json()["status"] == "cancelled"):
            wrong.append(("POST", p.status_code, p.get_json()))
        if d.status_code not in (204, 409):
            wrong.append(("DELETE", d.status_code, d.get_json()))
        if after.status_code == 200 and after.get_json()["status"] == "cancelled":
            wrong.append(("left cancelled", after.status_code, after.get_json()["id"]))
    print(f"\nDELETE+POST at once, {ROUNDS} rounds: POST {dict(posts)}, DELETE {dict(deletes)}")
    assert not wrong, wrong
    client = app.test_client()
    cid = client.post(f"{API}/collations", json=request_body(synthetic, seed=7)).get_json()["id"]
    wait_for(
        lambda: client.get(f"{API}/collations/{cid}").get_json()["status"] == "finished",
        120,
        "a collation after the races",
        interval=0.25,
    )


# --------------------------------------------------------------------------------------------------
# 2. GET /inspect


def test_inspects_of_a_dripping_manifest_leave_the_api_responsive(tmp_path: Path, redis_url: str) -> None:
    """16 inspects of a manifest served at one byte a second: at most ``inspect_concurrency`` run (the
    others are 429/503 at once), those are 504 after ``inspect_timeout``, and ``/healthz`` answers
    within a second throughout."""
    config = service_settings(tmp_path / "data", redis_url, inspect_timeout=3)
    app = create_app(config, TESTING=True)
    drip = SlowServer("drip", b'{"type": "Manifest"}' * 100)
    try:
        with served_like_production(app, config) as url, ThreadPoolExecutor(24) as pool:

            def inspect(k: int) -> tuple[int, float, str | None]:
                start = time.monotonic()
                try:
                    r = requests.get(f"{url}/inspect", params={"manifest": f"{drip.url}/m{k}.json"}, timeout=20)
                except requests.RequestException:
                    return -1, time.monotonic() - start, None
                return r.status_code, time.monotonic() - start, r.headers.get("Retry-After")

            def health() -> float:
                start = time.monotonic()
                try:
                    requests.get(f"{url}/healthz", timeout=10).raise_for_status()
                except requests.RequestException:
                    return float("inf")
                return time.monotonic() - start

            inspects = [pool.submit(inspect, k) for k in range(16)]
            polls = []
            for _ in range(8):
                time.sleep(0.25)
                polls.append(health())
            answers = [f.result() for f in inspects]
    finally:
        drip.close()
        service_state(app).close()
    statuses = Counter(status for status, _, _ in answers)
    slowest = max(seconds for _, seconds, _ in answers)
    print(f"\n16 inspects of a dripping manifest: {dict(statuses)}, slowest {slowest:.1f} s;", end=" ")
    print(f"/healthz max {max(polls):.2f} s")
    assert max(polls) < 1.0
    assert set(statuses) <= {429, 502, 503, 504}, statuses  # 502: the fetch's own deadline (half of it)
    assert statuses[502] + statuses[504] <= config.inspection.concurrency, statuses
    assert all(retry for status, _, retry in answers if status in (429, 503))
    assert slowest < config.inspection.timeout + 2


def test_an_inspected_document_of_millions_of_objects_is_refused_before_it_is_parsed(client: Any, site: Any) -> None:
    """6 MB of ``[{},{},...]`` (two million objects, about 64 bytes each once parsed): a 422 naming
    ``manifest``, and this process (the API) grows by less than 50 MB."""
    path = site.root / "hostile" / "objects.json"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"[" + b"{}," * 2_000_000 + b"{}]")
    with PeakRSS() as rss:
        r = client.get(f"{API}/inspect", query_string={"manifest": f"{site.url}/hostile/objects.json"})
    print(f"\ninspect of two million objects: {r.status_code}, RSS +{rss.growth / MB:.0f} MB")
    assert r.status_code == 422 and r.get_json()["field"] == "manifest", r.get_json()
    assert rss.growth < 50 * MB


def test_inspect_needs_a_token_when_the_deployer_asks(tmp_path: Path, redis_url: str, synthetic: Any) -> None:
    config = service_settings(tmp_path / "data", redis_url, api_tokens=("s3cret",), inspect_needs_token=True)
    app = create_app(config, TESTING=True)
    client = app.test_client()
    query = {"manifest": synthetic.a}
    try:
        r = client.get(f"{API}/inspect", query_string=query)
        assert r.status_code == 401 and r.get_json()["field"] == "Authorization"
        assert r.headers["Access-Control-Allow-Origin"] == "*"
        r = client.get(f"{API}/inspect", query_string=query, headers={"Authorization": "Bearer s3cret"})
        assert r.status_code == 200 and r.get_json()["summary"]["regions"] == synthetic.n
        assert client.get(f"{API}/collations/{'0' * 16}").status_code == 404  # other reads stay open
    finally:
        service_state(app).close()


# --------------------------------------------------------------------------------------------------
# 3. Callbacks


def test_hostile_callbacks_do_not_hold_the_worker(tmp_path: Path, redis_url: str, synthetic: Any) -> None:
    """Collation A's ``callback_url`` never answers, B's sends its headers a byte a second; each next
    collation is POSTed when the one before is finished: the one worker starts it within a few seconds
    (the callback's deadline of 2 s and a little), and each callback was tried."""
    config = service_settings(tmp_path / "data", redis_url, chunk_pairs=6, callback_timeout=2)
    app = create_app(config, TESTING=True)
    client = app.test_client()
    workers = WorkerProcesses(config, tmp_path)
    hooks = {mode: SlowServer(mode) for mode in ("silent", "trickle")}
    workers.start(threads=1)
    held: dict[str, float] = {}

    def post(seed: int, mode: str | None) -> str:
        extra = {"callback_url": f"{hooks[mode].url}/done"} if mode else {}
        return client.post(f"{API}/collations", json=request_body(synthetic, seed=seed, **extra)).get_json()["id"]

    def stage(cid: str) -> str:
        doc = client.get(f"{API}/collations/{cid}").get_json()
        return "finished" if doc["status"] == "finished" else doc["progress"]["stage"]

    def wait_finished(cid: str) -> None:
        wait_for(lambda: stage(cid) == "finished", 120, f"collation {cid} to finish", 0.1)

    def wait_tried(mode: str) -> None:
        wait_for(lambda: hooks[mode].connections >= 1, 10, f"the {mode} callback to be tried")

    try:
        cid = post(11, "silent")
        for seed, (mode, after) in enumerate([("silent", "trickle"), ("trickle", None)], start=12):
            wait_finished(cid)
            done = time.monotonic()
            cid = post(seed, after)
            while stage(cid) == "queued":
                assert time.monotonic() < done + 25, f"still queued {time.monotonic() - done:.0f} s after {mode}"
                time.sleep(0.1)
            held[mode] = time.monotonic() - done
            wait_tried(mode)
    finally:
        for hook in hooks.values():
            hook.close()
        workers.stop_all()
        service_state(app).close()
    print(f"\nthe next collation started, after a hostile callback: { ({m: round(t, 1) for m, t in held.items()}) } s")
    assert max(held.values()) < 6


# --------------------------------------------------------------------------------------------------
# 4. Request bodies


def send_raw(url: str, head: bytes, body_chunks: Iterator[bytes], timeout: float = 10) -> tuple[bytes, int, float]:
    """Sends ``head`` and then the chunks until the server answers or closes; returns its answer,
    how many body bytes were handed to the kernel (its socket buffers take some MB on loopback
    before the server reads anything) and the seconds until the answer."""
    start = time.monotonic()
    host, port = url.split("//", 1)[1].split("/", 1)[0].split(":")
    sent = 0
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(head)
        sock.setblocking(False)
        answer = b""
        deadline = time.monotonic() + timeout
        for chunk in body_chunks:
            try:
                answer += sock.recv(65536)
            except BlockingIOError:
                pass
            except OSError:
                break
            if answer or time.monotonic() > deadline:
                break
            try:
                sock.setblocking(True)
                sock.sendall(chunk)
                sock.setblocking(False)
            except OSError:
                break
            sent += len(chunk)
        sock.setblocking(True)
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            while not answer.endswith(b"}") and (part := sock.recv(65536)):
                answer += part
        except OSError:
            pass
    return answer, sent, time.monotonic() - start


def test_bodies_over_the_cap_are_refused_before_they_are_read(tmp_path: Path, redis_url: str) -> None:
    """With a valid token: a body announced as 500 MB, 400 MB sent as chunks, and 64 MB sent whole,
    against the waitress server of ``collate serve``: each is a 413 problem document with the CORS
    header, answered within a second (before the kernel's socket buffers are full), and the API's
    memory grows by less than 30 MB."""
    config = service_settings(tmp_path / "data", redis_url, api_tokens=("s3cret",))
    app = create_app(config, TESTING=True)
    auth = b"Authorization: Bearer s3cret\r\nContent-Type: application/json\r\nHost: x\r\n"
    chunk = b" " * (64 * 2**10)

    def announced(megabytes: int) -> Iterator[bytes]:
        yield b'{"manifests": ['
        for _ in range(16 * megabytes):
            yield chunk

    def chunked(megabytes: int) -> Iterator[bytes]:
        for _ in range(16 * megabytes):
            yield b"%x\r\n" % len(chunk) + chunk + b"\r\n"

    results = {}
    try:
        with served_like_production(app, config) as url, PeakRSS() as rss:
            head = b"POST %s/collations HTTP/1.1\r\n" % API.encode() + auth
            length = b"Content-Length: %d\r\n\r\n"
            results["500 MB announced"] = send_raw(url, head + length % (500 * MB), announced(500))
            results["400 MB chunked"] = send_raw(url, head + b"Transfer-Encoding: chunked\r\n\r\n", chunked(400))
            results["64 MB whole"] = send_raw(url, head + length % (64 * MB + 15), announced(64))
    finally:
        service_state(app).close()
    for name, (answer, sent, seconds) in results.items():
        print(f"\n{name}: {answer[:12].decode(errors='replace')!r} after {sent / MB:.1f} MB, {seconds:.2f} s", end="")
    print(f"\nRSS of the API +{rss.growth / MB:.0f} MB")
    for name, (answer, sent, seconds) in results.items():
        status_line, _, rest = answer.partition(b"\r\n")
        assert status_line.startswith(b"HTTP/1.1 413"), (name, answer[:300])
        headers, _, body = rest.partition(b"\r\n\r\n")
        assert b"application/problem+json" in headers and b"Access-Control-Allow-Origin: *" in headers, headers
        assert json.loads(body)["status"] == 413
        assert seconds < 1 and sent < 16 * MB, (name, sent, seconds)
    assert rss.growth < 30 * MB


def test_a_token_with_a_nul_byte_gets_a_problem_document(tmp_path: Path, redis_url: str) -> None:
    config = service_settings(tmp_path / "data", redis_url, api_tokens=("s3cret",))
    app = create_app(config, TESTING=True)
    try:
        with served_like_production(app, config) as url:
            head = b"POST %s/collations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3\x00cret\r\n" % API.encode()
            answer, _, _ = send_raw(url, head + b"Content-Length: 2\r\n\r\n", iter([b"{}"]))
    finally:
        service_state(app).close()
    status_line, _, rest = answer.partition(b"\r\n")
    print(f"\nbearer token with a NUL byte: {status_line.decode()}")
    assert status_line.split(b" ", 2)[1] == b"400", answer
    assert b"application/problem+json" in rest and b"Access-Control-Allow-Origin: *" in rest, rest
    # waitress answers this error itself, yet with the security headers of every other response
    assert b"X-Content-Type-Options: nosniff" in rest and b"frame-ancestors 'none'" in rest, rest


# --------------------------------------------------------------------------------------------------
# 5. A full disk


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """While ``state["full"]`` is true, every fsync of a file under ``state["root"]`` fails with ENOSPC,
    as on a full disk: every write of the data store is atomic (temporary file, fsync, rename), so
    each fails there and leaves nothing behind. Other files of the process are not affected."""
    state: dict[str, Any] = {"full": False, "root": None, "refused": 0}
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if state["full"] and os.readlink(f"/proc/self/fd/{fd}").startswith(str(state["root"])):
            state["refused"] += 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    yield state


def test_a_full_disk_is_reported_backed_off_and_survived(
    tmp_path: Path, redis_url: str, synthetic: Any, full_disk: dict[str, Any]
) -> None:
    config = service_settings(tmp_path / "data", redis_url, sweep_interval=0.2)
    full_disk["root"] = config.data_dir.resolve()
    app = create_app(config, TESTING=True)
    client = app.test_client()
    sweeper = service_state(app).sweeper
    sweeps = []
    sweep = sweeper.sweep
    sweeper.sweep = lambda: sweeps.append(time.monotonic()) or sweep()  # counts the sweeps
    try:
        cid = client.post(f"{API}/collations", json=request_body(synthetic, seed=5)).get_json()["id"]
        full_disk["full"] = True
        drain(config)  # every job fails on the store's first write, and with its retries
        doc = client.get(f"{API}/collations/{cid}").get_json()
        ready = client.get(f"{API}/readyz").get_json()
        sweeper.start()
        time.sleep(3)
        during = len(sweeps)
        print(
            f"\nfull disk: status {doc['status']!r}, problem {doc.get('problem')!r}; readyz checks {ready['checks']}; "
            f"{during} sweeps in 3 s at an interval of 0.2 s; {full_disk['refused']} writes refused"
        )
        assert doc["status"] in ("queued", "running")
        assert doc["problem"] == "the data store is full: No space left on device"
        assert ready["checks"]["store"] is False and "No space left" in ready["detail"]
        assert during <= 6
        full_disk["full"] = False
        seen = len(sweeps)
        wait_for(lambda: len(sweeps) >= seen + 2, 10, "a whole sweep after the disk was freed")  # steps enqueued again
        assert client.get(f"{API}/collations/{cid}").get_json()["problem"] is None
        drain(config)
        doc = client.get(f"{API}/collations/{cid}").get_json()
        assert doc["status"] == "finished", doc
        corr = client.get(f"{API}/collations/{cid}/correspondences?pair=0,1&top=1").get_json()
        assert [item["candidates"][0]["index"] for item in corr["items"]] == list(range(synthetic.n))
    finally:
        service_state(app).close()

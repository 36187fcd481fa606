"""Helpers of the tests that run the service (imported by the tests and by tests/conftest.py): settings
of a test service, an OpenAPI-checking test client, worker subprocesses, an in-process burst worker,
polling. ``physiologus_v2``/``physiologus_v3`` are ``tests/builders.py``'s, re-exported for the
modules that import them from here."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from builders import physiologus_v2, physiologus_v3

from collation.core.settings import Settings

REPO = Path(__file__).resolve().parents[1]

__all__ = [
    "ONE_THREAD",
    "REPO",
    "OpenAPIClient",
    "WorkerProcesses",
    "drain",
    "page_picture",
    "physiologus_v2",
    "physiologus_v3",
    "runtime_for",
    "served_like_production",
    "service_settings",
    "status",
    "stop_seaweedfs",
    "submit",
    "wait_for",
]


def service_settings(data_dir: Path, redis_url: str, **overrides: Any) -> Settings:
    """Settings of a test service, from no environment at all (a developer's COLLATION_* do not leak
    in): loopback images allowed, efficientnet-lite0 on the CPU, short heartbeats, stable public URL."""
    base: dict[str, Any] = {
        "redis_url": redis_url,
        "data_dir": data_dir,
        "allowed_hosts": ("127.0.0.1",),
        "backbone": "efficientnet-lite0",
        "device": "cpu",
        "heartbeat_ttl": 3,
        "job_retries": 2,
        "sweep_interval": 0,
        "public_url": "http://collation.test",
    }
    return Settings.from_env({}, **{**base, **overrides})


BACKBONES: dict[Any, Any] = {}
"""Backbones loaded by the in-process workers, shared by the session's runtimes (loaded once)."""


def runtime_for(settings: Settings) -> Any:
    """A ``collation.jobs.runtime.Runtime`` for the tests' settings that shares the session's backbones."""
    from collation.jobs.runtime import Runtime

    return Runtime.create(settings, backbones=BACKBONES)


ONE_THREAD = 1
"""torch's intra-op threads of the workers the service tests run, in process (``drain``) and as
subprocesses (``WorkerProcesses.start(threads=...)``). On its default two threads a worker scoring a
chunk that is one task spins at every operation's barrier while the suite's other xdist worker holds
the second core: a 16-pair chunk took some 4 s instead of 0.25 s (2026-11-26, 2-core AVX-512 EPYC at
a load of 5). Scores do not depend on the threads (tests/engine/test_similarity.py checks it)."""


def drain(settings: Settings, max_jobs: int | None = None) -> None:
    """Runs an in-process burst worker on both queues until they are empty (the whole graph), or
    for ``max_jobs`` jobs, on ``ONE_THREAD`` intra-op thread (restored after)."""
    import torch

    from collation.jobs.worker import CollationWorker, queue_names

    runtime = runtime_for(settings)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    threads = torch.get_num_threads()
    torch.set_num_threads(ONE_THREAD)
    try:
        worker = CollationWorker(queue_names(runtime.settings), connection=runtime.connection(), runtime=runtime)
        worker.work(burst=True, logging_level="WARNING", max_jobs=max_jobs)
    finally:
        torch.set_num_threads(threads)
        runtime.close()
        for s, handler in handlers.items():
            signal.signal(s, handler)


class WorkerProcesses:
    """``python -m collation worker`` subprocesses with the test's settings."""

    def __init__(self, settings: Settings, log_dir: Path) -> None:
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("COLLATION_")}
        self.env = {**inherited, **settings.replace(log_level="WARNING").to_environ(), "PYTHONPATH": str(REPO)}
        self.log_dir = log_dir
        self.processes: list[subprocess.Popen] = []

    def start(self, *args: str, threads: int | None = None, data_dir: Path | None = None) -> subprocess.Popen:
        """Starts a worker (``data_dir``: its own COLLATION_DATA_DIR, as on a machine of its own)."""
        log = open(self.log_dir / f"worker{len(self.processes)}.log", "wb")  # noqa: SIM115
        env = {**self.env, **({"OMP_NUM_THREADS": str(threads)} if threads else {})}
        if data_dir is not None:
            env["COLLATION_DATA_DIR"] = str(data_dir)
        process = subprocess.Popen(
            [sys.executable, "-m", "collation", "worker", *args],
            env=env,
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        self.processes.append(process)
        return process

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-3000:] for p in sorted(self.log_dir.glob("worker*.log")))

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def served_app(app: Any) -> Iterator[str]:
    """``app`` served over real HTTP on a free loopback port by a thread (for the browser tests), as
    ``http://127.0.0.1:PORT``; stopped, and its state closed, on leaving."""
    from werkzeug.serving import make_server

    from collation.service.state import service_state

    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="test-app-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
        service_state(app).close()


@contextmanager
def served_like_production(app: Any, settings: Settings) -> Iterator[str]:
    """``app`` behind the waitress server of ``collate serve`` (``make_server``: 8 request threads, the
    liveness thread, the body cap) on a free loopback port, in a thread; yields its API root URL."""
    from collation.service.serving import make_server

    server = make_server(app, settings.replace(host="127.0.0.1", port=0))

    def run() -> None:
        with contextlib.suppress(OSError):  # EBADF: the loop's select on the sockets close() closed
            server.run()

    thread = threading.Thread(target=run, name="test-waitress", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.effective_port}/api/v1"
    finally:
        server.close()
        thread.join(5)


def submit(api: Any, manifests: list[str], **extra: Any) -> str:
    """POSTs a collation of ``manifests`` (and the body's ``extra`` fields) to a test client; its id (202)."""
    r = api.post("/api/v1/collations", json={"manifests": manifests, **extra})
    assert r.status_code == 202, r.get_json()
    return r.get_json()["id"]


def status(api: Any, cid: str) -> dict[str, Any]:
    """The status document of collation ``cid`` from a test client."""
    return api.get(f"/api/v1/collations/{cid}").get_json()


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class OpenAPIClient:
    """The Flask test client, checking every response against ``openapi.yaml``: the path and method
    are in the spec, the status is one the operation lists, and JSON bodies validate against the
    schema of that status and media type."""

    def __init__(self, client: Any, spec: dict[str, Any]) -> None:
        from jsonschema import Draft202012Validator
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012

        self.client = client
        self.spec = spec
        resource = Resource.from_contents(spec, default_specification=DRAFT202012)
        self.registry = Registry().with_resource("urn:openapi", resource)
        self.validator_class = Draft202012Validator
        self.routes = []
        for template, item in spec["paths"].items():
            pattern = "^" + re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(template)) + "$"
            self.routes.append((re.compile(pattern), template, item))
        self.checked: set[tuple[str, str, str]] = set()

    def operation(self, method: str, path: str) -> tuple[str, dict[str, Any]]:
        bare = path.split("?", 1)[0].removeprefix("/api/v1")
        for pattern, template, item in self.routes:
            if pattern.match(bare) and method.lower() in item:
                return template, item[method.lower()]
        raise AssertionError(f"{method} {bare} is not in openapi.yaml")

    def check(self, method: str, path: str, response: Any) -> Any:
        template, operation = self.operation(method, path)
        status = str(response.status_code)
        assert status in operation["responses"], f"{method} {template}: status {status} is not documented"
        documented = operation["responses"][status]
        if "$ref" in documented:
            documented = self.spec["components"]["responses"][documented["$ref"].rsplit("/", 1)[-1]]
        content = documented.get("content")
        if not content:
            assert not response.data, f"{method} {template} {status}: undocumented body"
            return response
        media = response.headers.get("Content-Type", "").split(";", 1)[0].strip()
        assert media in content, f"{method} {template} {status}: {media} is not one of {list(content)}"
        if media.endswith("json"):
            schema = {"$ref": "urn:openapi#" + _pointer(template, method, status, media, documented)}
            validator = self.validator_class(schema, registry=self.registry)
            errors = sorted(validator.iter_errors(response.get_json()), key=lambda e: list(e.path))
            assert not errors, f"{method} {template} {status}: {errors[0].message} at {list(errors[0].path)}"
        self.checked.add((method.upper(), template, status))
        return response

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method not in ("get", "post", "delete", "options", "put", "patch"):
            raise AttributeError(method)

        def call(path: str, **kwargs: Any) -> Any:
            return self.check(method, path, getattr(self.client, method)(path, **kwargs))

        return call


def _pointer(template: str, method: str, status: str, media: str, documented: dict[str, Any]) -> str:
    schema = documented["content"][media]["schema"]
    if "$ref" in schema:
        return schema["$ref"].removeprefix("#")
    escaped = template.replace("~", "~0").replace("/", "~1")
    return f"/paths/{escaped}/{method.lower()}/responses/{status}/content/{media.replace('/', '~1')}/schema"


SEAWEEDFS_ELECTION_TIMEOUT = 1.0
"""Seconds the tests' SeaweedFS master waits for a Raft leader (``start_seaweedfs``'s
``election_timeout``): one master, so nothing to wait for; weed's 10 s made a restart on the same
folder take some 22 s before S3 answered (about 4 s with 1 s), measured on the 2-core machine."""

SEAWEEDFS_STOP_SECONDS = 1.0
"""How long ``stop_seaweedfs`` lets SeaweedFS exit on SIGTERM before it kills it. Its graceful stop
never ends within ``private_servers.stop``'s 10 s (it was killed at 10 s every time), so waiting
longer only cost 10 s per stop; what it wrote is on disk either way (a restart finds it)."""


def stop_seaweedfs(process: Any) -> None:
    """Stops a SeaweedFS of ``start_seaweedfs``: SIGTERM, then SIGKILL after ``SEAWEEDFS_STOP_SECONDS``."""
    from collation.cli.private_servers import stop

    stop(process, timeout=SEAWEEDFS_STOP_SECONDS)


def page_picture(size: tuple[int, int] = (1000, 800)) -> bytes:
    """A plain grey-beige JPEG page: what a made-up library's image server answers in the browser tests
    (Mirador reports a failed image as a page error, so a 404 would be an error of its own)."""
    import io

    from PIL import Image

    picture = io.BytesIO()
    Image.new("RGB", size, (200, 190, 170)).save(picture, format="JPEG")
    return picture.getvalue()

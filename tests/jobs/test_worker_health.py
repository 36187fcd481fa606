"""``collate health --worker``, the workers' container health check: healthy while a real worker of this
host sends heartbeats to Redis, unhealthy once it stops or when its heartbeat is too old."""

from __future__ import annotations

import datetime as dt
import socket
import subprocess
import sys
from typing import Any

from redis import Redis
from rq import Worker
from service_helpers import REPO, wait_for

from collation.core.settings import Settings
from collation.jobs.heartbeats import worker_health, worker_ttl
from collation.jobs.runtime import Runtime
from collation.jobs.worker import CollationWorker


def registered(settings: Settings) -> list[Worker]:
    return Worker.all(connection=Redis.from_url(settings.redis_url))


def health(settings: Settings, *args: str) -> subprocess.CompletedProcess:
    """``python -m collation health ARGS`` with the test's settings, as a container's check runs it."""
    return subprocess.run(
        [sys.executable, "-m", "collation", "health", *args],
        env={**settings.to_environ(), "PATH": "/usr/bin:/bin"},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_running_worker_is_healthy_and_a_stopped_one_is_not(settings: Settings, workers: Any) -> None:
    assert health(settings, "--worker").returncode == 1  # nothing registered yet
    process = workers.start("--queues", "io", "--name", "health-probe")
    wait_for(lambda: registered(settings), 60, "the worker to register")

    ok = health(settings, "--worker")
    assert ok.returncode == 0, ok.stderr
    assert f"worker health-probe on {socket.gethostname()}: heartbeat" in ok.stdout
    assert health(settings, "--worker", "--name", "health-probe").returncode == 0
    other = health(settings, "--worker", "--name", "another")
    assert other.returncode == 1 and f"no worker named another registered from host {socket.gethostname()}" in (
        other.stderr
    )
    assert worker_health(settings, hostname="elsewhere.example")[0] is False

    # the heartbeat read an hour later: too old to count
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    healthy, message = worker_health(settings, now=later)
    assert not healthy and f"no heartbeat from host {socket.gethostname()} in the last {worker_ttl(settings)} s" in (
        message
    )

    process.terminate()  # a warm shutdown: RQ removes the worker's registration
    process.wait(30)
    wait_for(lambda: not registered(settings), 30, "the worker to leave Redis")
    gone = health(settings, "--worker")
    assert gone.returncode == 1 and "no worker registered from host" in gone.stderr


def test_the_heartbeat_age_allowed_is_the_workers_own_ttl(settings: Settings) -> None:
    runtime = Runtime.create(settings)
    try:
        worker = CollationWorker(["q"], connection=runtime.connection(), runtime=runtime)
        assert worker.worker_ttl == worker_ttl(settings) == settings.workers.heartbeat_ttl + 16
    finally:
        runtime.close()


def test_without_redis_a_worker_is_unhealthy(tmp_path: Any) -> None:
    settings = Settings.from_env({}, data_dir=tmp_path, redis_url="redis://127.0.0.1:9/0")
    healthy, message = worker_health(settings, timeout=1)
    assert not healthy and message.startswith("Redis at redis://127.0.0.1:9/0 unreachable")
    healthy, message = worker_health(Settings.from_env({}, data_dir=tmp_path))
    assert not healthy and "COLLATION_REDIS_URL is not set" in message


def test_the_api_check_asks_the_api_on_its_port(tmp_path: Any) -> None:
    from http.server import BaseHTTPRequestHandler

    from builders import serving

    from collation.cli.maintenance import api_health

    class Healthz(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/api/v1/healthz" else 404)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    with serving(Healthz) as server:
        port = server.server_address[1]
        healthy, message = api_health(Settings.from_env({}, data_dir=tmp_path, port=port), timeout=2)
        assert healthy and message == f"http://127.0.0.1:{port}/api/v1/healthz: 200"
    healthy, message = api_health(Settings.from_env({}, data_dir=tmp_path, port=port), timeout=2)
    assert not healthy and "Connection refused" in message  # nothing listens there any more

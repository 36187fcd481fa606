"""``collate health``, the API container's health check: ``GET /api/v1/healthz`` on the port the API
was started on. ``collate serve`` records its address in the data folder (``.serve-HOSTNAME.json``, as
PostgreSQL's ``postmaster.pid`` holds its port), so ``serve --port P`` (or ``--port 0``) is checked on P,
not on ``COLLATION_PORT``; ``health --port`` names one outright. The serve test is in the stack lane
(serve starts a private redis-server); the others ask a loopback server that answers as the API does."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import requests
from builders import serving
from service_helpers import wait_for

from collation.cli.main import build_parser
from collation.cli.maintenance import api_health, reachable_host
from collation.cli.serve import forget_address, record_address, recorded_address
from collation.core.settings import Settings


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def health(data: Path, *args: str, port: int) -> subprocess.CompletedProcess:
    """``python -m collation health ARGS``, as the image's HEALTHCHECK runs it, with ``COLLATION_PORT=port``."""
    env = {"PATH": "/usr/bin:/bin", "COLLATION_DATA_DIR": str(data), "COLLATION_PORT": str(port)}
    return subprocess.run(
        [sys.executable, "-m", "collation", "health", *args], env=env, capture_output=True, text=True, timeout=60
    )


def answers(port: int) -> bool:
    try:
        return requests.get(f"http://127.0.0.1:{port}/api/v1/healthz", timeout=5).status_code == 200
    except requests.ConnectionError:
        return False


@pytest.mark.stack  # `collate serve` starts its private redis-server
def test_health_checks_the_port_serve_was_started_on(tmp_path: Path) -> None:
    data, port, unused = tmp_path / "data", free_port(), free_port()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "COLLATION_DATA_DIR": str(data)}  # COLLATION_PORT unset
    serve = subprocess.Popen(
        [sys.executable, "-m", "collation", "serve", "--port", str(port), "--workers", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: answers(port), 120, "serve to answer")
        ok = health(data, port=unused)  # COLLATION_PORT names a port nobody listens on
        assert ok.returncode == 0, ok.stderr
        assert ok.stdout.strip() == f"http://127.0.0.1:{port}/api/v1/healthz: 200"
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(60)
    assert serve.returncode == 0 and not any(data.glob(".serve-*.json"))  # a stopped serve leaves no record
    gone = health(data, port=unused)
    assert gone.returncode == 1 and f"http://127.0.0.1:{unused}/api/v1/healthz" in gone.stderr


class Healthz(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/api/v1/healthz" else 404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def api_port() -> Iterator[int]:
    """A loopback server that answers ``GET /api/v1/healthz`` as the API does."""
    with serving(Healthz) as server:
        yield server.server_address[1]


def test_the_record_names_the_port_and_only_its_own_serve_removes_it(tmp_path: Path, api_port: int) -> None:
    settings = Settings.from_env({}, data_dir=tmp_path, port=free_port())
    assert api_health(settings, 2)[0] is False  # no record: COLLATION_PORT, where nothing listens
    path = record_address(settings, api_port)
    assert path == tmp_path / f".serve-{socket.gethostname()}.json"
    assert recorded_address(path) == {"pid": os.getpid(), "host": "127.0.0.1", "port": api_port}
    assert api_health(settings, 2) == (True, f"http://127.0.0.1:{api_port}/api/v1/healthz: 200")

    path.write_text(json.dumps({"pid": os.getpid() + 1, "host": "127.0.0.1", "port": api_port}))
    forget_address(path)  # another serve's record (a later one on the same folder) stays
    assert path.is_file()
    path.write_text("{half a reco")
    assert recorded_address(path) is None and api_health(settings, 2)[0] is False  # unreadable: COLLATION_PORT


def test_an_explicit_port_is_checked_as_it_is(tmp_path: Path, api_port: int, capsys: pytest.CaptureFixture) -> None:
    settings = Settings.from_env({}, data_dir=tmp_path, port=api_port)
    record_address(settings, api_port)
    unused = free_port()
    args = build_parser().parse_args(["health", "--port", str(unused)])
    args.settings = settings
    assert args.handler(args) == 1
    assert f"http://127.0.0.1:{unused}/api/v1/healthz" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("bound", "reached"),
    [
        ("0.0.0.0", "127.0.0.1"),
        ("::", "[::1]"),
        ("127.0.0.1", "127.0.0.1"),
        ("10.1.2.3", "10.1.2.3"),
        ("::1", "[::1]"),
        ("localhost", "localhost"),
    ],
)
def test_health_asks_the_address_serve_bound(bound: str, reached: str) -> None:
    assert reachable_host(bound) == reached

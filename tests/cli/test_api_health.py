"""``collate health``, the API container's health check: ``GET /api/v1/healthz`` on the port the API
was started on. ``collate serve`` records its address in the data folder (``.serve-HOSTNAME.json``, as
PostgreSQL's ``postmaster.pid`` holds its port), so ``serve --port P`` (or ``--port 0``) is checked on P,
not on ``COLLATION_PORT``; ``health --port`` names one outright. These tests ask a loopback server that
answers as the API does; tests/test_install.py checks a real ``collate serve --port P``, and that a
stopped serve leaves no record."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from builders import serving

from collation.cli.main import build_parser
from collation.cli.maintenance import api_health, reachable_host
from collation.cli.serve import forget_address, record_address, recorded_address
from collation.core.settings import Settings


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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

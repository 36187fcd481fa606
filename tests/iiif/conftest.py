"""Fixtures of the IIIF tests: loopback servers only (a static/scripted HTTP server, a tiny Image
API 3 server) and fetchers allowed to reach 127.0.0.1; iipsrv behind lighttpd serving the
Physiologus folios is in ``tests/conftest.py``, shared with the service tests. Nothing here sends
a request anywhere but to servers these fixtures start."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from collation.net.http import Fetcher

# -- a scripted loopback HTTP server -------------------------------------------------------------

Route = Callable[[BaseHTTPRequestHandler], tuple[int, dict[str, str], Any]]
"""A scripted answer: (status, headers, body); a body given as a list of byte chunks is sent
without Content-Length."""


@dataclass
class StaticServer:
    """Serves files under ``root`` and scripted ``routes``; records every request path and header."""

    root: Path
    routes: dict[str, Route] = field(default_factory=dict)
    log: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    active: int = 0
    peak: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def paths(self, prefix: str = "") -> list[str]:
        with self.lock:
            return [path for path, _ in self.log if path.startswith(prefix)]

    def write_json(self, relative: str, doc: Any) -> str:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc))
        return f"{self.url}/{relative}"


def _content_type(path: Path) -> str:
    return {".json": "application/json", ".jpg": "image/jpeg", ".png": "image/png"}.get(
        path.suffix.lower(), "application/octet-stream"
    )


def _make_handler(server: StaticServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            with server.lock:
                server.log.append((self.path, dict(self.headers)))
                server.active += 1
                server.peak = max(server.peak, server.active)
            try:
                status, headers, body = self._answer()
            finally:
                with server.lock:
                    server.active -= 1
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            if isinstance(body, list):  # chunks of a body of undeclared length, then close
                self.send_header("Connection", "close")
                self.close_connection = True
                self.end_headers()
                for chunk in body:
                    self.wfile.write(chunk)
                return
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _answer(self) -> tuple[int, dict[str, str], bytes]:
            path = self.path.split("?", 1)[0]
            for prefix, route in sorted(server.routes.items(), key=lambda kv: -len(kv[0])):
                if path == prefix or (prefix.endswith("/") and path.startswith(prefix)):
                    return route(self)
            from urllib.parse import unquote

            file = (server.root / unquote(path).lstrip("/")).resolve()
            if server.root.resolve() in file.parents and file.is_file():
                return 200, {"Content-Type": _content_type(file)}, file.read_bytes()
            return 404, {"Content-Type": "text/html"}, b"<html><body>not found</body></html>"

    return Handler


@pytest.fixture(scope="session")
def static_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StaticServer]:
    root = tmp_path_factory.mktemp("static")
    state = StaticServer(root=root)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(state))
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


@pytest.fixture
def fetcher(tmp_path: Path) -> Iterator[Fetcher]:
    """A fetcher allowed to reach the loopback servers of the tests, with fast retries; it resolves
    no host name at all, so no test can reach a server it did not start (checked at teardown)."""
    lookups: list[str] = []

    def no_dns(host: str, *args: Any, **kwargs: Any) -> Any:
        lookups.append(host)
        raise socket.gaierror(-2, "the tests resolve no host names")

    f = Fetcher(allowed_hosts=["127.0.0.1"], cache_dir=tmp_path / "cache", backoff=0.01, retries=2, resolve=no_dns)
    yield f
    f.session.close()
    assert not lookups, f"a test tried to resolve {lookups}: tests only talk to loopback servers they start"

"""What the hostile fixtures record: the canary's hits and the jail's connection attempts
(fixtures in conftest.py; tests import these types from here)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any


@dataclass
class Canary:
    """A loopback server that records every request (``hits``: method, path, Host header)."""

    host: str = "127.0.0.1"
    port: int = 0
    hits: list[tuple[str, str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def canary_handler(canary: Canary) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _record(self) -> None:
            with canary.lock:
                canary.hits.append((self.command, self.path, self.headers.get("Host", "")))
            body = b'{"canary": true}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _record

    return Handler


@dataclass
class Jail:
    """Where the process tried to connect (``connects``) and what was refused (``refused``)."""

    connects: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

"""What the hostile fixtures record: the canary's hits and the jail's connection attempts
(fixtures in conftest.py; tests import these types from here); a loopback server that answers
slowly or never (``SlowServer``); this process's resident memory (``rss_bytes``, ``PeakRSS``)."""

from __future__ import annotations

import contextlib
import socket
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


class SlowServer:
    """A loopback TCP server that answers every connection slowly or never (``mode``):

    - ``silent``: reads the request and never answers;
    - ``trickle``: sends a status line and headers one byte a second, never ending them;
    - ``drip``: answers 200 with ``body`` (a JSON manifest), one byte a second.

    ``connections`` counts the connections it accepted. ``close`` ends it and every connection.
    """

    def __init__(self, mode: str, body: bytes = b"{}") -> None:
        self.mode = mode
        self.body = body
        self.connections = 0
        self._stop = threading.Event()
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                continue
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        if self.mode == "drip":
            head += b"Content-Length: %d\r\n\r\n" % len(self.body) + self.body
        else:
            head += b"X-Slow: " + b"a" * 10_000
        try:
            conn.settimeout(0.5)
            with contextlib.suppress(OSError):
                conn.recv(65536)
            for byte in head if self.mode != "silent" else b"":
                if self._stop.wait(1.0):
                    break
                conn.sendall(bytes([byte]))
            self._stop.wait()
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        self._thread.join(5)


def rss_bytes() -> int:
    """This process's resident memory now (Linux ``/proc``)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


class PeakRSS:
    """Samples this process's resident memory every 10 ms while active; ``growth`` is the peak above
    the value at the start, in bytes."""

    def __init__(self) -> None:
        self.start = self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PeakRSS:
        self.start = self.peak = rss_bytes()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.peak = max(self.peak, rss_bytes())

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, rss_bytes())

    @property
    def growth(self) -> int:
        return self.peak - self.start

"""Fixtures of the IIIF tests: loopback servers only (a static/scripted HTTP server, a tiny Image
API 3 server, and iipsrv behind lighttpd), the Physiologus data, and fetchers allowed to reach
127.0.0.1. Nothing here sends a request anywhere but to servers these fixtures start."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from collation.iiif.http import Fetcher

REPO = Path(__file__).resolve().parents[2]
IIPSRV = Path("/usr/lib/iipimage-server/iipsrv.fcgi")


@dataclass(frozen=True)
class Box:
    """One VIA illustration box on a local folio."""

    folio: Path
    xywh: tuple[int, int, int, int]


def via_boxes(root: Path, alias: str, count: int) -> list[Box]:
    """The first ``count`` illustration boxes of a manuscript whose folios are present, in order."""
    via = json.loads((root / "annotations" / f"{alias}.via.json").read_text())
    boxes: list[Box] = []
    for entry in via["_via_img_metadata"].values():
        folio = root / alias / "folios" / entry["filename"]
        if not folio.is_file():
            break
        for region in entry["regions"]:
            a = region["shape_attributes"]
            boxes.append(Box(folio, (a["x"], a["y"], a["width"], a["height"])))
    return boxes[:count]


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


# -- iipsrv behind lighttpd ----------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class IIPServer:
    base: str  # http://127.0.0.1:<port>/iiif
    boxes: dict[str, list[Box]]  # alias -> boxes whose folios are served
    identifiers: dict[Path, str]  # folio -> IIIF identifier (NAME.tif)


@pytest.fixture(scope="session")
def iipsrv(physiologus: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IIPServer]:
    missing = [name for name in ("lighttpd", "vips") if shutil.which(name) is None]
    if not IIPSRV.exists():
        missing.append(str(IIPSRV))
    if missing:
        pytest.skip(
            f"missing {', '.join(missing)}: apt-get install iipimage-server lighttpd libvips-tools "
            "(scripts/setup.sh does it)"
        )
    work = tmp_path_factory.mktemp("iipsrv")
    tiles = work / "tiles"
    tiles.mkdir()
    boxes = {"P2": via_boxes(physiologus, "P2", 15), "P3": via_boxes(physiologus, "P3", 15)}
    identifiers: dict[Path, str] = {}
    for box in [b for alias in boxes.values() for b in alias]:
        if box.folio in identifiers:
            continue
        name = f"{box.folio.stem}.tif"
        subprocess.run(
            [
                "vips",
                "tiffsave",
                str(box.folio),
                str(tiles / name),
                "--tile",
                "--pyramid",
                "--compression",
                "jpeg",
                "--Q",
                "90",
                "--tile-width",
                "256",
                "--tile-height",
                "256",
            ],
            check=True,
            capture_output=True,
        )
        identifiers[box.folio] = name
    port = _free_port()
    conf = work / "lighttpd.conf"
    conf.write_text(
        f"""server.modules = ( "mod_fastcgi" )
server.bind = "127.0.0.1"
server.port = {port}
server.document-root = "{work}"
server.errorlog = "{work}/lighttpd-error.log"
fastcgi.server = (
  "/iiif" => ((
     "socket" => "{work}/iipsrv.sock",
     "bin-path" => "{IIPSRV}",
     "check-local" => "disable",
     "min-procs" => 1,
     "max-procs" => 1,
     "bin-environment" => (
        "LOGFILE" => "{work}/iipsrv.log",
        "VERBOSITY" => "1",
        "FILESYSTEM_PREFIX" => "{tiles}/",
        "URI_MAP" => "iiif=>IIIF",
        "CORS" => "*",
        "MAX_IMAGE_CACHE_SIZE" => "10",
        "JPEG_QUALITY" => "90"
     )
  ))
)
"""
    )
    process = subprocess.Popen(
        ["lighttpd", "-D", "-f", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}/iiif"
    probe = f"{base}/{next(iter(identifiers.values()))}/info.json"
    deadline = time.monotonic() + 15
    try:
        while True:
            try:
                with requests.get(probe, timeout=1) as r:
                    if r.status_code == 200:
                        break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                pytest.fail(f"iipsrv behind lighttpd did not answer {probe}; see {work}/lighttpd-error.log")
            time.sleep(0.05)
        yield IIPServer(base=base, boxes=boxes, identifiers=identifiers)
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)

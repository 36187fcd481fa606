"""Regression tests of the fetch guards found by the outside attack (issue 12): URLs that parsers
read differently, IPv4 embedded in IPv6, a server that trickles bytes, a tile mosaic beyond the
pixel cap, and a JSON cache unbounded in bytes. Loopback servers only; no host name is resolved."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from builders import serving
from PIL import Image

from collation.core.errors import FetchError, LimitError, ManifestError, UnsafeURLError
from collation.iiif.fetch import fetch_region
from collation.iiif.manifests import parse_manifest
from collation.iiif.regions import Region
from collation.net.addresses import check_url, resolve_target
from collation.net.http import Fetcher
from collation.net.responses import JsonCache, json_size


def never(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the resolver must not be called")


# -- 1. parser confusion and IPv4 in IPv6 -------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080\\@8.8.8.8/x",
        "http://8.8.8.8\\@127.0.0.1/x",
        "http://user:secret@8.8.8.8/x",
        "http://8.8.8.8@127.0.0.1/x",
        "http://8.8.8.8 /x",
        "http://8.8.8.8\t/x",
        "http://8.8.8.8/x\r\nHost: 127.0.0.1",
        "http://8.8.8.8:80:80/x",
    ],
)
def test_urls_that_parsers_read_differently_are_refused(url: str) -> None:
    with pytest.raises(UnsafeURLError):
        check_url(url, resolve=never)


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("2002:7f00:1::1", "6to4"),  # 6to4 of 127.0.0.1
        ("2002:a00:1::1", "6to4"),  # 6to4 of 10.0.0.1
        ("2002:808:808::1", "6to4"),  # refused by design, whatever it carries
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
        ("64:ff9b::7f00:1", "NAT64"),  # NAT64 of 127.0.0.1
        ("64:ff9b::808:808", "NAT64"),
        ("64:ff9b:1::a00:1", "NAT64"),
        ("::127.0.0.1", "IPv4-compatible"),
        ("::a00:1", "IPv4-compatible"),
        ("::ffff:169.254.169.254", "link-local"),
    ],
)
def test_ipv4_embedded_in_ipv6_is_refused_by_design(address: str, reason: str) -> None:
    def resolve(host: str, port: int, type: int = 0, **_: Any) -> list[Any]:
        return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0))]

    with pytest.raises(UnsafeURLError, match=reason):
        check_url("https://library.example/m.json", resolve=resolve)
    with pytest.raises(UnsafeURLError, match=reason):
        check_url(f"http://[{address}]/m.json", resolve=never)


def test_the_target_is_the_first_checked_address_with_the_original_host() -> None:
    answers = ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]

    def resolve(host: str, port: int, type: int = 0, **_: Any) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in answers]

    target = resolve_target("https://Library.Example:8443/iiif/m.json", resolve=resolve)
    assert (target.address, target.host, target.port, target.host_header) == (
        "93.184.216.34",
        "library.example",
        8443,
        "library.example:8443",
    )


# -- 3. a total deadline per request ------------------------------------------------------------


class Trickle(BaseHTTPRequestHandler):
    """Sends one byte every 0.1 s: of the body (``/body``, Content-Length 200) or of the headers."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        try:
            if self.path == "/body":
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n")
                payload = b"[" + b"1," * 99 + b"1"
            else:
                payload = b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 200 + b"\r\n\r\n"
            for byte in payload:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.1)
        except OSError:  # the client gave up: what the test wants
            self.close_connection = True


@pytest.fixture
def trickle() -> Iterator[str]:
    with serving(Trickle) as httpd:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"


@pytest.mark.parametrize("path", ["/body", "/headers"])
def test_a_trickling_server_is_cut_off_at_the_total_timeout(trickle: str, path: str) -> None:
    fetcher = Fetcher(allowed_hosts=["127.0.0.1"], resolve=never, total_timeout=1.0, read_timeout=5.0, retries=2)
    start = time.monotonic()
    with pytest.raises(FetchError, match=r"took longer than 1\.0 s"):
        fetcher.get(f"{trickle}{path}", what="manifest")
    elapsed = time.monotonic() - start
    fetcher.session.close()
    assert elapsed < 1.0 + 0.8, f"{elapsed:.1f} s"  # the trickle lasts 20 s; not retried either


# -- 4. the pixel cap before the tile mosaic is allocated ---------------------------------------


def test_a_huge_declared_level0_tile_is_refused_before_anything_is_allocated(
    static_server: Any, fetcher: Fetcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    side = 15000
    static_server.write_json(
        "huge/folio/info.json",
        {
            "@context": "http://iiif.io/api/image/2/context.json",
            "@id": f"{static_server.url}/huge/folio",
            "profile": ["http://iiif.io/api/image/2/level0.json"],
            "width": side,
            "height": side,
            "tiles": [{"width": side, "scaleFactors": [1]}],
        },
    )
    Image.new("RGB", (8, 8), "white").save(static_server.root / "huge" / "folio" / "tile.jpg")
    static_server.routes["/huge/folio/0,0,"] = lambda h: (
        200,
        {"Content-Type": "image/jpeg"},
        (static_server.root / "huge/folio/tile.jpg").read_bytes(),
    )
    allocated: list[tuple[int, int]] = []
    real_new, real_resize = Image.new, Image.Image.resize

    def new(mode: str, size: tuple[int, int], *args: Any, **kwargs: Any) -> Image.Image:
        allocated.append(tuple(size))
        assert size[0] * size[1] <= 4_000_000, f"allocated {size}"
        return real_new(mode, size, *args, **kwargs)

    def resize(self: Image.Image, size: tuple[int, int], *args: Any, **kwargs: Any) -> Image.Image:
        allocated.append(tuple(size))
        assert size[0] * size[1] <= 4_000_000, f"upscaled to {size}"
        return real_resize(self, size, *args, **kwargs)

    monkeypatch.setattr(Image, "new", new)
    monkeypatch.setattr(Image.Image, "resize", resize)
    manifest = parse_manifest(
        {
            "@context": "http://iiif.io/api/presentation/2/context.json",
            "@id": f"{static_server.url}/huge/m.json",
            "@type": "sc:Manifest",
            "label": "huge",
            "sequences": [
                {
                    "@type": "sc:Sequence",
                    "canvases": [
                        {
                            "@id": f"{static_server.url}/huge/c0",
                            "@type": "sc:Canvas",
                            "width": side,
                            "height": side,
                            "images": [
                                {
                                    "@type": "oa:Annotation",
                                    "motivation": "sc:painting",
                                    "on": f"{static_server.url}/huge/c0",
                                    "resource": {
                                        "@id": f"{static_server.url}/huge/folio/full/full/0/default.jpg",
                                        "@type": "dctypes:Image",
                                        "service": {
                                            "@id": f"{static_server.url}/huge/folio",
                                            "profile": "http://iiif.io/api/image/2/level0.json",
                                        },
                                    },
                                }
                            ],
                        }
                    ],
                }
            ],
        }
    )
    canvas = manifest.canvases[0]
    start = len(static_server.log)
    with pytest.raises(LimitError, match="more than the cap"):
        fetch_region(Region(0, canvas.id, 0, (0, 0, side, side), "all"), canvas, fetcher=fetcher)
    assert [p for p in static_server.paths()[start:] if not p.endswith("info.json")] == []
    assert all(w * h <= 4_000_000 for w, h in allocated)


# -- 5. the JSON cache: bounded in bytes, accepted documents only -------------------------------


def test_json_size_stops_at_the_limit() -> None:
    doc = {"items": [{"id": f"https://x/{n}", "n": n} for n in range(1000)]}
    full = json_size(doc, 10**9)
    assert full > len(json.dumps(doc)) and json_size(doc, 1000) <= 1000 + 10_000


def test_json_cache_is_bounded_in_bytes() -> None:
    cache = JsonCache(max_entries=100, max_bytes=50_000)
    docs = {f"u{n}": ["x" * 1000 for _ in range(10)] for n in range(10)}  # ~11 kB each
    for url, doc in docs.items():
        assert cache.put(url, doc, url)
    assert cache.bytes <= 50_000 and 0 < len(cache) < 10 and cache.get("u9") is not None
    assert not cache.put("big", ["x" * 60_000], "big") and cache.get("big") is None


def test_only_accepted_documents_are_cached_and_the_bytes_stay_bounded(static_server: Any) -> None:
    fetcher = Fetcher(allowed_hosts=["127.0.0.1"], resolve=never, json_cache_bytes=300_000)
    small = static_server.write_json("jc/small.json", {"ok": list(range(100))})
    big = static_server.write_json("jc/big.json", {"ok": ["y" * 100] * 20_000})

    def refuse(doc: Any) -> None:
        raise ManifestError("not a manifest")

    for _ in range(2):
        with pytest.raises(ManifestError):
            fetcher.get_json(small, accept=refuse)  # refused: never kept, fetched each time
        fetcher.get_json(big, accept=lambda d: None)  # accepted but too large to keep
    assert static_server.paths("/jc/small.json") == ["/jc/small.json"] * 2
    assert static_server.paths("/jc/big.json") == ["/jc/big.json"] * 2
    fetcher.get_json(small, accept=lambda d: None)
    fetcher.get_json(small, accept=lambda d: None)
    assert static_server.paths("/jc/small.json") == ["/jc/small.json"] * 3
    assert fetcher.json_cache.bytes <= 300_000 and len(fetcher.json_cache) == 1
    fetcher.session.close()

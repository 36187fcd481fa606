"""The Fetcher: address rules (with an injected resolver: no test sends a request to a private or
link-local address), redirects re-checked, retries and Retry-After, caps, cache, politeness."""

from __future__ import annotations

import email.utils
import io
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from collation.core.errors import CollationError, FetchError, InputError, LimitError, ManifestError, UnsafeURLError
from collation.core.settings import FetchSettings, Settings, SettingsError, default_cache_dir
from collation.net.addresses import check_url
from collation.net.http import Fetcher, fetcher_for


def resolver(table: dict[str, list[str]]) -> Any:
    """A getaddrinfo stand-in answering from ``table``; unknown hosts fail like DNS does."""
    calls: list[str] = []

    def resolve(host: str, port: int, type: int = 0, **_: Any) -> list[Any]:
        calls.append(host)
        if host not in table:
            raise socket.gaierror(-2, "Name or service not known")
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in table[host]
        ]

    resolve.calls = calls  # type: ignore[attr-defined]
    return resolve


def never(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the resolver must not be called")


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("10.1.2.3", "private"),
        ("172.16.0.5", "private"),
        ("192.168.1.1", "private"),
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.251", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("fd00::1", "private"),
        ("100.64.0.1", "not globally routable"),
    ],
)
def test_hosts_resolving_to_non_public_addresses_are_refused(address: str, reason: str) -> None:
    resolve = resolver({"library.example": [address]})
    with pytest.raises(UnsafeURLError, match=reason) as info:
        check_url("https://library.example/iiif/manifest.json", resolve=resolve)
    assert "https://library.example/iiif/manifest.json" in info.value.message
    assert info.value.url == "https://library.example/iiif/manifest.json"


@pytest.mark.parametrize("literal", ["127.0.0.1", "[::1]", "169.254.169.254", "10.0.0.1", "[fe80::1]", "0.0.0.0"])
def test_literal_addresses_are_checked_without_resolving(literal: str) -> None:
    with pytest.raises(UnsafeURLError):
        check_url(f"http://{literal}:8080/x", resolve=never)


def test_one_private_address_among_public_ones_is_enough_to_refuse() -> None:
    resolve = resolver({"mixed.example": ["93.184.216.34", "10.0.0.2"]})
    with pytest.raises(UnsafeURLError, match=r"private address 10\.0\.0\.2"):
        check_url("http://mixed.example/", resolve=resolve)


def test_public_addresses_pass() -> None:
    resolve = resolver({"library.example": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]})
    assert check_url("https://library.example/m.json", resolve=resolve) == "https://library.example/m.json"


def test_allow_list_and_switch() -> None:
    assert check_url("http://iiif.internal:8182/m", resolve=never, allowed_hosts=["IIIF.internal"])
    assert check_url("http://10.0.0.1/m", resolve=never, allow_private=True)
    with pytest.raises(UnsafeURLError):
        check_url("http://10.0.0.1/m", resolve=never, allowed_hosts=["10.0.0.2"])


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "ftp://library.example/m.json", "javascript:alert(1)", "gopher://x/", "//", "", "http://"],
)
def test_only_http_and_https(url: str) -> None:
    with pytest.raises(UnsafeURLError):
        check_url(url, resolve=never)


def test_unresolvable_host_is_a_fetch_error() -> None:
    with pytest.raises(FetchError, match=r"cannot resolve host nowhere\.example"):
        check_url("https://nowhere.example/m.json", resolve=resolver({}))


def test_loopback_refused_by_default(static_server: Any) -> None:
    static_server.write_json("default/m.json", {"a": 1})
    before = len(static_server.log)
    fetcher = Fetcher()
    with pytest.raises(UnsafeURLError, match="loopback"):
        fetcher.get_json(f"{static_server.url}/default/m.json")
    fetcher.session.close()
    assert len(static_server.log) == before


def test_redirect_to_private_host_is_checked_again(static_server: Any) -> None:
    """The loopback server (allowed) redirects to a host that resolves to a private address: the
    second hop is refused before any connection is made."""
    static_server.routes["/redirect/private"] = lambda h: (302, {"Location": "http://intranet.example/secret"}, b"")
    static_server.routes["/redirect/metadata"] = lambda h: (301, {"Location": "http://169.254.169.254/latest"}, b"")
    resolve = resolver({"intranet.example": ["10.20.30.40"]})
    fetcher = Fetcher(allowed_hosts=["127.0.0.1"], resolve=resolve)
    with pytest.raises(
        UnsafeURLError, match=r"http://intranet.example/secret is refused.*private address 10\.20\.30\.40"
    ):
        fetcher.get_json(f"{static_server.url}/redirect/private", what="manifest")
    with pytest.raises(UnsafeURLError, match="link-local"):
        fetcher.get_json(f"{static_server.url}/redirect/metadata", what="manifest")
    assert resolve.calls == ["intranet.example"]
    fetcher.session.close()


def test_redirects_are_followed_and_capped(static_server: Any, fetcher: Fetcher) -> None:
    static_server.write_json("moved/new.json", {"ok": True})
    static_server.routes["/moved/old.json"] = lambda h: (301, {"Location": "/moved/new.json"}, b"")
    doc, final = fetcher.get_json(f"{static_server.url}/moved/old.json")
    assert doc == {"ok": True} and final.endswith("/moved/new.json")
    static_server.routes["/loop"] = lambda h: (302, {"Location": "/loop"}, b"")
    with pytest.raises(FetchError, match="redirects"):
        fetcher.get(f"{static_server.url}/loop")


def _flaky(statuses: list[tuple[int, dict[str, str]]], body: bytes, content_type: str = "application/json") -> Any:
    calls = {"n": 0}

    def route(handler: Any) -> tuple[int, dict[str, str], bytes]:
        n = calls["n"]
        calls["n"] += 1
        if n < len(statuses):
            return statuses[n][0], statuses[n][1], b"busy"
        return 200, {"Content-Type": content_type}, body

    route.calls = calls  # type: ignore[attr-defined]
    return route


def test_retries_honour_retry_after(static_server: Any, tmp_path: Path) -> None:
    now = 1_700_000_000.0  # a fixed wall clock: the HTTP date below is 3 s after it, whatever the machine's speed
    date = email.utils.formatdate(now + 3, usegmt=True)
    route = _flaky([(429, {"Retry-After": "2"}), (503, {"Retry-After": date}), (502, {})], b'{"ok": 1}')
    static_server.routes["/flaky/a.json"] = route
    slept: list[float] = []
    fetcher = Fetcher(allowed_hosts=["127.0.0.1"], sleep=slept.append, wall_clock=lambda: now, backoff=0.5, retries=3)
    doc, _ = fetcher.get_json(f"{static_server.url}/flaky/a.json")
    assert doc == {"ok": 1} and route.calls["n"] == 4
    assert slept == [2.0, 3.0, 2.0]  # Retry-After seconds, Retry-After date, then 0.5 * 2**2 on the third retry
    fetcher.session.close()


def test_retry_after_beyond_the_cap_fails_at_once(static_server: Any) -> None:
    static_server.routes["/flaky/long.json"] = _flaky([(429, {"Retry-After": "3600"})] * 5, b"{}")
    fetcher = Fetcher(allowed_hosts=["127.0.0.1"], sleep=lambda s: None, max_retry_after=30)
    with pytest.raises(FetchError, match="wait 3600 s") as info:
        fetcher.get_json(f"{static_server.url}/flaky/long.json")
    assert info.value.status == 429 and info.value.http_status == 502
    fetcher.session.close()


def test_persistent_server_errors_give_up(static_server: Any) -> None:
    route = _flaky([(500, {})] * 10, b"{}")
    static_server.routes["/flaky/down.json"] = route
    fetcher = Fetcher(allowed_hosts=["127.0.0.1"], sleep=lambda s: None, retries=2)
    with pytest.raises(FetchError, match="HTTP 500"):
        fetcher.get_json(f"{static_server.url}/flaky/down.json")
    assert route.calls["n"] == 3
    static_server.routes["/gone.json"] = lambda h: (404, {"Content-Type": "text/html"}, b"<html>gone</html>")
    with pytest.raises(FetchError, match="HTTP 404"):
        fetcher.get_json(f"{static_server.url}/gone.json")
    fetcher.session.close()


def test_connection_refused_is_a_fetch_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    fetcher = Fetcher(allowed_hosts=["127.0.0.1"], sleep=lambda s: None, retries=1)
    with pytest.raises(FetchError, match="cannot connect"):
        fetcher.get(f"http://127.0.0.1:{port}/m.json")
    fetcher.session.close()


def test_user_agent_names_the_project(static_server: Any, fetcher: Fetcher) -> None:
    static_server.write_json("ua/m.json", {})
    fetcher.get_json(f"{static_server.url}/ua/m.json")
    headers = next(h for p, h in static_server.log if p == "/ua/m.json")
    # The project and its version; no URL of a repository that does not exist (a deployer adds its own
    # contact with COLLATION_IIIF_USER_AGENT).
    assert headers["User-Agent"].startswith("image-collation/") and "github.com" not in headers["User-Agent"]


def test_disk_cache_fetches_nothing_twice(static_server: Any, tmp_path: Path) -> None:
    static_server.write_json("cache/m.json", {"n": 1})
    url = f"{static_server.url}/cache/m.json"
    first = Fetcher(allowed_hosts=["127.0.0.1"], cache_dir=tmp_path / "c")
    first.get_json(url)
    first.get_json(url)
    second = Fetcher(allowed_hosts=["127.0.0.1"], cache_dir=tmp_path / "c")
    response = second.get(url)
    assert response.from_cache and static_server.paths("/cache/m.json") == ["/cache/m.json"]
    first.session.close()
    second.session.close()


def test_concurrent_requests_for_one_url_fetch_it_once(static_server: Any, fetcher: Fetcher) -> None:
    def slow(handler: Any) -> tuple[int, dict[str, str], bytes]:
        time.sleep(0.1)
        return 200, {"Content-Type": "application/json"}, b"[1]"

    static_server.routes["/once.json"] = slow
    with ThreadPoolExecutor(4) as pool:
        docs = list(pool.map(lambda _: fetcher.get_json(f"{static_server.url}/once.json")[0], range(4)))
    assert docs == [[1]] * 4 and static_server.paths("/once.json") == ["/once.json"]


def test_per_host_concurrency_limit(static_server: Any) -> None:
    lock = threading.Lock()
    state = {"active": 0, "peak": 0}

    def slow(handler: Any) -> tuple[int, dict[str, str], bytes]:
        with lock:
            state["active"] += 1
            state["peak"] = max(state["peak"], state["active"])
        time.sleep(0.15)
        with lock:
            state["active"] -= 1
        return 200, {"Content-Type": "application/json"}, b"{}"

    static_server.routes["/slow/"] = slow
    fetcher = Fetcher(allowed_hosts=["127.0.0.1"], per_host=2)
    with ThreadPoolExecutor(6) as pool:
        list(pool.map(lambda n: fetcher.get(f"{static_server.url}/slow/{n}"), range(6)))
    assert state["peak"] == 2
    fetcher.session.close()


class FakeClock:
    """A monotonic clock that moves only when told to (``advance``) or when the fetcher sleeps."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_min_interval_spaces_requests(static_server: Any) -> None:
    for name in ("a", "b", "c"):
        static_server.write_json(f"polite/{name}.json", {})
    clock = FakeClock()
    fetcher = Fetcher(allowed_hosts=["127.0.0.1"], min_interval=5.0, sleep=clock.sleep, clock=clock)
    fetcher.get(f"{static_server.url}/polite/a.json")  # the first request on a host never waits
    clock.advance(1.5)  # the time the first response took
    fetcher.get(f"{static_server.url}/polite/b.json")
    clock.advance(7.0)  # more than min_interval since the last start: no wait
    fetcher.get(f"{static_server.url}/polite/c.json")
    assert clock.slept == [3.5]
    fetcher.session.close()


def test_size_caps(static_server: Any) -> None:
    static_server.write_json("big/m.json", {"x": "y" * 5000})
    fetcher = Fetcher(allowed_hosts=["127.0.0.1"], max_json_bytes=1000)
    with pytest.raises(LimitError, match=r"big/m.json is 50\d\d bytes, more than the cap of 1000"):
        fetcher.get_json(f"{static_server.url}/big/m.json", what="manifest")
    fetcher.session.close()


def test_streamed_body_without_length_is_capped(static_server: Any) -> None:
    chunks = [b"["] + [b"1," * 1000] * 100 + [b"1]"]
    static_server.routes["/stream.json"] = lambda h: (200, {"Content-Type": "application/json"}, chunks)
    fetcher = Fetcher(allowed_hosts=["127.0.0.1"], max_json_bytes=50_000)
    with pytest.raises(LimitError, match="more than the cap of 50000 bytes"):
        fetcher.get_json(f"{static_server.url}/stream.json")
    fetcher.session.close()


def _jpeg(size: tuple[int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (120, 30, 200)).save(out, "JPEG")
    return out.getvalue()


def test_images_are_checked_before_decoding(static_server: Any, fetcher: Fetcher) -> None:
    html = b"<!DOCTYPE html><html><body>Status: 400</body></html>"
    static_server.routes["/img/html-as-jpeg.jpg"] = lambda h: (200, {"Content-Type": "image/jpeg"}, html)
    static_server.routes["/img/html.jpg"] = lambda h: (200, {"Content-Type": "text/html"}, html)
    static_server.routes["/img/truncated.jpg"] = lambda h: (200, {"Content-Type": "image/jpeg"}, _jpeg((50, 50))[:200])
    static_server.routes["/img/ok.jpg"] = lambda h: (200, {"Content-Type": "image/jpg"}, _jpeg((50, 40)))
    with pytest.raises(FetchError, match="not an image although labelled image/jpeg"):
        fetcher.get_image(f"{static_server.url}/img/html-as-jpeg.jpg")
    with pytest.raises(FetchError, match="expected an image, got Content-Type text/html"):
        fetcher.get_image(f"{static_server.url}/img/html.jpg")
    with pytest.raises(FetchError, match="cannot decode"):
        fetcher.get_image(f"{static_server.url}/img/truncated.jpg")
    assert fetcher.get_image(f"{static_server.url}/img/ok.jpg").size == (50, 40)  # invalid image/jpg is fine
    static_server.routes["/img/lower.jpg"] = lambda h: (200, {"content-type": "image/jpeg"}, _jpeg((30, 20)))
    assert fetcher.get_image(f"{static_server.url}/img/lower.jpg").size == (30, 20)  # header names ignore case


def test_decompression_bombs_are_refused_before_decoding(static_server: Any) -> None:
    out = io.BytesIO()
    Image.new("1", (12_000, 12_000)).save(out, "PNG")  # 144 Mpx in a few kilobytes
    static_server.routes["/img/bomb.png"] = lambda h: (200, {"Content-Type": "image/png"}, out.getvalue())
    fetcher = Fetcher(allowed_hosts=["127.0.0.1"])
    with pytest.raises(LimitError, match="12000×12000 pixels"):
        fetcher.get_image(f"{static_server.url}/img/bomb.png")
    fetcher.session.close()


def test_html_instead_of_json(static_server: Any, fetcher: Fetcher) -> None:
    static_server.routes["/login"] = lambda h: (200, {"Content-Type": "text/html"}, b"<html>Please log in</html>")
    static_server.routes["/bad.json"] = lambda h: (200, {"Content-Type": "application/json"}, b'{"a": ')
    with pytest.raises(ManifestError, match="is HTML"):
        fetcher.get_json(f"{static_server.url}/login", what="manifest")
    with pytest.raises(ManifestError, match="not valid JSON"):
        fetcher.get_json(f"{static_server.url}/bad.json", what="manifest")


def test_errors_are_project_errors() -> None:
    assert issubclass(UnsafeURLError, InputError) and issubclass(LimitError, InputError)
    assert issubclass(ManifestError, InputError) and issubclass(FetchError, CollationError)
    assert FetchError("x").http_status == 502


def test_unknown_options_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown Fetcher options"):
        Fetcher(alow_private=True)


def test_configuration_from_environment(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {
            "COLLATION_IIIF_ALLOW_PRIVATE": "yes",
            "COLLATION_ALLOWED_HOSTS": "iiif.internal, 10.0.0.5",
            "COLLATION_IIIF_PER_HOST": "2",
            "COLLATION_IIIF_BACKOFF": "0.5",
            "COLLATION_IIIF_CACHE_DIR": str(tmp_path),
            "COLLATION_IIIF_REGION_LONG_SIDE": "224",
            "OTHER": "x",
        }
    )
    fetcher = fetcher_for(settings, allowed_hosts=["extra.example"])
    assert fetcher.conf == FetchSettings(
        allow_private=True, per_host=2, backoff=0.5, cache_dir=tmp_path, region_long_side=224
    )
    assert fetcher.allowed_hosts == ("iiif.internal", "10.0.0.5", "extra.example")
    assert fetcher.cache_dir == tmp_path and fetcher.region_long_side == 224
    assert fetcher_for(settings, cache_dir=tmp_path / "other").cache_dir == tmp_path / "other"
    with pytest.raises(SettingsError, match="COLLATION_IIIF_PER_HOST"):
        Settings.from_env({"COLLATION_IIIF_PER_HOST": "many"})
    assert default_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "image-collation" / "iiif"
    assert default_cache_dir({}).parts[-3:] == (".cache", "image-collation", "iiif")


def test_one_default_per_option() -> None:
    """The Fetcher has no defaults of its own: each comes from FetchSettings, and overrides are its fields."""
    assert Fetcher().conf == FetchSettings()
    assert Fetcher(FetchSettings(retries=7), retries=1).conf.retries == 1
    assert Fetcher(cache_dir=str(Path("c"))).cache_dir == Path("c")
    with pytest.raises(ValueError, match="per_host"):
        Fetcher(per_host=0)

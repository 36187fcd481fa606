"""SSRF through the fetcher, end to end against a loopback canary: parser confusion (the address
checked is not the address connected to) and DNS rebinding (a second DNS answer), also on redirect
hops. Every test asserts that the canary received nothing."""

from __future__ import annotations

import socket
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from builders import serving
from hostile_helpers import Canary, Jail

from collation.core.errors import CollationError, FetchError, UnsafeURLError
from collation.net.http import Fetcher

PUBLIC = "93.184.216.34"


def rebinding(name: str, first: str, then: str) -> Any:
    """A getaddrinfo stand-in: ``name`` resolves to ``first`` once, then to ``then``."""
    calls: list[str] = []

    def resolve(host: str, port: Any = None, *args: Any, **kwargs: Any) -> list[Any]:
        if host in (first, then):  # an address literal (urllib3 "resolves" the pinned address)
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (host, int(port or 80)))]
        if host != name:
            raise socket.gaierror(-2, "Name or service not known")
        calls.append(host)
        address = first if len(calls) == 1 else then
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port or 80)))]

    resolve.calls = calls  # type: ignore[attr-defined]
    return resolve


def no_dns(host: str, *args: Any, **kwargs: Any) -> Any:
    raise socket.gaierror(-2, f"the tests resolve no host names ({host})")


@pytest.mark.parametrize(
    "template",
    [
        "http://127.0.0.1:{port}\\@8.8.8.8/x",  # urllib.parse: 8.8.8.8; urllib3: 127.0.0.1
        "http://127.0.0.1:{port}\\\\@8.8.8.8/x",
        "http://8.8.8.8@127.0.0.1:{port}/x",  # userinfo
        "http://user:pw@127.0.0.1:{port}/x",
        "http://127.0.0.1:{port}#@8.8.8.8/x",
        "http://127.0.0.1:{port}?@8.8.8.8/x",
        "http://127.0.0.1\t:{port}/x",
        "http://127.0.0.1:{port}/x\r\nHost: 8.8.8.8",
    ],
)
def test_parser_confusion_never_reaches_the_canary(template: str, canary: Canary, jail: Jail) -> None:
    fetcher = Fetcher(resolve=no_dns, retries=0)
    with pytest.raises(CollationError):
        fetcher.get(template.format(port=canary.port), what="manifest")
    fetcher.session.close()
    assert canary.hits == [] and [a for a in jail.connects if a.startswith("127.")] == []


def test_dns_rebinding_is_pinned_to_the_checked_address(
    canary: Canary, jail: Jail, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name answers a public address, then loopback: the connection goes to the address that was
    checked (refused by the jail, so nothing leaves), never to loopback; retries resolve again and
    are refused."""
    resolve = rebinding("rebind.example", PUBLIC, "127.0.0.1")
    monkeypatch.setattr(socket, "getaddrinfo", resolve)  # whoever else resolves sees the rebinding too
    fetcher = Fetcher(resolve=resolve, retries=2, backoff=0.0)
    with pytest.raises((FetchError, UnsafeURLError)):
        fetcher.get(f"http://rebind.example:{canary.port}/manifest.json", what="manifest")
    fetcher.session.close()
    assert canary.hits == []
    assert jail.connects == [PUBLIC], jail.connects  # one attempt, to the checked address; the retry is refused
    assert len(resolve.calls) == 2  # once per attempt, never again for the connection


def test_dns_rebinding_on_a_redirect_hop(canary: Canary, jail: Jail, monkeypatch: pytest.MonkeyPatch) -> None:
    """An allowed loopback server redirects to a name that rebinds to loopback on its second answer."""
    resolve = rebinding("hop.example", PUBLIC, "127.0.0.1")
    monkeypatch.setattr(socket, "getaddrinfo", resolve)

    class Redirect(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(302)
            self.send_header("Location", f"http://hop.example:{canary.port}/secret")
            self.send_header("Content-Length", "0")
            self.end_headers()

    with serving(Redirect) as httpd:
        fetcher = Fetcher(allowed_hosts=["127.0.0.1"], resolve=resolve, retries=1, backoff=0.0)
        with pytest.raises((FetchError, UnsafeURLError)):
            fetcher.get(f"http://127.0.0.1:{httpd.server_address[1]}/start", what="manifest")
        fetcher.session.close()
    assert canary.hits == []
    assert PUBLIC in jail.connects and jail.refused == [PUBLIC]


def test_allowed_loopback_name_is_pinned_too(canary: Canary, jail: Jail) -> None:
    """An allow-listed name is resolved once and the connection goes to that answer, with the
    original Host header (the canary is the server here: the one request it gets is the expected one)."""
    resolve = rebinding("iiif.local", "127.0.0.1", PUBLIC)
    fetcher = Fetcher(allowed_hosts=["iiif.local"], resolve=resolve, retries=0)
    response = fetcher.get(f"http://iiif.local:{canary.port}/info.json", what="info.json")
    fetcher.session.close()
    assert response.status == 200 and canary.hits == [("GET", "/info.json", f"iiif.local:{canary.port}")]
    assert jail.refused == [] and len(resolve.calls) == 1


def test_callback_posts_are_pinned_like_fetches(canary: Canary, jail: Jail, monkeypatch: pytest.MonkeyPatch) -> None:
    """A collation's ``callback_url`` is POSTed through the same pinned connection: a name that rebinds
    to loopback after the check reaches only the checked address, and a loopback URL is refused."""
    resolve = rebinding("hook.example", PUBLIC, "127.0.0.1")
    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    fetcher = Fetcher(resolve=resolve)
    with pytest.raises(FetchError):
        fetcher.post_json(f"http://hook.example:{canary.port}/done", {"status": "finished"})
    with pytest.raises(UnsafeURLError):
        fetcher.post_json(f"http://127.0.0.1:{canary.port}/done", {"status": "finished"})
    fetcher.session.close()
    assert canary.hits == []
    assert jail.connects == [PUBLIC]


def test_callback_posts_reach_an_allowed_server(canary: Canary) -> None:
    fetcher = Fetcher(allowed_hosts=("127.0.0.1",))
    assert fetcher.post_json(f"{canary.url}/done", {"status": "finished"}) == 200
    fetcher.session.close()
    assert [(method, path) for method, path, _host in canary.hits] == [("POST", "/done")]

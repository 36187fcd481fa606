"""Which URLs may be fetched, and the one address each fetch connects to.

A service that fetches URLs supplied by users can be turned against its own network, so every URL
(and every redirect hop) is checked before a connection is made, and the connection then goes to
exactly the address that was checked (``Target.address``: ``collation.net.pinning`` connects to
it). That closes two holes:

- **parser confusion**: ``http://127.0.0.1:80\\@8.8.8.8/`` is host 8.8.8.8 for ``urllib.parse``
  but 127.0.0.1 for urllib3. A URL is refused unless ``urllib.parse``, urllib3's ``parse_url`` and
  the URL ``requests`` prepares agree on scheme, host and port; backslashes, user:password,
  whitespace and control characters are refused outright;
- **DNS rebinding**: the host is resolved once per request (and per redirect hop), every address
  it resolves to must be public, and the connection goes to the first of them, never to a second
  answer of the DNS.

Public means global unicast: loopback, private, link-local, multicast, unspecified, reserved and
shared addresses are refused, and so, by design, are IPv6 prefixes that embed or translate IPv4
(IPv4-mapped, IPv4-compatible, 6to4 ``2002::/16``, Teredo ``2001::/32``, NAT64 ``64:ff9b::/96``
and ``64:ff9b:1::/48``), whatever IPv4 address they carry. API::

    target = resolve_target(url, resolve=socket.getaddrinfo, allow_private=False, allowed_hosts=())
    target.address, target.host, target.port, target.host_header
    check_url(url, ...)   # -> url, the same checks
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests
from urllib3.exceptions import LocationParseError
from urllib3.util import parse_url

from collation.core.errors import FetchError, UnsafeURLError

Resolver = Callable[..., Iterable[Any]]
"""A ``socket.getaddrinfo``-like callable: ``resolve(host, port, type=...) -> [(family, type, proto,
canonname, sockaddr), ...]``; injected in tests so that no test depends on real DNS."""

EMBEDDING_NETWORKS = (
    (ipaddress.IPv6Network("::/96"), "IPv4-compatible IPv6"),
    (ipaddress.IPv6Network("2002::/16"), "6to4"),
    (ipaddress.IPv6Network("2001::/32"), "Teredo"),
    (ipaddress.IPv6Network("64:ff9b::/96"), "NAT64"),
    (ipaddress.IPv6Network("64:ff9b:1::/48"), "NAT64"),
)
"""IPv6 prefixes that carry or translate an IPv4 address: refused whatever address they carry."""

DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Target:
    """Where one request goes: the URL as checked, its host and port, and the address to connect to."""

    url: str
    scheme: str
    host: str  # as in the Host header and TLS server name: lower case, IDNA, no brackets
    port: int
    address: str  # the checked IP address the connection must go to
    host_header: str  # host[:port] as requests would send it


def _address_problem(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why an address must not be fetched from, or None when it is a public unicast address."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        else:
            for network, name in EMBEDDING_NETWORKS:
                if address in network and not address.is_loopback and not address.is_unspecified:
                    return f"{name} (IPv4 embedded in IPv6)"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if address.is_unspecified:
        return "unspecified"
    if address.is_private:
        return "private"
    if address.is_reserved or not address.is_global:
        return "not globally routable"
    return None


def _parse_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None


def _refuse(url: str, what: str, reason: str) -> UnsafeURLError:
    return UnsafeURLError(f"{what} {url} is refused: {reason}", url=url)


def parse_target_url(url: str, *, what: str = "URL") -> tuple[str, str, int, str]:
    """``(scheme, host, port, host_header)`` of ``url`` when every parser agrees on them, else
    ``UnsafeURLError``: the host we check must be the host the HTTP library connects to."""
    if not isinstance(url, str) or not url:
        raise UnsafeURLError(f"{what} {url!r} is not a URL", url=str(url))
    if any(ch in url for ch in "\\\t\r\n ") or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        raise _refuse(url, what, "it contains a backslash, whitespace or a control character")
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        raise UnsafeURLError(f"{what} {url} is not a valid URL: {exc}", url=url) from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise _refuse(url, what, f"only http and https URLs are fetched, not {parts.scheme or 'no'} scheme")
    if not host:
        raise _refuse(url, what, "it names no host")
    if "@" in parts.netloc or parts.username is not None:
        raise _refuse(url, what, "URLs with a user name or password (userinfo) are not fetched")
    try:
        lib = parse_url(url)
        prepared = requests.Request("GET", url).prepare().url or ""
        ready = urlsplit(prepared)
        ready_host, ready_port = ready.hostname, ready.port
    except (LocationParseError, requests.RequestException, ValueError, UnicodeError) as exc:
        raise UnsafeURLError(f"{what} {url} is not a valid URL: {exc}", url=url) from None
    try:
        ascii_host = host.encode("idna").decode("ascii").lower() if not host.isascii() else host.lower()
    except UnicodeError as exc:
        raise UnsafeURLError(f"{what} {url} is not a valid URL: {exc}", url=url) from None
    default = DEFAULT_PORTS[scheme]
    views = {
        ("urllib.parse", scheme, ascii_host, port or default),
        ("urllib3", (lib.scheme or "").lower(), (lib.host or "").strip("[]").lower(), lib.port or default),
        ("requests", ready.scheme.lower(), (ready_host or "").lower(), ready_port or default),
    }
    if len({view[1:] for view in views}) != 1 or lib.auth or "@" in ready.netloc:
        found = ", ".join(f"{name}: {s}://{h}:{p}" for name, s, h, p in sorted(views))
        raise _refuse(url, what, f"parsers disagree on where it goes ({found})")
    port = port or DEFAULT_PORTS[scheme]
    return scheme, ascii_host, port, ready.netloc


def resolve_target(
    url: str,
    *,
    resolve: Resolver = socket.getaddrinfo,
    allow_private: bool = False,
    allowed_hosts: Iterable[str] = (),
    what: str = "URL",
) -> Target:
    """The ``Target`` of ``url`` if policy allows fetching it, else ``UnsafeURLError`` naming the reason.

    The host is resolved once (``resolve``); unless ``allow_private`` is set or the host is listed in
    ``allowed_hosts``, every address it resolves to must be public (one private address among
    public ones is enough to refuse). The connection must go to ``Target.address``.
    """
    scheme, host, port, host_header = parse_target_url(url, what=what)
    literal = _parse_ip(host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            infos = list(resolve(host, port, type=socket.SOCK_STREAM))
        except (OSError, UnicodeError, ValueError) as exc:
            raise FetchError(f"{what} {url}: cannot resolve host {host}: {exc}", url=url) from None
        addresses = [a for a in (_parse_ip(str(info[4][0])) for info in infos) if a is not None]
        if not addresses:
            raise FetchError(f"{what} {url}: host {host} resolves to no address", url=url)
    allowed = {h.lower().strip("[]") for h in allowed_hosts}
    if not (allow_private or host in allowed):
        for address in addresses:
            problem = _address_problem(address)
            if problem is not None:
                raise _refuse(
                    url,
                    what,
                    f"host {host} resolves to {problem} address {address} "
                    "(set allow_private or list the host in allowed_hosts to fetch from it)",
                )
    return Target(url=url, scheme=scheme, host=host, port=port, address=str(addresses[0]), host_header=host_header)


def check_url(
    url: str,
    *,
    resolve: Resolver = socket.getaddrinfo,
    allow_private: bool = False,
    allowed_hosts: Iterable[str] = (),
    what: str = "URL",
) -> str:
    """Return ``url`` if policy allows fetching it, else raise ``UnsafeURLError`` naming the reason
    (the checks of ``resolve_target``). A caller that then connects by itself resolves the host
    again: prefer ``Fetcher``, which connects to the address it checked."""
    if not isinstance(url, str) or not url:
        raise UnsafeURLError(f"{what} {url!r} is not a URL", url=str(url))
    allowed = {h.lower().strip("[]") for h in allowed_hosts}
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        host = ""
    if allow_private or (host and host in allowed):  # no address needed: nothing to resolve
        parse_target_url(url, what=what)
        return url
    resolve_target(url, resolve=resolve, allow_private=allow_private, allowed_hosts=allowed_hosts, what=what)
    return url

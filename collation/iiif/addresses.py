"""Which URLs may be fetched: http(s) only, and no host that resolves to a non-public address.

A service that fetches URLs supplied by users can be turned against its own network, so every URL
(and every redirect hop) is checked before a connection is made. API::

    check_url(url, resolve=socket.getaddrinfo, allow_private=False, allowed_hosts=())  # -> url

Known limit: the address check and the connection resolve the host separately, so a DNS server
that answers differently within milliseconds (DNS rebinding) is not stopped here; deployments that
fetch untrusted URLs should also block private ranges at the network level.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from collation.iiif.errors import FetchError, UnsafeURLError

Resolver = Callable[..., Iterable[Any]]
"""A ``socket.getaddrinfo``-like callable: ``resolve(host, port, type=...) -> [(family, type, proto,
canonname, sockaddr), ...]``; injected in tests so that no test depends on real DNS."""



def _address_problem(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why an address must not be fetched from, or None when it is a public unicast address."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
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


def check_url(
    url: str,
    *,
    resolve: Resolver = socket.getaddrinfo,
    allow_private: bool = False,
    allowed_hosts: Iterable[str] = (),
    what: str = "URL",
) -> str:
    """Return ``url`` if policy allows fetching it, else raise ``UnsafeURLError`` naming the reason.

    Only http and https are allowed. Unless ``allow_private`` is set or the host is listed in
    ``allowed_hosts``, every address the host resolves to must be a public unicast address: one
    private address is enough to refuse (a host may resolve to several).
    """
    if not isinstance(url, str) or not url:
        raise UnsafeURLError(f"{what} {url!r} is not a URL", url=str(url))
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError as exc:
        raise UnsafeURLError(f"{what} {url} is not a valid URL: {exc}", url=url) from None
    if parts.scheme not in ("http", "https"):
        raise UnsafeURLError(
            f"{what} {url} is refused: only http and https URLs are fetched, not {parts.scheme or 'no'} scheme",
            url=url,
        )
    if not host:
        raise UnsafeURLError(f"{what} {url} is refused: it names no host", url=url)
    allowed = {h.lower().strip("[]") for h in allowed_hosts}
    if host.lower() in allowed or allow_private:
        return url
    literal = _parse_ip(host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            infos = list(resolve(host, port or (443 if parts.scheme == "https" else 80), type=socket.SOCK_STREAM))
        except (OSError, UnicodeError, ValueError) as exc:
            raise FetchError(f"{what} {url}: cannot resolve host {host}: {exc}", url=url) from None
        addresses = [a for a in (_parse_ip(str(info[4][0])) for info in infos) if a is not None]
        if not addresses:
            raise FetchError(f"{what} {url}: host {host} resolves to no address", url=url)
    for address in addresses:
        problem = _address_problem(address)
        if problem is not None:
            raise UnsafeURLError(
                f"{what} {url} is refused: host {host} resolves to {problem} address {address} "
                "(set allow_private or list the host in allowed_hosts to fetch from it)",
                url=url,
            )
    return url

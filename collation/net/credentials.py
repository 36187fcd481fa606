"""Which hosts a fetcher sends a IIIF Auth 2.0 access token to.

A collation's tokens come by access service id (``collation.jobs.access``); a token is sent to a host
only once ``authorize`` names it, which ``collation.iiif.info.read_info`` does for the host whose Image
API answered 401 naming that access service, and for the service's declared id. Hosts are compared
with their port (default ports filled in), so another server on the same machine gets nothing.
"""

from __future__ import annotations

from urllib.parse import urlsplit


def host_key(url: str) -> str:
    """``host:port`` of a URL, lower case, the default port filled in."""
    parts = urlsplit(url)
    return f"{(parts.hostname or '').lower()}:{parts.port or (443 if parts.scheme == 'https' else 80)}"


class Credentials:
    """The access tokens of one fetcher (``tokens``: access service id -> token) and the hosts authorized."""

    def __init__(self, tokens: dict[str, str] | None = None) -> None:
        self.tokens = dict(tokens or {})
        self._hosts: dict[str, str] = {}

    def authorize(self, url: str, token: str) -> None:
        """From now on, requests to ``url``'s host carry ``Authorization: Bearer <token>``."""
        self._hosts[host_key(url)] = token

    def bearer(self, url: str) -> str | None:
        """The token to send with a request to ``url`` (None: none)."""
        return self._hosts.get(host_key(url)) if self._hosts else None

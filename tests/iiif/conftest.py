"""Fixtures of the IIIF tests: fetchers allowed to reach 127.0.0.1. The loopback servers they talk to
(``static_server``, a static/scripted HTTP server; ``iipsrv``, iipsrv behind lighttpd serving the
Physiologus folios) are in ``tests/conftest.py``, shared with the service tests; a tiny Image API 3
server is ``iiif_helpers.image_api3_route``. Nothing here sends a request anywhere but to servers
these fixtures start."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collation.net.http import Fetcher


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

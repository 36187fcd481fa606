"""Connections to checked addresses only, and a wall-clock deadline on every request.

``PinnedAdapter`` is a ``requests`` transport adapter that never resolves a host name: each request
carries the ``Target`` that ``addresses.resolve_target`` checked, and the connection goes to
``target.address`` while the request still names the host (``Host`` header; for https the TLS
server name (SNI) and the certificate check use the host name, with the session's ``verify``).
Connection pools are kept per (scheme, address, port, host), so keep-alive still works and a host
that re-resolves elsewhere gets a new pool, never a connection to an address that was not checked.
Proxies are not used (a proxy would resolve the name itself).

``Deadlines`` bounds one request in wall-clock time, headers and body together: a timer shuts the
socket down when the time is up, which wakes a read blocked on a server that trickles bytes (socket
timeouts alone restart at every byte). API::

    adapter = PinnedAdapter(pool_connections=..., pool_maxsize=...)
    with adapter.deadlines.within(seconds) as deadline:   # deadline.expired afterwards
        response = adapter.send_pinned(prepared, target, timeout=(connect, read), verify=True)
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3 import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.connection import HTTPConnection, HTTPSConnection

from collation.net.addresses import Target

MAX_POOLS = 32
"""Connection pools (one per scheme, address, port and host) kept open per adapter."""


class Deadline:
    """The wall-clock limit of one request: the connections it used are shut down when it expires."""

    def __init__(self) -> None:
        self.expired = False
        self.done = False
        self._lock = threading.Lock()
        self._connections: list[HTTPConnection] = []

    def attach(self, connection: HTTPConnection) -> None:
        with self._lock:
            self._connections.append(connection)
            if self.expired:
                _shutdown(connection)

    def expire(self) -> None:
        with self._lock:
            if self.done:
                return
            self.expired = True
            for connection in self._connections:
                _shutdown(connection)


def _shutdown(connection: HTTPConnection) -> None:
    """Shut a connection's socket down (waking a blocked read) without touching its TLS state."""
    sock = getattr(connection, "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)


class Deadlines:
    """The current ``Deadline`` of each thread; connections attach to it when they send a request."""

    def __init__(self) -> None:
        self._local = threading.local()

    @contextlib.contextmanager
    def within(self, seconds: float) -> Iterator[Deadline]:
        deadline = Deadline()
        timer = threading.Timer(max(0.0, seconds), deadline.expire)
        timer.daemon = True
        self._local.current = deadline
        timer.start()
        try:
            yield deadline
        finally:
            with deadline._lock:
                deadline.done = True
            timer.cancel()
            self._local.current = None

    def attach(self, connection: HTTPConnection) -> None:
        current = getattr(self._local, "current", None)
        if current is not None:
            current.attach(connection)


class _Watched:
    """A connection that puts itself under the request's deadline when it starts a request."""

    def __init__(self, *args: Any, deadlines: Deadlines, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.deadlines = deadlines

    def request(self, *args: Any, **kwargs: Any) -> None:
        self.deadlines.attach(self)  # type: ignore[arg-type]
        super().request(*args, **kwargs)  # type: ignore[misc]


class _WatchedHTTPConnection(_Watched, HTTPConnection):
    pass


class _WatchedHTTPSConnection(_Watched, HTTPSConnection):
    pass


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


class PinnedAdapter(HTTPAdapter):
    """A transport adapter that connects to the address of the request's ``Target`` and nowhere else."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.deadlines = Deadlines()
        self._pools: OrderedDict[tuple[str, str, int, str], HTTPConnectionPool] = OrderedDict()
        self._pools_lock = threading.Lock()
        self._maxsize = kwargs.get("pool_maxsize", 10)

    def send_pinned(self, request: requests.PreparedRequest, target: Target, **kwargs: Any) -> requests.Response:
        """``send`` through a connection to ``target.address``; ``request`` must be for ``target.url``."""
        request.headers["Host"] = target.host_header
        request.pinned_target = target  # type: ignore[attr-defined]
        return self.send(request, proxies={}, **kwargs)

    def get_connection_with_tls_context(
        self, request: requests.PreparedRequest, verify: Any, proxies: dict[str, str] | None = None, cert: Any = None
    ) -> HTTPConnectionPool:
        target: Target | None = getattr(request, "pinned_target", None)
        if target is None:  # never resolve a name here: every request must have been checked
            raise requests.exceptions.InvalidURL(f"{request.url}: no checked address (use Fetcher)", request=request)
        key = (target.scheme, target.address, target.port, target.host)
        with self._pools_lock:
            pool = self._pools.get(key)
            if pool is None:
                if target.scheme == "https":
                    pool = _HTTPSPool(
                        target.address,
                        target.port,
                        maxsize=self._maxsize,
                        block=False,
                        server_hostname=target.host,
                        assert_hostname=target.host,
                        deadlines=self.deadlines,
                    )
                else:
                    pool = _HTTPPool(
                        target.address, target.port, maxsize=self._maxsize, block=False, deadlines=self.deadlines
                    )
                self._pools[key] = pool
                while len(self._pools) > MAX_POOLS:
                    self._pools.popitem(last=False)[1].close()
            else:
                self._pools.move_to_end(key)
        return pool

    def close(self) -> None:
        super().close()
        with self._pools_lock:
            for pool in self._pools.values():
                pool.close()
            self._pools.clear()

"""The hostile harness: fixtures that make an attack's success visible instead of silent.

- ``canary``: a loopback HTTP server that should never be reached; every request it receives is
  recorded (``canary.hits``). A test points the forbidden destination of an attack at it (a
  loopback address behind a confusing URL, a DNS answer that rebinds to loopback) and asserts
  ``canary.hits == []``.
- ``jail``: while active, every outgoing TCP connection of the process to a non-loopback address is
  refused before a packet leaves (``socket.socket.connect`` is patched) and recorded in
  ``jail.refused``; ``jail.connects`` lists every address a connection was attempted to. So a test
  can let the fetcher "connect" to a public address it pinned and see where it went, without
  sending anything off the machine.

Nothing here sends a request anywhere but to loopback servers these fixtures start.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from builders import serving
from hostile_helpers import Canary, Jail, canary_handler


@pytest.fixture
def canary() -> Iterator[Canary]:
    state = Canary()
    with serving(canary_handler(state)) as httpd:
        state.port = httpd.server_address[1]
        yield state


@pytest.fixture
def jail(monkeypatch: pytest.MonkeyPatch) -> Jail:
    state = Jail()
    real_connect = socket.socket.connect

    def connect(sock: socket.socket, address: Any) -> None:
        host = str(address[0]) if isinstance(address, tuple) else str(address)
        state.connects.append(host)
        try:
            loopback = ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            state.refused.append(host)
            raise ConnectionRefusedError(f"jail: no connection to {host} leaves this test")
        real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return state

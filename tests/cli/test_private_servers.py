"""The private servers `collate serve` and the tests start: a port picked free may be taken before the
server binds it."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from redis import Redis

from collation.cli import private_servers
from collation.cli.private_servers import start_redis, stop
from collation.core.errors import CollationError

pytestmark = pytest.mark.stack


def test_redis_starts_on_another_port_when_its_picked_port_was_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The suite's two workers each start Redis; once, the port one picked was bound by the other's process
    before Redis bound it, and every test of that worker needing Redis failed (303 errors)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        picks = iter([busy])
        free = private_servers.free_port
        monkeypatch.setattr(private_servers, "free_port", lambda: next(picks, None) or free())
        process, url = start_redis(tmp_path / "redis")
        try:
            assert url != f"redis://127.0.0.1:{busy}/0" and Redis.from_url(url).ping()
            assert f"{busy}: bind: Address already in use" in (tmp_path / "redis" / "redis.log").read_text()
        finally:
            stop(process)


def test_a_redis_on_a_given_port_that_is_taken_is_an_error_naming_its_log(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(CollationError, match=r"redis-server did not start; see .*redis\.log"):
            start_redis(tmp_path / "redis", port=taken.getsockname()[1], timeout=5)

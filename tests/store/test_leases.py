"""Redis locks held as leases (``collation.store.leases``) on a real Redis: a live holder keeps the
lock past its lease, a holder killed with SIGKILL frees it within one lease, a waiter gives up."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis import Redis

from collation.store.leases import LeaseNotAcquired, leased

LEASE = 0.6
"""Seconds of the leases here: short, so that an expiry shows within a second."""

HOLDS_AND_HANGS = """
import sys, time
from pathlib import Path
from redis import Redis
from collation.store.leases import leased

with leased(Redis.from_url(sys.argv[1]), "lease-test", lease=float(sys.argv[2]), wait=5):
    Path(sys.argv[3]).touch()
    time.sleep(600)
"""


@pytest.fixture
def connection(redis_url: str) -> Iterator[Redis]:
    client = Redis.from_url(redis_url)
    yield client
    client.close()


def test_a_live_holder_keeps_the_lock_past_its_lease(connection: Redis) -> None:
    with leased(connection, "lease-test", lease=LEASE, wait=1):
        time.sleep(3 * LEASE)  # three leases: renewed, not expired
        with pytest.raises(LeaseNotAcquired), leased(connection, "lease-test", lease=LEASE, wait=0.3):
            pass
        assert 0 < connection.pttl("lease-test") <= LEASE * 1000
    assert not connection.exists("lease-test")  # released at once on leaving, not by expiry
    start = time.monotonic()
    with leased(connection, "lease-test", lease=LEASE, wait=1):
        assert time.monotonic() - start < 0.2


def test_a_killed_holder_frees_the_lock_within_a_lease(connection: Redis, redis_url: str, tmp_path: Path) -> None:
    flag = tmp_path / "held"
    holder = subprocess.Popen([sys.executable, "-c", HOLDS_AND_HANGS, redis_url, str(LEASE), str(flag)])
    try:
        deadline = time.monotonic() + 30
        while not flag.exists():
            assert holder.poll() is None and time.monotonic() < deadline, "the holder never took the lock"
            time.sleep(0.05)
        time.sleep(2 * LEASE)  # renewed while its process lives
        assert connection.exists("lease-test")
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        killed_at = time.monotonic()
        with leased(connection, "lease-test", lease=LEASE, wait=10):
            waited = time.monotonic() - killed_at
        assert waited < LEASE + 1.0, waited  # a lease, and a second's slack for a loaded machine
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()

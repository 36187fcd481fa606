"""Redis locks held as leases: a short expiry that the holder renews while it works.

A lock whose expiry covers the longest hold (minutes) turns a holder killed with SIGKILL (a worker's
container stopped, the OOM killer) into a stall of that long for everyone waiting on it. A lease
expires ``lease`` seconds after its holder stopped renewing it: a live holder keeps it for as long as
it works, a dead one frees it within ``lease`` seconds. What such a lock guards must be safe to run
again after a holder died halfway (the scheduler's planning is: job ids derive from the steps).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

from redis import Redis
from redis.exceptions import LockError, RedisError
from redis.lock import Lock

log = logging.getLogger("collation.store")

RENEWALS_PER_LEASE = 3
"""How often the holder renews within one lease: a renewal may be late by two thirds of a lease (a
busy process, a slow Redis) before the lease is lost."""


class LeaseNotAcquired(LockError):
    """The lease was not free within the time the caller waits."""


@contextlib.contextmanager
def leased(connection: Redis, name: str, *, lease: float, wait: float) -> Iterator[None]:
    """Holds the Redis lock ``name`` as a lease of ``lease`` seconds, renewed by a thread until the
    block ends; waits up to ``wait`` seconds for it.

    Raises:
        LeaseNotAcquired: another holder kept it longer than ``wait`` seconds.
    """
    # thread_local=False: the renewing thread must see the token the acquiring thread got.
    lock = connection.lock(name, timeout=lease, blocking_timeout=wait, thread_local=False)
    if not lock.acquire():
        raise LeaseNotAcquired(f"lock {name} was not free within {wait:g} s", lock_name=name)
    stop = threading.Event()
    renewer = threading.Thread(target=_renew, args=(lock, stop, lease / RENEWALS_PER_LEASE), name=f"lease {name}")
    renewer.daemon = True  # never keeps a process alive; a process that ends frees the lease by expiry
    renewer.start()
    try:
        yield
    finally:
        stop.set()
        renewer.join(lease)  # a renewal stuck on an unanswering Redis never holds up the holder
        with contextlib.suppress(LockError, RedisError):  # lost or expired meanwhile: nothing to free
            lock.release()


def _renew(lock: Lock, stop: threading.Event, interval: float) -> None:
    """Resets the lease's expiry every ``interval`` seconds until ``stop`` is set or the lease is lost."""
    while not stop.wait(interval):
        try:
            lock.reacquire()
        except LockError:
            log.warning("Lease %s lost: its holder did not renew it in time", lock.name)
            return
        except RedisError as exc:  # Redis unreachable for a moment: try again at the next interval
            log.debug("Lease %s not renewed: %s", lock.name, exc)

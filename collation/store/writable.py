"""Whether the data store can be written: a write probe, and the last failure, as Redis remembers it.

A full, read-only or failing disk makes every write of the store fail with an ``OSError`` whose
errno is in ``STORE_ERRNOS``. Whoever meets one (a job, the API's sweeper, ``/readyz``) remembers
its message in Redis (``RedisKeys.store_problem``, for ``PROBLEM_TTL`` seconds) where nothing is
written to the disk, so that the status of every unfinished collation can say what is wrong; the
next successful probe forgets it.
"""

from __future__ import annotations

import contextlib
import errno

from redis import Redis
from redis.exceptions import RedisError

from collation.store.datastore import DataStore
from collation.store.redis_keys import RedisKeys

STORE_ERRNOS = frozenset({errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EIO})
"""errno values of a data store that cannot be written (read-only, full, forbidden, failing)."""
PROBLEM_TTL = 900
"""Seconds Redis remembers a write failure of the store when no probe comes to forget it."""


def is_store_error(exc: BaseException) -> bool:
    """Whether ``exc`` says that the disk cannot be written (rather than a missing file, say)."""
    return isinstance(exc, OSError) and exc.errno in STORE_ERRNOS


def describe(exc: OSError) -> str:
    """``the data store cannot be written: No space left on device``."""
    return f"the data store cannot be written: {exc.strerror or exc}"


def probe(store: DataStore) -> str | None:
    """Writes (atomically) and removes a small object in the data store; returns None when that
    worked, else the ``describe`` message of the failure."""
    try:
        store.probe()
    except OSError as exc:
        return describe(exc)
    return None


def remember(connection: Redis | None, message: str) -> None:
    """Keeps ``message`` as the store's current problem (best effort: Redis may be down too)."""
    if connection is not None:
        with contextlib.suppress(RedisError):
            connection.set(RedisKeys.store_problem(), message, ex=PROBLEM_TTL)


def forget(connection: Redis | None) -> None:
    if connection is not None:
        with contextlib.suppress(RedisError):
            connection.delete(RedisKeys.store_problem())


def recall(connection: Redis | None) -> str | None:
    """The store's current problem, or None (also when Redis cannot say)."""
    if connection is None:
        return None
    try:
        raw = connection.get(RedisKeys.store_problem())
    except RedisError:
        return None
    return raw.decode() if isinstance(raw, bytes) else raw


def check(store: DataStore, connection: Redis | None) -> str | None:
    """``probe`` the store, and remember or forget its problem accordingly; returns the problem."""
    problem = probe(store)
    if problem is None:
        forget(connection)
    else:
        remember(connection, problem)
    return problem

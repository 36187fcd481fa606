"""Whether the data store can be written: a write probe, and the last failure, as Redis remembers it.

A full, read-only or failing disk makes every write of the store fail with an ``OSError`` whose
errno is in ``STORE_ERRNOS``. Whoever meets one (a job, the API's sweeper, ``/readyz``) remembers
its message in Redis (``RedisKeys.store_problem``, for ``PROBLEM_TTL`` seconds) where nothing is
written to the disk, so that the status of every unfinished collation can say what is wrong; the
next successful probe forgets it. A probe fails too when the disk has less than
``COLLATION_MIN_FREE_BYTES`` free (``low_space``): a small probe still fits on a disk that a features
file no longer fits on.
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


FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
"""errno values of a full disk (or quota): ``describe`` names them "the data store is full"."""


def store_error(exc: BaseException) -> OSError | None:
    """The ``OSError`` of ``STORE_ERRNOS`` that ``exc`` is or was raised from (its ``__cause__`` or
    ``__context__``, as far back as they go), else None. ``torch.save`` into a full disk raises a
    ``RuntimeError`` ("[enforce fail at inline_container.cc] unexpected pos") whose context is the
    ``OSError`` of the write: that is a full disk too."""
    seen: set[int] = set()
    current = exc if isinstance(exc, BaseException) else None  # RQ may hand a failure callback anything
    while current is not None and id(current) not in seen:
        if isinstance(current, OSError) and current.errno in STORE_ERRNOS:
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def is_store_error(exc: BaseException) -> bool:
    """Whether ``exc`` says that the disk cannot be written (rather than a missing file, say)."""
    return store_error(exc) is not None


def describe(exc: BaseException) -> str:
    """``the data store is full: No space left on device`` (ENOSPC, EDQUOT), else ``the data store
    cannot be written: Read-only file system``."""
    error = store_error(exc) or exc
    reason = getattr(error, "strerror", None) or error
    if getattr(error, "errno", None) in FULL_ERRNOS:
        return f"the data store is full: {reason}"
    return f"the data store cannot be written: {reason}"


def low_space(store: DataStore) -> str | None:
    """``the data store is full: 5.7 MiB free ...`` when the store's disk has less than its
    ``min_free`` bytes free (``COLLATION_MIN_FREE_BYTES``: a features file is tens of MiB, and a small
    probe still fits on a disk a job cannot write), else None; None on stores without a disk of
    their own (an object store)."""
    free = store.free_bytes()
    if free is None or free >= store.min_free:
        return None
    return (
        f"the data store is full: {free / 2**20:.1f} MiB free, under COLLATION_MIN_FREE_BYTES "
        f"({store.min_free / 2**20:.0f} MiB)"
    )


def probe(store: DataStore) -> str | None:
    """Writes (atomically) and removes a small object in the data store; returns None when that
    worked and the disk has room (``low_space``), else the message of the problem."""
    try:
        store.probe()
    except OSError as exc:
        return describe(exc)
    return low_space(store)


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

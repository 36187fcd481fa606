"""Do the API and the workers share one data store? A marker in the store, its copy in Redis.

An API and workers given different stores (each machine its own ``COLLATION_DATA_DIR``, no shared
disk, no ``COLLATION_STORE_URL``) would otherwise loop forever: every job finds no collation in its
own store, returns as if the collation had been deleted, and the API's sweep enqueues it again.

- Every store holds a random identity, written once (``DataStore.identity``).
- The API publishes its store's identity in Redis at every sweep (``publish``).
- A worker registers its own at start (``register``) and logs an error when it differs.
- A job that finds no collation compares the two (``mismatch``): when they differ it records the
  reason for that collation in Redis (``report``) and fails, and the API's next sweep ends the
  collation as failed with that reason (``reported``), instead of looping.
- ``GET /readyz`` lists the live workers whose store differs from the API's (``strangers``).

Redis may be down: every function here then does nothing, and says nothing.
"""

from __future__ import annotations

import contextlib
import logging

from redis import Redis
from redis.exceptions import RedisError

from collation.store.datastore import DataStore
from collation.store.redis_keys import RedisKeys

log = logging.getLogger("collation.store")

REPORT_TTL = 7 * 24 * 3600
"""Seconds Redis keeps the reason a collation could not progress (until a sweep reads it)."""


def _text(raw: bytes | str | None) -> str | None:
    return raw.decode() if isinstance(raw, bytes) else raw


def publish(store: DataStore, connection: Redis | None) -> None:
    """Makes the API's store the one every worker must use."""
    if connection is not None:
        with contextlib.suppress(RedisError):
            connection.set(RedisKeys.store_identity(), store.identity())


def advice(store: DataStore) -> str:
    return (
        f"this worker's data store ({store.description}) is not the API's: give the API and every worker the same "
        "COLLATION_STORE_URL (an object store), or a COLLATION_DATA_DIR on a disk they share"
    )


def mismatch(store: DataStore, connection: Redis | None) -> str | None:
    """Why this process's store is not the API's (``advice``), or None when it is (or nobody knows)."""
    if connection is None:
        return None
    try:
        published = _text(connection.get(RedisKeys.store_identity()))
    except RedisError:
        return None
    if published is None or published == store.identity():
        return None
    return advice(store)


def register(store: DataStore, connection: Redis | None, worker: str) -> None:
    """Records the store identity of worker ``worker``; logs an error when it is not the API's."""
    if connection is None:
        return
    with contextlib.suppress(RedisError):
        connection.hset(RedisKeys.worker_stores(), worker, store.identity())
    problem = mismatch(store, connection)
    if problem is not None:
        log.error("Worker %s: %s; its jobs will fail", worker, problem)


def report(connection: Redis | None, cid: str, message: str) -> None:
    """Records why collation ``cid`` cannot progress, for the API's sweep to end it with."""
    if connection is not None:
        with contextlib.suppress(RedisError):
            connection.set(RedisKeys.stuck(cid), message, ex=REPORT_TTL)


def reported(connection: Redis | None, cid: str) -> str | None:
    """The reason recorded by ``report``, once (it is deleted as it is read)."""
    if connection is None:
        return None
    try:
        return _text(connection.getdel(RedisKeys.stuck(cid)))
    except RedisError:
        return None


def strangers(store: DataStore, connection: Redis, live: set[str]) -> list[str]:
    """The live workers (names in ``live``) whose store is not ``store``; forgets dead workers."""
    identity = store.identity()
    out = []
    for raw_name, raw_identity in connection.hgetall(RedisKeys.worker_stores()).items():
        name = _text(raw_name) or ""
        if name not in live:
            connection.hdel(RedisKeys.worker_stores(), name)
        elif _text(raw_identity) != identity:
            out.append(name)
    return sorted(out)

"""What one client may have running at once: a per-client limit on unfinished collations and on the
regions they list, so that one token (or, without tokens, one address) cannot take every worker.

A client is the SHA-256 of its bearer token, or ``addr:<address>`` when it sends none (behind a reverse
proxy every client has the proxy's address: the proxy should rate-limit per client). Its unfinished
collations are a Redis hash (``RedisKeys.client``: id -> regions listed). ``admit`` runs before a
collation is stored: finished, failed and deleted ones are dropped from the hash first (each checked in
the store), then a new collation over ``COLLATION_CLIENT_MAX_ACTIVE`` collations or
``COLLATION_CLIENT_MAX_REGIONS`` regions is refused with a 429 and ``Retry-After``. The same request
made again is the same collation, always admitted.

Fair scheduling: a collation admitted while its client had no other running is *light*
(``RedisKeys.light``), and the scheduler puts its jobs at the front of the queues: a client's single
small collation runs next, not behind another client's flood.
"""

from __future__ import annotations

from redis import Redis

from collation.service.problems import Busy
from collation.store.datastore import CollationNotFound, DataStore
from collation.store.redis_keys import RedisKeys

RETRY_AFTER = 30
"""Seconds a client over its limit is told to wait (``Retry-After``)."""
LIGHT_TTL = 7 * 86400
"""Seconds a collation stays light (longer than any collation runs)."""


def client_of(owner: str | None, address: str | None) -> str:
    """The client a request counts against: its token's hash, else its address."""
    return owner if owner else f"addr:{address or 'unknown'}"


def running(store: DataStore, connection: Redis, client: str) -> dict[str, int]:
    """``{collation id: regions listed}`` of the client's unfinished collations, the others dropped."""
    key = RedisKeys.client(client)
    found = {raw.decode() if isinstance(raw, bytes) else raw: int(n) for raw, n in connection.hgetall(key).items()}
    for cid in list(found):
        try:
            done = store.load_record(cid).terminal
        except CollationNotFound:
            done = True
        if done:
            connection.hdel(key, cid)
            del found[cid]
    return found


def admit(
    store: DataStore, connection: Redis, client: str, cid: str, regions: int, max_active: int, max_regions: int
) -> None:
    """Counts collation ``cid`` (listing ``regions`` regions) against ``client``'s limits.

    Raises:
        Busy: a 429 naming the limit, with ``Retry-After``: the client has ``max_active`` unfinished
            collations, or they and this one list more than ``max_regions`` regions.
    """
    with connection.lock(f"{RedisKeys.client(client)}:lock", timeout=30, blocking_timeout=10):
        active = running(store, connection, client)
        if cid in active:
            return
        if len(active) >= max_active:
            raise Busy(
                f"{len(active)} collations of this client are running, the most one client may have "
                "(COLLATION_CLIENT_MAX_ACTIVE): wait for one to finish",
                http_status=429,
                retry_after=RETRY_AFTER,
                field="manifests",
            )
        if sum(active.values()) + regions > max_regions:
            raise Busy(
                f"the running collations of this client list {sum(active.values())} regions; with these "
                f"{regions} that is more than the {max_regions} one client may have running "
                "(COLLATION_CLIENT_MAX_REGIONS): wait for one to finish",
                http_status=429,
                retry_after=RETRY_AFTER,
                field="regions",
            )
        connection.hset(RedisKeys.client(client), cid, regions)
        if not active:
            connection.set(RedisKeys.light(cid), 1, ex=LIGHT_TTL)


def release(connection: Redis, client: str, cid: str) -> None:
    """Forgets ``cid`` for ``client`` (its submission failed)."""
    connection.hdel(RedisKeys.client(client), cid)

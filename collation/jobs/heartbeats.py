"""Is a worker alive? Its heartbeat in Redis, for a container's health check (``collate health --worker``).

A worker listens on no port, so probing one tells nothing. RQ keeps each worker's hash in Redis
(``rq:worker:<name>``: ``hostname``, ``pid``, ``last_heartbeat``), which ``CollationWorker`` renews
every ``job_monitoring_interval`` seconds while a job runs and at least every ``worker_ttl - 15``
seconds while idle (RQ's dequeue wakes up that often). A worker is healthy when a worker of this
host has a heartbeat younger than its ``worker_ttl``: one stuck, or whose loop is down because Redis
is, stops renewing it; one killed disappears from Redis when its hash expires.
"""

from __future__ import annotations

import datetime as dt
import socket

import redis
from rq import Worker

from collation.core.settings import Settings

WORKER_TTL_MARGIN = 16
"""Seconds ``CollationWorker`` adds to ``heartbeat_ttl`` for RQ's ``worker_ttl`` (tests check they agree)."""


def worker_ttl(settings: Settings) -> int:
    """RQ's ``worker_ttl`` of a ``CollationWorker`` with these settings (its idle worker wakes every
    ``worker_ttl - 15`` seconds and sends a heartbeat)."""
    return max(3, int(settings.workers.heartbeat_ttl)) + WORKER_TTL_MARGIN


def worker_health(
    settings: Settings,
    *,
    hostname: str | None = None,
    name: str | None = None,
    max_age: float | None = None,
    timeout: float = 4.0,
    now: dt.datetime | None = None,
) -> tuple[bool, str]:
    """(healthy, message): whether a worker of ``hostname`` (default: this machine's) sent a heartbeat
    in the last ``max_age`` seconds (default ``worker_ttl``); ``name`` checks one worker only."""
    if not settings.redis_url:
        return False, "COLLATION_REDIS_URL is not set: a worker needs the service's Redis"
    hostname = hostname or socket.gethostname()
    max_age = float(max_age if max_age is not None else worker_ttl(settings))
    now = now or dt.datetime.now(dt.UTC)
    connection = redis.Redis.from_url(settings.redis_url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        workers = [w for w in Worker.all(connection=connection) if w.hostname == hostname]
    except redis.exceptions.RedisError as exc:
        return False, f"Redis at {settings.redis_url} unreachable: {exc}"
    finally:
        connection.close()
    if name is not None:
        workers = [w for w in workers if w.name == name]
    if not workers:
        which = f"named {name} " if name else ""
        return False, f"no worker {which}registered from host {hostname}"
    ages = {w.name: (now - _aware(w.last_heartbeat)).total_seconds() for w in workers if w.last_heartbeat}
    fresh = {n: age for n, age in ages.items() if age <= max_age}
    if not fresh:
        oldest = ", ".join(f"{n} {age:.0f} s ago" for n, age in sorted(ages.items())) or "none yet"
        return False, f"no heartbeat from host {hostname} in the last {max_age:.0f} s (last: {oldest})"
    best = min(fresh, key=fresh.__getitem__)
    return True, f"worker {best} on {hostname}: heartbeat {fresh[best]:.0f} s ago"


def _aware(moment: dt.datetime) -> dt.datetime:
    """RQ's timestamps as aware UTC datetimes (RQ versions differ in whether they carry the zone)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)

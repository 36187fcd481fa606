"""Readiness: Redis answers, the data store can be written (a write probe) and at least one worker
listens on each of the two queues."""

from __future__ import annotations

from typing import Any

from redis.exceptions import RedisError
from rq import Worker

from ..runtime import Runtime
from ..store import writable


def readiness(runtime: Runtime) -> dict[str, Any]:
    """The checks of ``GET /readyz``.

    Returns:
        ``{"ready": bool, "checks": {"redis": bool, "store": bool, "workers": {queue name: workers},
        "error"?: str, "store_error"?: str}}``.
    """
    checks: dict[str, Any] = {"redis": False, "store": True, "workers": {}}
    store_problem = writable.check(runtime.store, runtime.redis)
    if store_problem is not None:
        checks["store"] = False
        checks["store_error"] = store_problem
    if runtime.redis is not None:
        try:
            runtime.redis.ping()
            checks["redis"] = True
            workers = Worker.all(runtime.redis)
            for name in (runtime.settings.queue_io, runtime.settings.queue_compute):
                checks["workers"][name] = sum(name in w.queue_names() for w in workers)
        except RedisError as exc:
            checks["error"] = str(exc)
    ready = checks["redis"] and checks["store"] and len(checks["workers"]) == 2 and all(checks["workers"].values())
    return {"ready": ready, "checks": checks}

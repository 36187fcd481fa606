"""Readiness: Redis answers, the data store can be written (a write probe), at least one worker
listens on each of the two queues, and every live worker uses the API's data store
(``collation.store.sharing``)."""

from __future__ import annotations

from typing import Any

from redis.exceptions import RedisError
from rq import Worker

from collation.jobs.runtime import Runtime
from collation.store import sharing, writable


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
            for name in (runtime.settings.workers.queue_io, runtime.settings.workers.queue_compute):
                checks["workers"][name] = sum(name in w.queue_names() for w in workers)
            if checks["store"]:
                sharing.publish(runtime.store, runtime.redis)
                others = sharing.strangers(runtime.store, runtime.redis, {w.name for w in workers})
                if others:
                    checks["store"] = False
                    checks["store_error"] = (
                        f"worker(s) {', '.join(others)} use another data store than this API "
                        f"({runtime.store.description}): give them the same COLLATION_STORE_URL, "
                        "or a COLLATION_DATA_DIR on a disk they share"
                    )
        except RedisError as exc:
            checks["error"] = str(exc)
        except OSError as exc:  # the store's identity could not be read
            checks["store"] = False
            checks["store_error"] = writable.describe(exc)
    ready = checks["redis"] and checks["store"] and len(checks["workers"]) == 2 and all(checks["workers"].values())
    return {"ready": ready, "checks": checks}

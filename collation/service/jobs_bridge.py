"""The service's one doorway into ``collation.jobs``: the scheduler of an app, assessments, a worker.

Nothing else under ``collation.service`` or ``collation.viewer`` imports ``collation.jobs``, so a
change of the jobs layer's interface changes this module only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..runtime import Runtime
from ..settings import Settings
from ..store.datastore import DataStore
from .problems import Unavailable

if TYPE_CHECKING:
    from ..jobs.scheduling import Scheduler


def scheduler(runtime: Runtime) -> Scheduler:
    """The scheduler of ``runtime``'s Redis and data store.

    Raises:
        Unavailable: no Redis is configured (a 503 problem).
    """
    from ..jobs.scheduling import Scheduler

    if runtime.redis is None:
        raise Unavailable("no Redis is configured (COLLATION_REDIS_URL)")
    return Scheduler(runtime)


def apply_assessments(store: DataStore, cid: str) -> None:
    """Recomputes the propagated scores of a collation from its stored N_S and its assessments."""
    from ..jobs.results import apply_assessments as recompute

    recompute(store, cid)


def run_worker(settings: Settings, queues: Sequence[str], *, burst: bool = False, name: str | None = None) -> None:
    """Runs a non-forking worker on the ``queues`` (``io``, ``compute``) until stopped (or empty, with ``burst``)."""
    from ..jobs.worker import work

    work(settings, list(queues), burst=burst, name=name)

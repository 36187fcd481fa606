"""The RQ entry points: what the scheduler enqueues (by dotted path), thin wrappers of ``steps``.

RQ calls a job function by name with plain arguments (a collation id and small integers), so each
entry point (``entry_point`` of a step) takes the runtime the worker made current
(``collation.jobs.runtime.activate``) and passes it to the plain function of ``collation.jobs.steps``
that does the work. A collation deleted or
cancelled meanwhile is not a failed job: the entry point returns ``"gone"``, unless the collation
is missing because this worker's data store is not the API's (``collation.store.sharing``): then the
job fails, and the API's next sweep ends the collation with the reason. So does a store that refuses
this worker (its credentials or bucket, ``StoreUnavailable.refused``): no retry would mend that, and
leaving the step for later would loop (issue 31: queued for ever, thousands of log lines).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from collation.core.errors import CollationError
from collation.jobs import steps
from collation.jobs.runtime import Runtime, current
from collation.store import sharing, writable
from collation.store.datastore import CollationNotFound
from collation.store.objects import StoreUnavailable

log = logging.getLogger("collation.jobs")


class StoreNotShared(CollationError):
    """This worker's data store is not the API's (``collation.store.sharing``): its job fails."""


class StoreRefused(CollationError):
    """The data store refuses this worker (credentials, bucket): its job fails, or it does not start."""


def refusal(exc: StoreUnavailable) -> str:
    """The message a collation fails with, and a worker stops with, when the store refused the worker."""
    return (
        f"the data store refused a worker: {exc.strerror} (give every worker the credentials and "
        "COLLATION_STORE_URL of the API's store)"
    )


def entry_point(step: Callable[..., str]) -> Callable[..., str]:
    """The RQ entry point of a step of ``collation.jobs.steps``: called by name with the collation id and
    small integers, it runs ``step`` with the runtime the worker made current.

    ``steps.Gone`` (and ``CollationNotFound``: the collation was deleted while the step wrote into it)
    become a normal return: a cancelled collation is not a failed job. A data store that cannot be
    written is remembered (``store.writable``) before the job fails (and is retried); one that refuses
    this worker is reported for the collation (``StoreRefused``).
    """

    def gone_or_foreign(runtime: Runtime, cid: str) -> str:
        problem = None if runtime.store.exists(cid) else sharing.mismatch(runtime.store, runtime.redis)
        if problem is not None:  # not deleted: this worker looks into another store than the API's
            sharing.report(runtime.redis, cid, problem)
            raise StoreNotShared(problem) from None
        log.info("Collation %s: gone, %s stops", cid, step.__name__)
        return "gone"

    @functools.wraps(step)
    def run(cid: str, *args: Any) -> str:
        runtime = current()
        try:
            try:
                return step(runtime, cid, *args)
            except (steps.Gone, CollationNotFound):
                return gone_or_foreign(runtime, cid)  # asks the store, which may fail too
        except OSError as exc:
            if isinstance(exc, StoreUnavailable) and exc.refused:  # the API's next sweep fails the collation
                sharing.report(runtime.redis, cid, refusal(exc))
                log.error("Collation %s: %s: %s", cid, step.__name__, refusal(exc))
                raise StoreRefused(refusal(exc)) from None
            if writable.is_store_error(exc):  # every status says so until a probe finds the disk writable
                writable.remember(runtime.redis, writable.describe(exc))
                log.error("Collation %s: %s: %s", cid, step.__name__, writable.describe(exc))
            raise

    return run


prepare_manuscript = entry_point(steps.prepare_manuscript)
"""Step ``prepare-<m>`` (io)."""
compute_features = entry_point(steps.compute_features)
"""Step ``features-<m>`` (compute)."""
plan = entry_point(steps.plan)
"""Step ``plan`` (io)."""
score_chunk = entry_point(steps.score_chunk)
"""Step ``chunk-<a>-<b>-<k>`` (compute)."""
finalize = entry_point(steps.finalize)
"""Step ``finalize`` (io)."""


def send_callback(cid: str, url: str, payload: dict) -> str:
    """Job ``callback`` (io): ``steps.send_callback``, retried with a back-off by RQ."""
    return steps.send_callback(current(), cid, url, payload)


__all__ = ["compute_features", "finalize", "plan", "prepare_manuscript", "score_chunk", "send_callback"]

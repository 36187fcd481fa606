"""The RQ entry points: what the scheduler enqueues (by dotted path), thin wrappers of ``steps``.

RQ calls a job function by name with plain arguments (a collation id and small integers), so each
entry point takes the runtime the worker made current (``collation.jobs.runtime.activate``) and passes
it to the plain function of ``collation.jobs.steps`` that does the work. A collation deleted or
cancelled meanwhile is not a failed job: the entry point returns ``"gone"``, unless the collation
is missing because this worker's data store is not the API's (``collation.store.sharing``): then the
job fails, and the API's next sweep ends the collation with the reason.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from rq import get_current_job

from collation.core.errors import CollationError
from collation.jobs import steps
from collation.jobs.runtime import current
from collation.store import sharing, writable
from collation.store.datastore import CollationNotFound

log = logging.getLogger("collation.jobs")


class StoreNotShared(CollationError):
    """This worker's data store is not the API's (``collation.store.sharing``): its job fails."""


def _quietly_gone(func: Callable[..., str]) -> Callable[..., str]:
    """Turns ``steps.Gone`` (and ``CollationNotFound``: the collation was deleted while the step wrote
    into it) into a normal return: a cancelled collation is not a failed job. A data store that
    cannot be written is remembered (``store.writable``) before the job fails (and is retried)."""

    def gone_or_foreign(cid: str) -> str:
        runtime = current()
        problem = None if runtime.store.exists(cid) else sharing.mismatch(runtime.store, runtime.redis)
        if problem is not None:  # not deleted: this worker looks into another store than the API's
            sharing.report(runtime.redis, cid, problem)
            raise StoreNotShared(problem) from None
        log.info("Collation %s: gone, %s stops", cid, func.__name__)
        return "gone"

    @functools.wraps(func)
    def wrapper(cid: str, *args: Any) -> str:
        try:
            try:
                return func(cid, *args)
            except (steps.Gone, CollationNotFound):
                return gone_or_foreign(cid)  # asks the store, which may fail too
        except OSError as exc:
            if writable.is_store_error(exc):  # every status says so until a probe finds the disk writable
                writable.remember(current().redis, writable.describe(exc))
                log.error("Collation %s: %s: %s", cid, func.__name__, writable.describe(exc))
            raise

    return wrapper


@_quietly_gone
def prepare_manuscript(cid: str, m: int) -> str:
    """Step ``prepare-<m>`` (io): ``steps.prepare_manuscript``."""
    return steps.prepare_manuscript(current(), cid, m)


@_quietly_gone
def extract_features(cid: str, m: int) -> str:
    """Step ``features-<m>`` (compute): ``steps.extract_features``."""
    return steps.extract_features(current(), cid, m)


@_quietly_gone
def plan(cid: str) -> str:
    """Step ``plan`` (io): ``steps.plan``."""
    return steps.plan(current(), cid)


@_quietly_gone
def score_chunk(cid: str, a: int, b: int, k: int) -> str:
    """Step ``chunk-<a>-<b>-<k>`` (compute): ``steps.score_chunk``."""
    return steps.score_chunk(current(), cid, a, b, k)


@_quietly_gone
def finalize(cid: str) -> str:
    """Step ``finalize`` (io): ``steps.finalize``, re-planning after this job when chunks are missing."""
    return steps.finalize(current(), cid, get_current_job())


def send_callback(cid: str, url: str, payload: dict) -> str:
    """Job ``callback`` (io): ``steps.send_callback``, retried with a back-off by RQ."""
    return steps.send_callback(current(), cid, url, payload)


__all__ = ["extract_features", "finalize", "plan", "prepare_manuscript", "score_chunk", "send_callback"]

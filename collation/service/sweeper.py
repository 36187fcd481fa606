"""The API's recovery sweep: at start, then every ``settings.workers.sweep_interval`` seconds, make every
unfinished collation in the store progress again (re-enqueue what Redis lost, hand the jobs of dead
workers back to their queues).

A ``Sweeper`` belongs to one app (``ServiceState.sweeper``); ``collate serve`` starts and stops it.

The sweep also removes, at most once every ``EXPIRE_EVERY`` seconds (the first sweep included), the drafts
and detections for review not changed for ``settings.store.draft_days`` days (``collation.store.retention.
expire_drafts``).

Each tick first probes the data store with a small write (``store.writable.check``): while the store
cannot be written (a full disk) nothing can progress, so the sweep is skipped and the wait before the
next one doubles, up to ``MAX_BACKOFF`` intervals (and never more than ``MAX_BACKOFF_SECONDS``), with
one warning line each time; a sweep that fails (Redis down) backs off the same way. The first
successful sweep goes back to the interval.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from redis.exceptions import RedisError

from collation.jobs.runtime import Runtime
from collation.jobs.scheduling import Scheduler
from collation.store import writable
from collation.store.retention import expire_drafts

log = logging.getLogger("collation.service.sweeper")

EXPECTED_FAILURES = (RedisError, OSError)
"""Redis unreachable or restarting, the data store briefly unreadable: tried again at the next tick."""
MAX_BACKOFF = 16
"""The longest wait between two sweeps that fail, in intervals."""
MAX_BACKOFF_SECONDS = 300.0
"""... and in seconds."""
EXPIRE_EVERY = 3600.0
"""Seconds between two expiries of old drafts (each reads every draft: not at every sweep)."""


class Sweeper:
    """Runs ``recover`` in a thread: once at ``start``, then every ``interval`` seconds until ``stop``.

    Args:
        recover: one sweep; returns how many collations it advanced.
        interval: seconds between sweeps; 0 sweeps only once.
        enabled: False for an app without Redis (``start`` does nothing).
        expire: removes old drafts and detections; returns how many. Run by a sweep when
            ``EXPIRE_EVERY`` seconds of ``clock`` have passed since the last time.
    """

    def __init__(
        self,
        recover: Callable[[], int],
        interval: float,
        *,
        enabled: bool = True,
        probe: Callable[[], str | None] = lambda: None,
        expire: Callable[[], int] = lambda: 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.recover = recover
        self.interval = float(interval)
        self.enabled = enabled
        self.probe = probe
        self.expire = expire
        self.clock = clock
        self._expire_due: float | None = None
        """``clock`` time of the next expiry; None: at the next sweep."""
        self.delay = self.interval
        """Seconds until the next sweep: the interval, or longer after failures."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def for_runtime(cls, runtime: Runtime) -> Sweeper:
        """The sweeper of ``runtime``'s scheduler, every ``runtime.settings.workers.sweep_interval`` seconds,
        probing its data store first."""
        return cls(
            lambda: Scheduler(runtime).recover(),  # enabled only with a Redis
            runtime.settings.workers.sweep_interval,
            enabled=runtime.redis is not None,
            probe=lambda: writable.check(runtime.store, runtime.redis),
            expire=lambda: len(expire_drafts(runtime.store, runtime.settings.store.draft_days)),
        )

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def sweep(self) -> int:
        """One sweep; returns how many collations it advanced (0 when it failed).

        Expected failures (``EXPECTED_FAILURES``) are logged as warnings; anything else is a bug and
        is logged with its traceback. Neither stops the sweeper: the next tick tries again.
        """
        problem = self.probe()
        if problem is not None:
            self._back_off()
            log.warning("Sweep skipped: %s; next try in %g s", problem, self.delay)
            return 0
        try:
            count = self.recover()
            self._expire_if_due()
        except EXPECTED_FAILURES as exc:
            self._back_off()
            log.warning("Sweep failed, trying again in %g s: %s", self.delay, exc)
            return 0
        except Exception:
            log.exception("Sweep failed unexpectedly")
            return 0
        self.delay = self.interval
        if count:
            log.info("Sweep: %d unfinished collation(s) advanced", count)
        return count

    def _expire_if_due(self) -> None:
        if self._expire_due is not None and self.clock() < self._expire_due:
            return
        removed = self.expire()
        self._expire_due = self.clock() + EXPIRE_EVERY
        if removed:
            log.info("Sweep: %d draft(s) and detection(s) for review removed, unchanged for too long", removed)

    def _back_off(self) -> None:
        cap = min(self.interval * MAX_BACKOFF, MAX_BACKOFF_SECONDS)
        self.delay = max(self.interval, min(self.delay * 2, cap))

    def start(self) -> None:
        """Starts the sweeping thread (a no-op when disabled or already running)."""
        if not self.enabled or self.running:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="collation-sweeper", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stops the thread after its current sweep (waiting at most ``timeout`` seconds)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout)
            self._thread = None

    def _loop(self) -> None:
        while True:
            self.sweep()
            if self.interval <= 0 or self._stop.wait(self.delay):
                return

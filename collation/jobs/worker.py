"""An RQ worker that does not fork, keeps its models between jobs and is found dead quickly.

RQ's default worker forks a process per job: the backbone would be reloaded for every job, and CUDA
does not survive a fork. ``CollationWorker`` is a ``SimpleWorker`` (jobs run in the worker process;
``context`` caches the backbone and features per process) with two additions:

- a heartbeat thread keeps the running job's entry in RQ's StartedJobRegistry alive for
  ``heartbeat_ttl`` seconds at a time (a plain SimpleWorker registers it for the job's whole timeout
  and never renews it), so the job of a worker killed with SIGKILL is abandoned after at most
  ``heartbeat_ttl`` seconds instead of an hour;
- registry maintenance (which hands abandoned jobs back to their queue, using their retries) runs
  every ``heartbeat_ttl`` seconds, and an idle worker wakes up that often to do it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

import redis
from rq import Queue, SimpleWorker
from rq.executions import Execution
from rq.job import Job
from rq.worker import WorkerStatus

from . import context

log = logging.getLogger("collation.jobs.worker")


class CollationWorker(SimpleWorker):
    """SimpleWorker with short, renewed job heartbeats (see the module docstring)."""

    def __init__(self, queues: Any, *args: Any, heartbeat_ttl: int = 20, **kwargs: Any) -> None:
        self.heartbeat_ttl = max(3, int(heartbeat_ttl))
        kwargs.setdefault("worker_ttl", self.heartbeat_ttl + 16)  # an idle worker wakes every ttl + 1 s
        kwargs.setdefault("maintenance_interval", self.heartbeat_ttl)
        kwargs.setdefault("job_monitoring_interval", max(1, self.heartbeat_ttl // 3))
        super().__init__(queues, *args, **kwargs)

    def get_heartbeat_ttl(self, job: Job, working_time: float = 0.0) -> int:
        return self.heartbeat_ttl

    def execute_job(self, job: Job, queue: Queue) -> None:
        execution = self.prepare_execution(job)
        stop = threading.Event()
        beat = threading.Thread(target=self._beat, args=(job, execution, stop), daemon=True,
                                name=f"heartbeat-{job.id}")
        beat.start()
        try:
            self.perform_job(job, queue, execution)
        finally:
            stop.set()
            beat.join()
        self.set_state(WorkerStatus.IDLE)

    def _beat(self, job: Job, execution: Execution, stop: threading.Event) -> None:
        while not stop.wait(self.job_monitoring_interval):
            try:
                self.maintain_heartbeats(job, execution)
            except redis.exceptions.RedisError as exc:  # Redis restarting: the job itself carries on
                log.warning("Worker %s: heartbeat of job %s failed: %s", self.name, job.id, exc)


def queue_names(settings: dict[str, Any], which: Sequence[str] = ("io", "compute")) -> list[str]:
    """RQ queue names for ``which`` ("io", "compute")."""
    names = {"io": settings["QUEUE_IO"], "compute": settings["QUEUE_COMPUTE"]}
    unknown = [w for w in which if w not in names]
    if unknown:
        raise ValueError(f"unknown queues {unknown}: use io, compute or both")
    return [names[w] for w in which]


def work(settings: dict[str, Any], which: Sequence[str] = ("io", "compute"), *, burst: bool = False,
         name: str | None = None, logging_level: str = "INFO") -> None:
    """Runs a worker on the collation queues until stopped (or, with ``burst``, until they are empty).

    A worker whose loop ends on a Redis error (a Redis restart) is started again, unless ``burst``.
    """
    context.configure(settings)
    connection = context.connection(settings["REDIS_URL"])
    names = queue_names(settings, which)
    while True:
        worker = CollationWorker(names, connection=connection, name=name,
                                 heartbeat_ttl=int(settings["HEARTBEAT_TTL"]))
        name = None  # a restarted loop registers under a new name: the old one may still be in Redis
        try:
            worker.work(burst=burst, logging_level=logging_level)
        except redis.exceptions.ConnectionError as exc:
            log.error("Worker: Redis unreachable (%s)", exc)
        if burst or worker._stop_requested:
            return
        log.warning("Worker %s: restarting its loop in 2 s", worker.name)
        time.sleep(2)

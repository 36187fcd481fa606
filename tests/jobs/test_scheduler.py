"""The scheduler and the worker on a real Redis, without running jobs: re-plans go through the
scheduler's job set, failures reach the store through the runtime, a stop request is tracked."""

from __future__ import annotations

import signal
from types import SimpleNamespace
from typing import Any

import pytest
from rq.exceptions import StopRequested
from rq.job import Job, JobStatus
from service_helpers import runtime_for

from collation.core.options import CollationOptions
from collation.jobs.runtime import activate
from collation.jobs.scheduling import Scheduler, on_job_failure
from collation.jobs.worker import CollationWorker, queue_names
from collation.store.records import CollationRequest, collation_id, new_record
from collation.store.redis_keys import RedisKeys
from collation.store.stepnames import Step


def submitted(scheduler: Scheduler) -> str:
    settings = scheduler.settings
    options = CollationOptions.parse({}, backbone=settings.backbone)
    manifests = ("http://127.0.0.1:9/a.json", "http://127.0.0.1:9/b.json")
    cid = collation_id(manifests, {}, options)
    record, created = scheduler.submit(new_record(cid, CollationRequest(manifests), options, settings))
    assert created and record.status == "queued"
    return cid


def job_ids(scheduler: Scheduler, cid: str) -> set[str]:
    return {raw.decode() for raw in scheduler.connection.smembers(RedisKeys.jobs(cid))}


def test_submit_enqueues_the_first_steps_once(settings: dict[str, Any]) -> None:
    scheduler = Scheduler(runtime_for(settings))
    cid = submitted(scheduler)
    steps = [Step.prepare(0), Step.features(0), Step.prepare(1), Step.features(1), Step.plan()]
    assert job_ids(scheduler, cid) == {RedisKeys.job_id(cid, s.name) for s in steps}
    assert scheduler.advance(cid) == "preparing"  # again: the live jobs are reused
    assert scheduler.runtime.queue("io").count == 2
    plan = Job.fetch(RedisKeys.job_id(cid, "plan"), connection=scheduler.connection)
    assert plan.get_status() == JobStatus.DEFERRED
    assert plan.func_name == "collation.jobs.tasks.plan" and plan.args == (cid,)
    assert set(plan.dependency_ids) == {RedisKeys.job_id(cid, s.name) for s in steps[:-1]}


def test_a_replan_is_a_step_of_the_collation_that_cancel_deletes(settings: dict[str, Any]) -> None:
    scheduler = Scheduler(runtime_for(settings))
    cid = submitted(scheduler)
    running = Job.fetch(RedisKeys.job_id(cid, "prepare-0"), connection=scheduler.connection)
    assert scheduler.replan_after(cid, running) == "replanning"
    plan = Job.fetch(RedisKeys.job_id(cid, "plan"), connection=scheduler.connection)
    assert plan.get_status() == JobStatus.DEFERRED and plan.dependency_ids == [running.id]
    assert plan.id in job_ids(scheduler, cid)
    assert scheduler.cancel(cid)
    assert not Job.exists(plan.id, connection=scheduler.connection)
    assert not scheduler.connection.keys(f"rq:job:{cid}-*")
    assert scheduler.replan_after(cid, None) == "gone"  # inline (no job): plans at once


def test_failures_reach_the_store_through_the_runtime(settings: dict[str, Any]) -> None:
    runtime = runtime_for(settings)
    scheduler = Scheduler(runtime)
    cid = submitted(scheduler)

    def failed(step: Step, retry: bool = False) -> Any:
        return SimpleNamespace(should_retry=retry, meta={"collation": cid, "step": step.name})

    with activate(runtime):
        on_job_failure(failed(Step.prepare(1), retry=True), scheduler.connection, RuntimeError, "once", None)
        assert runtime.store.load_failures(cid) == {}
        on_job_failure(failed(Step.prepare(1)), scheduler.connection, RuntimeError, "404", None)
        assert runtime.store.load_record(cid).status == "queued"  # a manuscript can be left out
        on_job_failure(failed(Step.chunk(0, 1, 0)), scheduler.connection, RuntimeError, "boom", None)
    assert runtime.store.load_failures(cid) == {
        Step.prepare(1): "RuntimeError: 404",
        Step.chunk(0, 1, 0): "RuntimeError: boom",
    }
    record = runtime.store.load_record(cid)
    assert record.status == "failed" and record.errors[-1]["message"] == ("step chunk-0-1-0 failed: RuntimeError: boom")
    with pytest.raises(RuntimeError, match="no collation runtime"):
        on_job_failure(failed(Step.finalize()), scheduler.connection, RuntimeError, "x", None)


def test_the_worker_tracks_a_stop_request(settings: dict[str, Any]) -> None:
    runtime = runtime_for(settings)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    worker = CollationWorker(queue_names(runtime.settings), connection=runtime.connection(), runtime=runtime)
    assert worker.heartbeat_ttl == settings.workers.heartbeat_ttl and not worker.stop_requested
    try:
        with pytest.raises(StopRequested):  # idle: RQ stops the loop at once
            worker.request_stop(signal.SIGTERM, None)
    finally:
        for s, handler in handlers.items():
            signal.signal(s, handler)
        runtime.close()
    assert worker.stop_requested
    with pytest.raises(ValueError, match="unknown queues"):
        queue_names(runtime.settings, ["gpu"])

"""The store layer without Redis: step names, failures keyed by step, paths that read without
writing, and the status transitions of a record."""

from __future__ import annotations

from pathlib import Path

import pytest

from collation.core.options import CollationOptions
from collation.core.settings import Settings
from collation.core.vocabulary import CollationStatus
from collation.store.datastore import DataStore
from collation.store.folder import FolderStore
from collation.store.records import CollationRequest, new_record
from collation.store.redis_keys import RedisKeys
from collation.store.stepnames import Step, StepKind
from collation.store.transitions import AlreadyEnded, cancel, fail, finish, reopen, set_progress

CID = "0123456789abcdef"


@pytest.fixture
def store(tmp_path: Path) -> DataStore:
    store = FolderStore(tmp_path)
    store.create_collation(new_record(CID, CollationRequest(("a", "b")), CollationOptions(), Settings()))
    return store


@pytest.mark.parametrize(
    "step", [Step.prepare(3), Step.features(0), Step.plan(), Step.chunk(0, 12, 7), Step.finalize()]
)
def test_step_names_read_back(step: Step) -> None:
    assert Step.parse(step.name) == step and str(step) == step.name
    assert RedisKeys.job_id(CID, step.name) == f"{CID}-{step.name}"


def test_step_kinds_know_their_queue_and_scope() -> None:
    assert [k.queue for k in StepKind] == ["io", "compute", "compute", "compute", "io"]  # plan: the cascade
    assert [k for k in StepKind if k.per_manuscript] == [StepKind.PREPARE, StepKind.FEATURES]
    for bad in ("prepare-", "replan-3", "chunk-a-b", ""):
        with pytest.raises(ValueError):
            Step.parse(bad)


def test_failures_are_keyed_by_step(store: DataStore) -> None:
    store.record_failure(CID, Step.chunk(0, 1, 2), "boom")
    store.record_failure(CID, Step.prepare(1), "404")
    assert store.load_failures(CID) == {Step.chunk(0, 1, 2): "boom", Step.prepare(1): "404"}
    assert (store.collation_dir(CID) / "failures" / "chunk-0-1-2.json").is_file()  # the same files as before
    store.clear_failures(CID)
    assert store.load_failures(CID) == {}


def test_reading_paths_creates_nothing(tmp_path: Path) -> None:
    store = FolderStore(tmp_path / "data")
    assert not store.has_features("k") and not store.has_scores("k") and not store.has_chunk("k", 6, 0)
    assert store.local_file(store.features_key("k")) is None and store.load_pairs("k") is None
    assert not (tmp_path / "data").exists()


def test_transitions_of_a_record(store: DataStore) -> None:
    set_progress(store, CID, "preparing", 1, 2)
    record = store.load_record(CID)
    assert record.status == "running" and record.progress.to_json() == {"stage": "preparing", "done": 1, "total": 2}
    assert fail(store, CID, "fewer than two").status == "failed"
    set_progress(store, CID, "scoring", 5, 6)  # late progress of a job still running: dropped
    assert store.load_record(CID).progress.stage == "preparing"
    assert store.load_record(CID).terminal
    with pytest.raises(AlreadyEnded):
        finish(store, CID, [0, 1])

    store.record_failure(CID, Step.finalize(), "x")
    record = reopen(store, CID)
    assert record.status == CollationStatus.QUEUED and record.errors == [] and record.ended is None
    assert store.load_failures(CID) == {}
    record = finish(store, CID, [0, 1])
    assert (record.status, record.usable, record.progress.stage) == ("finished", [0, 1], "finished")
    assert reopen(store, CID).status == "finished"  # only a failed collation is tried again
    assert cancel(store, CID) and store.load_record(CID).status == "cancelled"
    store.delete_collation(CID)
    assert not cancel(store, CID) and fail(store, CID, "gone") is None

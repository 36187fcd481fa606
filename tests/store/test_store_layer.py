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
def folder_store(tmp_path: Path) -> DataStore:
    folder_store = FolderStore(tmp_path)
    folder_store.create_collation(new_record(CID, CollationRequest(("a", "b")), CollationOptions(), Settings()))
    return folder_store


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


def test_failures_are_keyed_by_step(folder_store: DataStore) -> None:
    folder_store.record_failure(CID, Step.chunk(0, 1, 2), "boom")
    folder_store.record_failure(CID, Step.prepare(1), "404")
    assert folder_store.load_failures(CID) == {Step.chunk(0, 1, 2): "boom", Step.prepare(1): "404"}
    assert (folder_store.collation_dir(CID) / "failures" / "chunk-0-1-2.json").is_file()  # the same files as before
    folder_store.clear_failures(CID)
    assert folder_store.load_failures(CID) == {}


def test_reading_paths_creates_nothing(tmp_path: Path) -> None:
    folder_store = FolderStore(tmp_path / "data")
    assert (
        not folder_store.has_features("k")
        and not folder_store.has_scores("k")
        and not folder_store.has_chunk("k", 6, 0)
    )
    assert folder_store.local_file(folder_store.features_key("k")) is None and folder_store.load_pairs("k") is None
    assert not (tmp_path / "data").exists()


def test_transitions_of_a_record(folder_store: DataStore) -> None:
    set_progress(folder_store, CID, "preparing", 1, 2)
    record = folder_store.load_record(CID)
    assert record.status == "running" and record.progress.to_json() == {"stage": "preparing", "done": 1, "total": 2}
    assert fail(folder_store, CID, "fewer than two").status == "failed"
    set_progress(folder_store, CID, "scoring", 5, 6)  # late progress of a job still running: dropped
    assert folder_store.load_record(CID).progress.stage == "preparing"
    assert folder_store.load_record(CID).terminal
    with pytest.raises(AlreadyEnded):
        finish(folder_store, CID, [0, 1])

    folder_store.record_failure(CID, Step.finalize(), "x")
    record = reopen(folder_store, CID)
    assert record.status == CollationStatus.QUEUED and record.errors == [] and record.ended is None
    assert folder_store.load_failures(CID) == {}
    record = finish(folder_store, CID, [0, 1])
    assert (record.status, record.usable, record.progress.stage) == ("finished", [0, 1], "finished")
    assert reopen(folder_store, CID).status == "finished"  # only a failed collation is tried again
    assert cancel(folder_store, CID) and folder_store.load_record(CID).status == "cancelled"
    folder_store.delete_collation(CID)
    assert not cancel(folder_store, CID) and fail(folder_store, CID, "gone") is None

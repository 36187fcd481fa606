"""The data store's contract, on both implementations: the folder and a real S3-compatible server
(SeaweedFS on a loopback port). The same test, the same assertions, each store."""

from __future__ import annotations

import errno
import itertools
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from builders import record
from PIL import Image

from collation.core.settings import Settings
from collation.store.datastore import CollationNotFound, DataStore
from collation.store.filecache import FileCache
from collation.store.folder import FolderStore
from collation.store.location import open_store
from collation.store.objects import ObjectStore, StoreUnavailable, parse_store_url
from collation.store.stepnames import Step
from collation.store.stored import Assessment, PairResults, PreparedManuscript, StoredRegion

CID = "0123456789abcdef"


@pytest.fixture(params=["folder", "s3"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> DataStore:
    if request.param == "folder":
        return FolderStore(tmp_path / "data")
    server = request.getfixturevalue("s3_server")
    url = request.getfixturevalue("s3_url")
    settings = Settings.from_env({}, data_dir=tmp_path / "cache", store_url=url, store_endpoint=server.endpoint)
    return open_store(settings)


def test_a_collation_is_created_once_and_never_exists_without_its_record(
    any_store: DataStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not any_store.exists(CID) and any_store.list_collations() == []
    with pytest.raises(CollationNotFound):
        any_store.load_record(CID)
    looked, calls, has = threading.Barrier(4), itertools.count(), any_store.has

    def look_together(key: str) -> bool:  # the four creators all look before any creates: the worst order
        found = has(key)
        if next(calls) < 4:
            looked.wait(timeout=10)
        return found

    monkeypatch.setattr(any_store, "has", look_together)
    results = []
    threads = [
        threading.Thread(
            target=lambda: results.append(any_store.create_collation(record(status="queued", chunk_pairs=0)))
        )
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    monkeypatch.undo()
    assert sorted(results) == [False, False, False, True]  # concurrent identical requests: one creates it
    assert (
        any_store.exists(CID) and any_store.list_collations() == [CID] and any_store.load_record(CID).status == "queued"
    )


def test_concurrent_updates_lose_nothing(any_store: DataStore) -> None:
    any_store.create_collation(record(status="queued", chunk_pairs=0))

    def bump_once(stored: Any) -> None:
        stored.chunk_pairs += 1

    def bump() -> None:
        for _ in range(8):
            any_store.update_record(CID, bump_once)

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert any_store.load_record(CID).chunk_pairs == 32


def test_a_deleted_collation_stays_deleted(any_store: DataStore) -> None:
    any_store.create_collation(record(status="queued", chunk_pairs=0))
    any_store.save_manuscript(CID, PreparedManuscript(0, "https://x/0.json"), {"id": "m"})
    any_store.save_results(CID, PairResults(0, 1, np.eye(2), np.eye(2), np.eye(2)))
    any_store.record_failure(CID, Step.prepare(1), "404")
    assert any_store.delete_collation(CID) is True
    assert not any_store.exists(CID) and any_store.list_collations() == [] and any_store.load_manuscript(CID, 0) is None
    assert any_store.delete_collation(CID) is False
    with pytest.raises(CollationNotFound):
        any_store.write_in_collation(CID, "results/0-1.npz", b"late")  # a slow writer does not bring it back
    with pytest.raises(CollationNotFound):
        any_store.update_record(CID, lambda r: None)
    any_store.record_failure(CID, Step.prepare(0), "late")  # quietly nothing
    assert (
        any_store.create_collation(record(status="failed", chunk_pairs=0)) is True
    )  # the same inputs later: a fresh one
    assert any_store.load_failures(CID) == {} and any_store.load_results(CID, 0, 1) is None


def test_collation_objects_round_trip(any_store: DataStore) -> None:
    any_store.create_collation(record(status="queued", chunk_pairs=0))
    doc = PreparedManuscript(1, "https://x/1.json", regions=(StoredRegion(3, "c", 0, (1, 2, 3, 4), "d", blank=True),))
    any_store.save_manuscript(CID, doc, {"id": "manifest"})
    assert any_store.load_manuscript(CID, 1) == doc and any_store.load_manifest(CID, 1) == {"id": "manifest"}
    assert any_store.has_manuscript(CID, 1) and not any_store.has_manuscript(CID, 0)
    s = np.arange(6.0).reshape(2, 3)
    any_store.save_results(CID, PairResults(0, 1, s, s, s, seeds=np.array([[0, 2]])))
    got = any_store.load_results(CID, 0, 1)
    assert got is not None and got.S.tolist() == [[0, 1, 2], [3, 4, 5]] and got.seeds.tolist() == [[0, 2]]
    back = any_store.load_results(CID, 1, 0)  # read the other way round: transposed, and stored once
    assert back.S.tolist() == s.T.tolist() and back.seeds.tolist() == [[2, 0]] and back.reversed
    any_store.record_failure(CID, Step.chunk(0, 1, 2), "boom")
    assert any_store.load_failures(CID) == {Step.chunk(0, 1, 2): "boom"}
    any_store.clear_failures(CID)
    assert any_store.load_failures(CID) == {}
    verdict = Assessment("1", (1, 0), 3, 4, "confirmed")
    any_store.save_assessments(CID, [verdict])
    assert any_store.load_assessments(CID) == [verdict] and verdict.ordered() == ((0, 1), 4, 3)
    before = any_store.collation_versions(CID)
    assert set(before) == {"record.json", "manuscripts/1.json", "manuscripts/1.manifest.json", "results/0-1.npz",
                           "assessments.json"}  # fmt: skip
    any_store.save_assessments(CID, [verdict, Assessment("2", (0, 1), 4, 3, "none")])
    assert any_store.collation_versions(CID)["assessments.json"] != before["assessments.json"]


def test_scores_chunks_and_pairs(any_store: DataStore) -> None:
    assert not any_store.has_scores("k") and any_store.load_scores("k") is None and any_store.pair_count("k") is None
    any_store.save_pairs("k", np.array([[0, 1], [1, 0], [1, 1]]))
    assert any_store.pair_count("k") == 3 and any_store.load_pairs("k").tolist() == [[0, 1], [1, 0], [1, 1]]
    any_store.save_chunk("k", 2, 0, np.array([0.5, 0.25]), np.array([0, 1], dtype=np.int8))
    any_store.save_chunk("k", 2, 1, np.array([0.75]), np.array([1], dtype=np.int8))
    assert any_store.has_chunk("k", 2, 1) and not any_store.has_chunk("k", 2, 2)
    assert any_store.load_chunk("k", 2, 0).tolist() == [0.5, 0.25] and any_store.load_chunk(
        "k", 2, 1, winners=True
    ).tolist() == [1]
    any_store.save_scores("k", np.ones((2, 2)), np.zeros((2, 2), dtype=np.int8))
    any_store.drop_chunks("k", 2)
    assert not any_store.has_chunk("k", 2, 0) and any_store.load_chunk("k", 2, 1, winners=True) is None
    assert any_store.load_scores("k").tolist() == [[1, 1], [1, 1]] and any_store.load_winners("k").dtype == np.int8


def test_features_and_images_by_content(any_store: DataStore) -> None:
    from test_cascade import grid_features  # a small, valid features set

    feats = grid_features([(2, 3), (3, 2)], scale=3, channels=112)
    assert not any_store.has_features("f")
    any_store.save_features("f", feats)
    back = any_store.load_features("f")
    assert any_store.has_features("f") and torch.equal(back.desc, feats.desc) and back.scales == (3,)
    image = Image.new("RGB", (5, 4), (10, 200, 30))
    any_store.save_image(image, "ab" * 16)
    assert any_store.load_image("ab" * 16).getpixel((2, 2)) == (10, 200, 30)
    with pytest.raises(FileNotFoundError):
        any_store.load_image("cd" * 16)


def test_identity_and_probe(any_store: DataStore) -> None:
    first = any_store.identity()
    assert len(first) == 32 and any_store.identity() == first
    any_store.probe()
    assert any_store.versions(".probe/") == {}


def test_an_unreachable_object_store_is_an_io_error_naming_it(tmp_path: Path) -> None:
    any_store = ObjectStore("s3://nowhere/x", tmp_path, 10**6, endpoint="http://127.0.0.1:9")  # discard port: refused
    with pytest.raises(StoreUnavailable) as info:
        any_store.read("collations/x/record.json")
    assert info.value.errno == errno.EIO and "s3://nowhere/x" in str(info.value) and "127.0.0.1:9" in str(info.value)


def test_a_missing_bucket_is_said_plainly(s3_server: Any, tmp_path: Path) -> None:
    any_store = ObjectStore("s3://never-created/x", tmp_path, 10**6, endpoint=s3_server.endpoint)
    with pytest.raises(StoreUnavailable, match="bucket 'never-created' does not exist"):
        any_store.read("anything")


def test_a_dead_lock_holder_blocks_others_only_until_its_lease_ends(
    s3_server: Any, s3_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from collation.store import objects

    any_store = ObjectStore(s3_url, tmp_path, 10**6, endpoint=s3_server.endpoint)
    any_store.create_collation(record(status="queued", chunk_pairs=0))
    monkeypatch.setattr(objects, "LEASE_SECONDS", 1.0)
    any_store._acquire(any_store.collation_prefix(CID) + ".lock", "a-killed-worker")  # never released
    started = time.monotonic()
    any_store.update_record(CID, lambda r: setattr(r, "chunk_pairs", 1))
    assert 0.5 < time.monotonic() - started < 5 and any_store.load_record(CID).chunk_pairs == 1


def test_the_local_cache_keeps_the_newest_within_its_bound(tmp_path: Path) -> None:
    cache = FileCache(tmp_path, max_bytes=250)
    for n in range(4):
        cache.fill(f"features/{n}.pt", lambda f: f.write(b"x" * 100))
        time.sleep(0.01)  # distinct modification times
    assert [cache.get(f"features/{n}.pt") is not None for n in range(4)] == [False, False, True, True]
    cache.fill("features/big.pt", lambda f: f.write(b"x" * 1000))  # larger than the bound: kept, alone
    assert cache.get("features/big.pt") is not None and cache.get("features/3.pt") is None


def test_an_object_store_worker_downloads_an_immutable_object_once(s3_server: Any, s3_url: str, tmp_path: Path) -> None:
    writer = ObjectStore(s3_url, tmp_path / "api", 10**6, endpoint=s3_server.endpoint)
    reader = ObjectStore(s3_url, tmp_path / "worker", 10**6, endpoint=s3_server.endpoint)
    writer.save_pairs("p", np.zeros((1000, 2), dtype=np.int64))
    assert reader.pair_count("p") == 1000 and reader.pair_count("p") == 1000
    assert 16_000 <= reader.downloaded < 17_000  # once: 16,000 bytes and the .npy header


def test_store_urls() -> None:
    assert parse_store_url("s3://bucket") == ("bucket", "")
    assert parse_store_url("s3://bucket/a/b/") == ("bucket", "a/b/")
    from collation.core.settings import SettingsError

    for bad in ("bucket/x", "s3://B", "s3://a", "http://bucket"):
        with pytest.raises(SettingsError, match="COLLATION_STORE_URL"):
            Settings.from_env({"COLLATION_STORE_URL": bad})

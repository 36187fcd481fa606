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
def store(request: pytest.FixtureRequest, tmp_path: Path) -> DataStore:
    if request.param == "folder":
        return FolderStore(tmp_path / "data")
    server = request.getfixturevalue("s3_server")
    url = request.getfixturevalue("s3_url")
    settings = Settings.from_env({}, data_dir=tmp_path / "cache", store_url=url, store_endpoint=server.endpoint)
    return open_store(settings)


def test_a_collation_is_created_once_and_never_exists_without_its_record(
    store: DataStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not store.exists(CID) and store.list_collations() == []
    with pytest.raises(CollationNotFound):
        store.load_record(CID)
    looked, calls, has = threading.Barrier(4), itertools.count(), store.has

    def look_together(key: str) -> bool:  # the four creators all look before any creates: the worst order
        found = has(key)
        if next(calls) < 4:
            looked.wait(timeout=10)
        return found

    monkeypatch.setattr(store, "has", look_together)
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(store.create_collation(record(status="queued", chunk_pairs=0))))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    monkeypatch.undo()
    assert sorted(results) == [False, False, False, True]  # concurrent identical requests: one creates it
    assert store.exists(CID) and store.list_collations() == [CID] and store.load_record(CID).status == "queued"


def test_concurrent_updates_lose_nothing(store: DataStore) -> None:
    store.create_collation(record(status="queued", chunk_pairs=0))

    def bump_once(stored: Any) -> None:
        stored.chunk_pairs += 1

    def bump() -> None:
        for _ in range(8):
            store.update_record(CID, bump_once)

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.load_record(CID).chunk_pairs == 32


def test_a_deleted_collation_stays_deleted(store: DataStore) -> None:
    store.create_collation(record(status="queued", chunk_pairs=0))
    store.save_manuscript(CID, PreparedManuscript(0, "https://x/0.json"), {"id": "m"})
    store.save_results(CID, PairResults(0, 1, np.eye(2), np.eye(2), np.eye(2)))
    store.record_failure(CID, Step.prepare(1), "404")
    assert store.delete_collation(CID) is True
    assert not store.exists(CID) and store.list_collations() == [] and store.load_manuscript(CID, 0) is None
    assert store.delete_collation(CID) is False
    with pytest.raises(CollationNotFound):
        store.write_in_collation(CID, "results/0-1.npz", b"late")  # a slow writer does not bring it back
    with pytest.raises(CollationNotFound):
        store.update_record(CID, lambda r: None)
    store.record_failure(CID, Step.prepare(0), "late")  # quietly nothing
    assert store.create_collation(record(status="failed", chunk_pairs=0)) is True  # the same inputs later: a fresh one
    assert store.load_failures(CID) == {} and store.load_results(CID, 0, 1) is None


def test_collation_objects_round_trip(store: DataStore) -> None:
    store.create_collation(record(status="queued", chunk_pairs=0))
    doc = PreparedManuscript(1, "https://x/1.json", regions=(StoredRegion(3, "c", 0, (1, 2, 3, 4), "d", blank=True),))
    store.save_manuscript(CID, doc, {"id": "manifest"})
    assert store.load_manuscript(CID, 1) == doc and store.load_manifest(CID, 1) == {"id": "manifest"}
    assert store.has_manuscript(CID, 1) and not store.has_manuscript(CID, 0)
    s = np.arange(6.0).reshape(2, 3)
    store.save_results(CID, PairResults(0, 1, s, s, s, seeds=np.array([[0, 2]])))
    got = store.load_results(CID, 0, 1)
    assert got is not None and got.S.tolist() == [[0, 1, 2], [3, 4, 5]] and got.seeds.tolist() == [[0, 2]]
    back = store.load_results(CID, 1, 0)  # read the other way round: transposed, and stored once
    assert back.S.tolist() == s.T.tolist() and back.seeds.tolist() == [[2, 0]] and back.reversed
    store.record_failure(CID, Step.chunk(0, 1, 2), "boom")
    assert store.load_failures(CID) == {Step.chunk(0, 1, 2): "boom"}
    store.clear_failures(CID)
    assert store.load_failures(CID) == {}
    verdict = Assessment("1", (1, 0), 3, 4, "confirmed")
    store.save_assessments(CID, [verdict])
    assert store.load_assessments(CID) == [verdict] and verdict.ordered() == ((0, 1), 4, 3)
    before = store.collation_versions(CID)
    assert set(before) == {"record.json", "manuscripts/1.json", "manuscripts/1.manifest.json", "results/0-1.npz",
                           "assessments.json"}  # fmt: skip
    store.save_assessments(CID, [verdict, Assessment("2", (0, 1), 4, 3, "none")])
    assert store.collation_versions(CID)["assessments.json"] != before["assessments.json"]


def test_scores_chunks_and_pairs(store: DataStore) -> None:
    assert not store.has_scores("k") and store.load_scores("k") is None and store.pair_count("k") is None
    store.save_pairs("k", np.array([[0, 1], [1, 0], [1, 1]]))
    assert store.pair_count("k") == 3 and store.load_pairs("k").tolist() == [[0, 1], [1, 0], [1, 1]]
    store.save_chunk("k", 2, 0, np.array([0.5, 0.25]), np.array([0, 1], dtype=np.int8))
    store.save_chunk("k", 2, 1, np.array([0.75]), np.array([1], dtype=np.int8))
    assert store.has_chunk("k", 2, 1) and not store.has_chunk("k", 2, 2)
    assert store.load_chunk("k", 2, 0).tolist() == [0.5, 0.25] and store.load_chunk(
        "k", 2, 1, winners=True
    ).tolist() == [1]
    store.save_scores("k", np.ones((2, 2)), np.zeros((2, 2), dtype=np.int8))
    store.drop_chunks("k", 2)
    assert not store.has_chunk("k", 2, 0) and store.load_chunk("k", 2, 1, winners=True) is None
    assert store.load_scores("k").tolist() == [[1, 1], [1, 1]] and store.load_winners("k").dtype == np.int8


def test_features_and_images_by_content(store: DataStore) -> None:
    from test_cascade import grid_features  # a small, valid features set

    feats = grid_features([(2, 3), (3, 2)], scale=3, channels=112)
    assert not store.has_features("f")
    store.save_features("f", feats)
    back = store.load_features("f")
    assert store.has_features("f") and torch.equal(back.desc, feats.desc) and back.scales == (3,)
    image = Image.new("RGB", (5, 4), (10, 200, 30))
    store.save_image(image, "ab" * 16)
    assert store.load_image("ab" * 16).getpixel((2, 2)) == (10, 200, 30)
    with pytest.raises(FileNotFoundError):
        store.load_image("cd" * 16)


def test_identity_and_probe(store: DataStore) -> None:
    first = store.identity()
    assert len(first) == 32 and store.identity() == first
    store.probe()
    assert store.versions(".probe/") == {}


def test_an_unreachable_object_store_is_an_io_error_naming_it(tmp_path: Path) -> None:
    store = ObjectStore("s3://nowhere/x", tmp_path, 10**6, endpoint="http://127.0.0.1:9")  # discard port: refused
    with pytest.raises(StoreUnavailable) as info:
        store.read("collations/x/record.json")
    assert info.value.errno == errno.EIO and "s3://nowhere/x" in str(info.value) and "127.0.0.1:9" in str(info.value)


def test_a_missing_bucket_is_said_plainly(s3_server: Any, tmp_path: Path) -> None:
    store = ObjectStore("s3://never-created/x", tmp_path, 10**6, endpoint=s3_server.endpoint)
    with pytest.raises(StoreUnavailable, match="bucket 'never-created' does not exist"):
        store.read("anything")


def test_a_dead_lock_holder_blocks_others_only_until_its_lease_ends(
    s3_server: Any, s3_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from collation.store import objects

    store = ObjectStore(s3_url, tmp_path, 10**6, endpoint=s3_server.endpoint)
    store.create_collation(record(status="queued", chunk_pairs=0))
    monkeypatch.setattr(objects, "LEASE_SECONDS", 1.0)
    store._acquire(store.collation_prefix(CID) + ".lock", "a-killed-worker")  # never released
    started = time.monotonic()
    store.update_record(CID, lambda r: setattr(r, "chunk_pairs", 1))
    assert 0.5 < time.monotonic() - started < 5 and store.load_record(CID).chunk_pairs == 1


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

"""``collate store prune --older-than DAYS``: cached features and scores not used for DAYS days go,
unless an unfinished collation needs them; recent ones, records, results and images stay. Drafts and
detections for review unchanged for ``COLLATION_STORE_DRAFT_DAYS`` days go too (``expire_drafts``)."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import record, stored_region

from collation.cli.main import main
from collation.core.errors import InputError
from collation.core.options import CollationOptions
from collation.core.settings import Settings
from collation.store.folder import FolderStore
from collation.store.objects import ObjectStore
from collation.store.records import pair_key
from collation.store.retention import expire_drafts, prune
from collation.store.stored import PairResults, PreparedManuscript

DAY = 86400.0
NOW = time.time()


def aged(folder_store: FolderStore, key: str, days: float, size: int = 1000) -> str:
    """Writes ``key`` (``size`` bytes) last used ``days`` days ago."""
    folder_store.write(key, b"x" * size)
    moment = NOW - days * DAY
    os.utime(folder_store.path(key), (moment, moment))
    return key


@pytest.fixture
def folder_store(tmp_path: Path) -> FolderStore:
    """Old and new cached work, an unfinished collation that needs some of the old, a finished one."""
    folder_store = FolderStore(tmp_path / "data")
    running = record(status="running", cid="00000000000000aa")
    folder_store.create_collation(running)
    folder_store.create_collation(record(status="finished", cid="00000000000000bb"))
    for m, key in enumerate(("needed0", "needed1")):
        doc = PreparedManuscript.from_dict({"index": m, "manifest": "", "regions": [stored_region(m, 0)]})
        folder_store.save_manuscript(running.id, doc.replace(features_key=key))
    folder_store.save_results("00000000000000bb", PairResults(0, 1, *[np.zeros((1, 1))] * 3))
    needed_pair = pair_key(CollationOptions.parse(None), "needed0", "needed1")
    aged(folder_store, "features/needed0.pt", 90)
    aged(folder_store, "features/needed1.pt", 90)
    aged(folder_store, f"scores/{needed_pair}.pairs.npy", 90)
    aged(folder_store, f"scores/{needed_pair}.c6/0.npy", 90)
    aged(folder_store, "features/old.pt", 40, size=3 * 2**20)
    aged(folder_store, "features/old.mirror.pt", 40)
    aged(folder_store, "scores/oldpair.npy", 40)
    aged(folder_store, "scores/oldpair.c6/3.npy", 40)
    aged(folder_store, "features/recent.pt", 5)
    aged(folder_store, "scores/recentpair.npy", 5)
    aged(folder_store, "images/ab/abcdef.png", 400)
    return folder_store


def test_prune_removes_old_unneeded_cache_entries_only(folder_store: FolderStore) -> None:
    dry = prune(folder_store, 30, dry_run=True, now=NOW)
    assert dry.removed == ["features/old.mirror.pt", "features/old.pt", "scores/oldpair.c6/3.npy", "scores/oldpair.npy"]
    assert dry.removed_bytes == 3 * 2**20 + 3000 and dry.kept_recent == 2 and dry.kept_in_use == 4
    assert folder_store.has("features/old.pt")  # a dry run removes nothing

    done = prune(folder_store, 30, now=NOW)
    assert done.removed == dry.removed
    assert (
        not folder_store.has("features/old.pt") and not folder_store.path("scores/oldpair.c6").exists()
    )  # no empty folder left
    assert (
        folder_store.has("features/needed0.pt")
        and folder_store.has("features/recent.pt")
        and folder_store.has("images/ab/abcdef.png")
    )
    assert folder_store.load_record("00000000000000bb").status == "finished"
    assert folder_store.load_results("00000000000000bb", 0, 1).S.shape == (1, 1)

    later = prune(folder_store, 1, now=NOW)  # a shorter limit takes the recent ones too, never the needed ones
    assert later.removed == ["features/recent.pt", "scores/recentpair.npy"] and later.kept_in_use == 4


def test_a_read_counts_as_a_use(folder_store: FolderStore) -> None:
    path = folder_store.path("features/old.pt")
    os.utime(path, (NOW - DAY, NOW - 40 * DAY))  # read yesterday, written 40 days ago
    assert "features/old.pt" not in prune(folder_store, 30, now=NOW).removed


def test_the_command_and_its_refusals(folder_store: FolderStore, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("COLLATION_DATA_DIR", str(folder_store.root))
    assert main(["store", "prune", "--older-than", "30", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "features/old.pt\n" in out
    assert "would remove 4 cached files (3.0 MiB); kept 2 used in the last 30 days and 4 that unfinished" in out
    assert main(["store", "prune", "--older-than", "-1"]) == 2
    assert "--older-than must be a number of days >= 0" in capsys.readouterr().err

    settings = Settings.from_env({}, data_dir=folder_store.root, store_url="s3://bucket/prefix")
    objects = ObjectStore(settings.store.url, settings.data_dir, 2**20, endpoint="http://127.0.0.1:9")
    with pytest.raises(InputError, match="prune works on a folder store; give an object store's bucket a lifecycle"):
        prune(objects, 30)


def stamped(store: FolderStore, key: str, days: float | None) -> str:
    """A draft or detection document last changed ``days`` days ago (None: it does not say when)."""
    moment = datetime.fromtimestamp(NOW - days * DAY, UTC).isoformat(timespec="seconds") if days is not None else None
    store.write(key, json.dumps({"id": key, "created": moment, "updated": moment}).encode())
    return key


def test_drafts_and_detections_unchanged_for_their_days_expire(tmp_path: Path) -> None:
    store = FolderStore(tmp_path / "data")
    old = [stamped(store, "detections/00000000000000aa.json", 40), stamped(store, "drafts/00000000000000bb.json", 31)]
    kept = [
        stamped(store, "drafts/00000000000000cc.json", 29),
        stamped(store, "detections/00000000000000dd.json", 0),
        stamped(store, "drafts/00000000000000ee.json", None),  # it does not say: not ours to judge
    ]
    store.write("drafts/00000000000000ff.json", b"not JSON")
    aged(store, "features/old.pt", 40)  # a cache: prune's, not this
    assert expire_drafts(store, 30, dry_run=True, now=NOW) == sorted(old) and all(store.has(k) for k in old)
    assert expire_drafts(store, 0, now=NOW) == []  # 0: kept
    assert expire_drafts(store, 30, now=NOW) == sorted(old)
    assert not any(store.has(k) for k in old) and all(store.has(k) for k in kept)
    assert store.has("drafts/00000000000000ff.json") and store.has("features/old.pt")
    with pytest.raises(InputError, match="number of days >= 0"):
        expire_drafts(store, float("nan"))


def test_prune_expires_drafts_by_their_setting(
    folder_store: FolderStore, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    stamped(folder_store, "drafts/00000000000000aa.json", 40)
    stamped(folder_store, "drafts/00000000000000bb.json", 10)
    monkeypatch.setenv("COLLATION_DATA_DIR", str(folder_store.root))
    monkeypatch.setenv("COLLATION_STORE_DRAFT_DAYS", "30")
    assert main(["store", "prune", "--older-than", "365", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "drafts/00000000000000aa.json\n" in out and "would remove 1 drafts and detections for review" in out
    monkeypatch.setenv("COLLATION_STORE_DRAFT_DAYS", "7")
    assert main(["store", "prune", "--older-than", "365"]) == 0
    assert "removed 2 drafts and detections for review unchanged for 7 days" in capsys.readouterr().out
    assert folder_store.versions("drafts/") == {} and folder_store.has("features/old.pt")

"""Formats of the data store: a store written in format 1 (``tests/store/format1``, by the code of
before formats had numbers) is read as it is and migrated, by ``collate store`` and by the service; an
object or a store of a newer format is refused with a message naming it and what to run."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from builders import record
from service_helpers import drain, service_settings

from collation.cli.main import main
from collation.core.errors import StoreFormatError
from collation.core.formats import STORE_FORMAT
from collation.core.settings import Settings
from collation.core.vocabulary import CollationStatus
from collation.store.datastore import DataStore
from collation.store.folder import FolderStore
from collation.store.location import open_store
from collation.store.migration import MARKER, inventory, migrate, require_readable, upgrade_note
from collation.store.records import pair_key
from collation.store.stepnames import Step
from collation.store.stored import PairResults

FORMAT1 = Path(__file__).parent / "format1" / "store"
FINISHED, RUNNING, FAILED = "ee42b5b5f421c468", "4a8af729aa9a601a", "d2fc53e02231b555"
FEATURES = ("424276c31ce0313e3a8af25d4c2e20fa", "7ca2e47a1c23727e34c1431405d498e9")
SCORES = "3bda485a2a55add7b34a6c772fe32525"  # the finished collation's pair
PENDING = "0e95c178b1dc04c198f7d64e472ab7e5"  # the running collation's pair: candidate pairs, chunk 0 of 2


SCALES = [18, 19, 20, 21, 22]


def format1_features(seed: int) -> dict[str, Any]:
    """A features file as format 1 wrote it (no ``format`` key): two strips, five scales, 22 cells of
    efficientnet-lite0's 112 channels. Made here rather than kept in the repository (no .pt files there);
    its values are arbitrary, unit-norm descriptors, which is all the scoring of the resumed collation needs."""
    generator = torch.Generator().manual_seed(seed)
    # one cell high: scale s has s real cells, first, and padded cells are zero (MultiScaleFeatures' check)
    mask = (torch.arange(22) < torch.tensor(SCALES).unsqueeze(-1)).expand(2, 5, 22).clone()
    desc = torch.nn.functional.normalize(torch.rand(2, 5, 22, 112, generator=generator), dim=-1)
    return {
        "desc": desc * mask.unsqueeze(-1),
        "pos": 0.05 + 0.9 * torch.rand(2, 5, 22, 2, generator=generator),  # inside (0, 1)
        "mask": mask,
        "scales": SCALES,
        "query_scale": 20,
        "backbone": "efficientnet-lite0",
    }


def copy_format1(store: DataStore) -> DataStore:
    """``store`` holding the format 1 fixture, byte for byte, and its two features files."""
    for path in sorted(p for p in FORMAT1.rglob("*") if p.is_file()):
        store.write(path.relative_to(FORMAT1).as_posix(), path.read_bytes())
    for seed, key in enumerate(FEATURES):
        with store.writer(f"features/{key}.pt") as f:
            torch.save(format1_features(seed), f)
    return store


@pytest.fixture(params=["folder", "s3"])
def old_store(request: pytest.FixtureRequest, tmp_path: Path) -> DataStore:
    """The format 1 fixture in a folder store, or in a real S3-compatible server."""
    if request.param == "folder":
        return copy_format1(FolderStore(tmp_path / "data"))
    server = request.getfixturevalue("s3_server")
    settings = Settings.from_env(
        {}, data_dir=tmp_path / "cache", store_url=request.getfixturevalue("s3_url"), store_endpoint=server.endpoint
    )
    return copy_format1(open_store(settings))


def what_readers_see(store: DataStore) -> dict[str, Any]:
    """Everything the service reads from the fixture, as plain values."""
    seen: dict[str, Any] = {}
    for cid in (FINISHED, RUNNING, FAILED):
        rec = store.load_record(cid)
        seen[cid] = rec.to_json()
        docs = [store.load_manuscript(cid, m) for m in range(2)]
        seen[f"{cid} manuscripts"] = [doc.to_dict() if doc else None for doc in docs]
        seen[f"{cid} failures"] = {step.name: message for step, message in store.load_failures(cid).items()}
    seen["verdicts"] = [v.to_dict() for v in store.load_assessments(FINISHED)]
    seen["results"] = {name: a.tolist() for name, a in store.load_results(FINISHED, 0, 1).arrays().items()}
    seen["features"] = [store.load_features(key).desc.sum().item() for key in FEATURES]
    seen["scores"] = store.load_scores(SCORES).tolist()
    seen["pairs"] = store.load_pairs(PENDING).tolist()
    seen["chunk"] = store.load_chunk(PENDING, 1, 0).tolist()
    return seen


def test_a_format_1_store_is_read_as_it_is(old_store: DataStore) -> None:
    seen = what_readers_see(old_store)
    statuses = {cid: old_store.load_record(cid).status for cid in (FINISHED, RUNNING, FAILED)}
    assert statuses == {FINISHED: CollationStatus.FINISHED, RUNNING: CollationStatus.RUNNING, FAILED: "failed"}
    assert seen[f"{FAILED} failures"] == {"prepare-1": "manifest answered 404 Not Found"}
    assert [(v["verdict"], v["creator"], v["pair"]) for v in seen["verdicts"]] == [("exact", "A. Tester", [0, 1])]
    assert "format" not in seen["verdicts"][0] and "format" not in seen[f"{FINISHED} manuscripts"][0]
    assert np.asarray(seen["results"]["S"]).shape == (2, 2) and "format" not in seen["results"]
    assert len(seen["pairs"]) == 2 and len(seen["chunk"]) == 1  # 2 candidate pairs, 1 pair per chunk
    assert all(old_store.load_features(key).desc.shape[:2] == (2, 5) for key in FEATURES)  # 2 strips, 5 scales

    found = inventory(old_store)
    assert found.marker is None and found.store_format == 1 and not found.unreadable and not found.current
    assert {kind: dict(c) for kind, c in found.counts.items()} == {
        "record": {1: 3},
        "manuscript": {1: 6},
        "manifest": {"IIIF document": 5},
        "failure": {1: 1},
        "verdicts": {1: 1},
        "results": {1: 1},
        "features": {1: 2},
        "image": {"PNG": 4},
        "array": {"format in key": 3},
    }


def stored_json(store: DataStore, key: str) -> Any:
    return json.loads(store.read(key))


def test_migrate_numbers_every_object_and_changes_nothing_a_reader_sees(old_store: DataStore) -> None:
    before = what_readers_see(old_store)
    raw_record = stored_json(old_store, f"collations/{FINISHED}/record.json")
    rewritten: list[str] = []
    after = migrate(old_store, progress=rewritten.append)

    assert len(rewritten) == 14  # 3 records, 6 manuscripts, 1 failure, 1 verdict list, 1 result, 2 features
    assert after.current and after.marker == STORE_FORMAT == json.loads(old_store.read(MARKER))["format"]
    assert what_readers_see(old_store) == before
    # format 2 adds the numbers and nothing else: a format 1 reader, which ignores keys it does not know,
    # reads the same values (old and new processes side by side during an upgrade)
    assert stored_json(old_store, f"collations/{FINISHED}/record.json") == {"format": 2, **raw_record}
    assert stored_json(old_store, f"collations/{FINISHED}/assessments.json")[0]["format"] == 2
    assert stored_json(old_store, f"collations/{FAILED}/failures/prepare-1.json")["format"] == 2
    with np.load(io.BytesIO(old_store.read(f"collations/{FINISHED}/results/0-1.npz"))) as arrays:
        assert int(arrays["format"]) == 2 and sorted(arrays.files) == sorted(["format", *before["results"]])
    stored = torch.load(old_store.local_file(f"features/{FEATURES[0]}.pt"), weights_only=True)
    assert stored["format"] == 2
    assert {kind: dict(c) for kind, c in after.counts.items()}["record"] == {2: 3}

    again: list[str] = []
    assert migrate(old_store, progress=again.append).current and again == []  # nothing left to do


def test_newer_objects_are_refused_with_a_message_naming_them(tmp_path: Path) -> None:
    store = FolderStore(tmp_path / "data")
    store.create_collation(record(status="finished"))
    cid = record().id
    raw = stored_json(store, f"collations/{cid}/record.json")
    assert raw["format"] == STORE_FORMAT  # written by this release
    store.write(f"collations/{cid}/record.json", json.dumps({**raw, "format": 3}).encode())
    with pytest.raises(StoreFormatError) as refused:
        store.load_record(cid)
    message = refused.value.message
    assert f"collations/{cid}/record.json is in data store format 3" in message
    assert f"reads formats 1 to {STORE_FORMAT}" in message and "collate store check" in message
    assert refused.value.http_status == 500 and refused.value.field == "format"

    store.write(f"collations/{cid}/assessments.json", json.dumps([{"format": 9, "verdict": "exact"}]).encode())
    with pytest.raises(StoreFormatError, match=r"assessments.json item 0 is in data store format 9"):
        store.load_assessments(cid)
    store.save_results(cid, PairResults(0, 1, *[np.zeros((1, 1))] * 3))
    data = io.BytesIO()
    np.savez(data, format=np.asarray(4), S=np.zeros((1, 1)))
    store.write(f"collations/{cid}/results/0-1.npz", data.getvalue())
    with pytest.raises(StoreFormatError, match=r"results/0-1.npz is in data store format 4"):
        store.load_results(cid, 0, 1)
    features = format1_features(0)
    with store.writer("features/newer.pt") as f:
        torch.save({**features, "format": 5}, f)
    with pytest.raises(StoreFormatError, match=r"newer.pt is in data store format 5, written by a newer release"):
        store.load_features("newer")

    from collation.app import create_app  # the API answers a problem naming the object, no traceback

    api = create_app(Settings.from_env({}, data_dir=tmp_path / "data"), TESTING=True).test_client()
    answer = api.get(f"/api/v1/collations/{cid}")
    assert answer.status_code == 500 and answer.get_json()["field"] == "format"
    assert answer.get_json()["detail"] == message and "Traceback" not in answer.get_data(as_text=True)

    found = inventory(store)
    assert set(found.unreadable) == {
        f"collations/{cid}/record.json",
        f"collations/{cid}/assessments.json",
        f"collations/{cid}/results/0-1.npz",
        "features/newer.pt",
    }


def test_serve_and_worker_refuse_a_newer_store_and_collate_store_reports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    copy_format1(FolderStore(data))
    monkeypatch.setenv("COLLATION_DATA_DIR", str(data))
    monkeypatch.setenv("COLLATION_REDIS_URL", "redis://127.0.0.1:9/0")  # never reached: the check comes first

    assert main(["store", "check"]) == 0
    out = capsys.readouterr().out
    assert "store format 1 (no format.json" in out and "record: 3 in format 1" in out
    assert "`collate store migrate` (workers stopped) brings it to format 2" in out

    (data / MARKER).write_text(json.dumps({"format": 3, "written_by": "image-collation 9.9"}))
    for command in ("worker", "serve"):
        assert main([command]) == 2
        error = capsys.readouterr().err
        assert f"collate: error: folder {data}: the store is in data store format 3, written by a newer" in error
    assert main(["store", "check"]) == 3
    assert main(["store", "migrate"]) == 2  # nothing touched
    assert "format 3" in capsys.readouterr().err
    assert json.loads((data / f"collations/{FINISHED}/record.json").read_text()).get("format") is None


def test_a_new_store_is_marked_and_an_unmarked_one_is_format_1(tmp_path: Path) -> None:
    new = FolderStore(tmp_path / "new")
    assert require_readable(new) == STORE_FORMAT and upgrade_note(new, STORE_FORMAT) is None
    assert json.loads(new.read(MARKER))["format"] == STORE_FORMAT
    old = copy_format1(FolderStore(tmp_path / "old"))
    assert require_readable(old) == 1 and old.read(MARKER) is None  # read as it is, left unmarked
    assert upgrade_note(old, 1) == (
        f"data store folder {tmp_path / 'old'} is in format 1 (written before formats had numbers): "
        "image-collation 0.1.0 reads it as it is; `collate store migrate` (workers stopped) brings it to format 2"
    )


def test_the_service_serves_and_finishes_a_format_1_store(tmp_path: Path, redis_url: str) -> None:
    """The upgrade: the API and a worker of this release started on a format 1 store serve the finished
    collation, finish the interrupted one from where it stopped, and keep the failed one failed."""
    from collation.app import create_app
    from collation.service.state import service_state

    copy_format1(FolderStore(tmp_path / "data"))
    settings = service_settings(tmp_path / "data", redis_url, chunk_pairs=1)
    app = create_app(settings, TESTING=True)
    client = app.test_client()
    try:
        status = client.get(f"/api/v1/collations/{FINISHED}").get_json()
        assert status["status"] == "finished"
        annotations = client.get(f"/api/v1/collations/{FINISHED}/annotations")
        assert annotations.status_code == 200 and annotations.get_json()["total"] >= 2
        verdicts = client.get(f"/api/v1/collations/{FINISHED}/assessments").get_json()["items"]
        assert [(v["verdict"], v["creator"]) for v in verdicts] == [("exact", "A. Tester")]
        assert "format" not in verdicts[0]

        service_state(app).sweeper.sweep()  # as at start: re-enqueues the unfinished collation
        drain(settings)
        store = service_state(app).runtime.store
        resumed = client.get(f"/api/v1/collations/{RUNNING}").get_json()
        assert resumed["status"] == "finished", resumed
        # the cascade's settings key its candidate sets whole since issue 37 (normalization and propagation
        # were missing): the old candidates and chunk are never reused, the pair is scored once again
        record = store.load_record(RUNNING)
        docs = [store.load_manuscript(RUNNING, m) for m in (0, 1)]
        key = pair_key(record.options, docs[0].features_key, docs[1].features_key)
        assert key != PENDING and store.has_scores(key) and not store.has_scores(PENDING)
        assert store.load_results(RUNNING, 0, 1).S.shape == (2, 2)
        assert client.get(f"/api/v1/collations/{FAILED}").get_json()["status"] == "failed"
        assert store.load_failures(FAILED) == {Step.prepare(1): "manifest answered 404 Not Found"}
    finally:
        service_state(app).close()

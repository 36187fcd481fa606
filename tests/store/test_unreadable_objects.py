"""One unreadable object of the store (issue 41, item 2): a record from a newer release, of format 2.0,
``true``, truncated, nested 50,000 deep or a JSON list; verdicts that are a dict or numbers; results that
are no zip or whose format is two numbers. The listing and ``/metrics`` skip it and count it,
``collate store check`` names it (exit 3, no traceback), ``prune`` goes on; ``prune`` refuses ages that
are not finite numbers >= 0."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import record

from collation.cli.main import main
from collation.store.folder import FolderStore

GOOD, BAD = "00000000000000aa", "00000000000000bb"
API = "/api/v1"


def valid_record_bytes() -> bytes:
    return json.dumps({"format": 2, **record(cid=BAD).to_json()}).encode()


RECORDS: dict[str, bytes] = {
    "format 3": json.dumps({**json.loads(valid_record_bytes()), "format": 3}).encode(),
    "format 2.0": json.dumps({**json.loads(valid_record_bytes()), "format": 2.0}).encode(),
    "true": b"true",
    "truncated": valid_record_bytes()[:200],
    "nested 50,000 deep": b"[" * 50_000 + b"]" * 50_000,
    "a JSON list": json.dumps([json.loads(valid_record_bytes())]).encode(),
}
"""Bad bytes for ``collations/BAD/record.json``."""


def npz(**arrays: Any) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


OTHERS: dict[str, tuple[str, bytes]] = {
    "verdicts a dict": ("assessments.json", b'{"a": 1}'),
    "verdicts numbers": ("assessments.json", b"[1, 2]"),
    "results format of two numbers": ("results/0-1.npz", npz(format=np.array([2, 2]), S=np.zeros((1, 1)))),
    "results not a zip": ("results/0-1.npz", b"PK\x03\x04 not a zip at all"),
}
"""Bad bytes for other objects of collation BAD (its record is good), by what they are."""


def store_with(tmp_path: Path, relative: str, data: bytes) -> FolderStore:
    """A folder store with a good collation, and collation BAD whose ``relative`` object is ``data``."""
    store = FolderStore(tmp_path / "data")
    store.create_collation(record(cid=GOOD))
    store.create_collation(record(cid=BAD, status="finished"))
    store.write(f"collations/{BAD}/{relative}", data)
    return store


# -- the listing and the metrics ----------------------------------------------------------------------


@pytest.mark.parametrize("case", list(RECORDS))
def test_one_unreadable_record_is_skipped_by_the_listing_and_counted_by_metrics(
    case: str, settings: Any, app: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Each of these made ``GET /collations`` and ``GET /metrics`` answer 500 for every caller."""
    from collation.service.state import service_state

    store = service_state(app).runtime.store
    store.create_collation(record(cid=GOOD))
    store.write(f"collations/{BAD}/record.json", RECORDS[case])
    client = app.test_client()
    listing = client.get(f"{API}/collations")
    assert listing.status_code == 200, listing.get_data(as_text=True)[:300]
    assert [item["id"] for item in listing.get_json()["items"]] == [GOOD]
    scrape = client.get("/metrics")
    assert scrape.status_code == 200
    assert "\ncollation_unreadable_records 1.0\n" in scrape.get_data(as_text=True)
    assert 'collation_collations{status="running"} 1.0' in scrape.get_data(as_text=True)
    named = [r.getMessage() for r in caplog.records if BAD in r.getMessage()]
    assert named and "record.json" in named[0], named


# -- collate store check and prune --------------------------------------------------------------------


@pytest.mark.parametrize("case", [*(f"record {c}" for c in RECORDS), *OTHERS])
def test_check_names_each_unreadable_object_and_exits_3_without_a_traceback(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A traceback (exit 1) for verdicts and results; exit 0 for a record that is a JSON list."""
    relative, data = (
        ("record.json", RECORDS[case.removeprefix("record ")])
        if case in {f"record {c}" for c in RECORDS}
        else OTHERS[case]
    )
    store = store_with(tmp_path, relative, data)
    monkeypatch.setenv("COLLATION_DATA_DIR", str(store.root))
    assert main(["store", "check"]) == 3
    out, err = capsys.readouterr()
    assert f"unreadable: collations/{BAD}/{relative}" in out, out
    assert "Traceback" not in out + err
    assert main(["store", "check", "--json"]) == 3
    assert list(json.loads(capsys.readouterr().out)["unreadable"]) == [f"collations/{BAD}/{relative}"]


@pytest.mark.parametrize("case", list(RECORDS))
def test_prune_skips_an_unreadable_record_and_names_it(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``prune`` exited 2 or died with a traceback."""
    store = store_with(tmp_path, "record.json", RECORDS[case])
    store.write("features/old.pt", b"x")
    monkeypatch.setenv("COLLATION_DATA_DIR", str(store.root))
    assert main(["store", "prune", "--older-than", "0", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert "features/old.pt\n" in out and "would remove 1 cached files" in out
    assert f"skipped unreadable: collations/{BAD}/record.json" in err


@pytest.mark.parametrize("age", ["nan", "inf", "-inf", "-1"])
def test_prune_refuses_ages_that_are_not_finite_numbers_of_days(
    age: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--older-than nan`` counted every cache entry as unused."""
    store = store_with(tmp_path, "assessments.json", b"[]")
    store.write("features/recent.pt", b"x")
    monkeypatch.setenv("COLLATION_DATA_DIR", str(store.root))
    assert main(["store", "prune", f"--older-than={age}"]) == 2
    assert "--older-than must be a number of days >= 0" in capsys.readouterr().err
    assert store.has("features/recent.pt")

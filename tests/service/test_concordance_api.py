"""The concordance routes and the verdict categories against a finished three-witness collation
written straight into a data store (no Redis, no workers). Every response is checked against
``openapi.yaml``."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import (
    finished_collation,
    prepared_manuscript,
    v3_canvas,
    v3_image_body,
    v3_manifest,
    v3_service2,
)
from service_helpers import OpenAPIClient

from collation.app import create_app
from collation.core.settings import Settings
from collation.service.exports import SHARE
from collation.service.state import service_state
from collation.store.datastore import DataStore

CID = "00112233445566aa"
API = f"/api/v1/collations/{CID}"
SIZES = {0: 5, 1: 5, 2: 4}
"""Witness 2 lacks the others' illustration 0: its illustration k is their k + 1."""


def manifest(m: int, n: int) -> dict[str, Any]:
    """Presentation 3, one 1000 x 800 canvas per illustration, level-1 image service."""
    canvases = []
    for k in range(n):
        service = f"http://images.test/iiif/{m}-{k}"
        body = v3_image_body(f"{service}/full/max/0/default.jpg", (1000, 800), v3_service2(service, keywords=""))
        canvases.append(v3_canvas(f"http://lib.test/{m}/canvas/{k}", (1000, 800), body=body, label=f"f. {k + 1}r"))
    return v3_manifest(f"http://lib.test/{m}/manifest", canvases, f"Codex {'ABC'[m]}")


def diagonal(n0: int, n1: int, shift: int) -> np.ndarray:
    s = np.full((n0, n1), 0.1)
    for i in range(n0):
        if 0 <= i + shift < n1:
            s[i, i + shift] = 0.9
    return s


def write_three_witnesses(root: Path) -> DataStore:
    scores = {(0, 1): diagonal(5, 5, 0), (0, 2): diagonal(5, 4, -1), (1, 2): diagonal(5, 4, -1)}
    scores[(0, 1)][4, 4] = 0.3  # the last pair of A and B is weak
    manuscripts = [(prepared_manuscript(m, n), manifest(m, n)) for m, n in SIZES.items()]
    return finished_collation(root, manuscripts, scores, cid=CID)


@pytest.fixture
def finished_api(tmp_path: Path, openapi: dict[str, Any]) -> Any:
    store = write_three_witnesses(tmp_path / "data")
    app = create_app(Settings.from_env({}, data_dir=store.root, public_url="http://collation.test"), TESTING=True)
    yield OpenAPIClient(app.test_client(), openapi)
    service_state(app).close()


def members(doc: dict[str, Any]) -> list[list[tuple[int, int] | None]]:
    return [[(c["manuscript"], c["index"]) if c else None for c in row["cells"]] for row in doc["rows"]]


def test_concordance_groups_three_witnesses(finished_api: Any) -> None:
    doc = finished_api.get(f"{API}/concordance").get_json()
    assert [w["label"] for w in doc["witnesses"]] == ["Codex A", "Codex B", "Codex C"]
    assert members(doc) == [[(0, 0), (1, 0), None]] + [[(0, k), (1, k), (2, k - 1)] for k in range(1, 5)]
    assert (doc["total"], doc["matched"], doc["unmatched"], doc["sort"]) == (5, 5, 0, 0)
    cell = doc["rows"][1]["cells"][2]
    assert cell["canvas"] == "http://lib.test/2/canvas/0" and cell["label"] == "f. 1r"
    assert cell["xywh"] == [100, 100, 400, 300]
    assert cell["image"] == "http://images.test/iiif/2-0/100,100,400,300/400,/0/default.jpg"
    assert cell["thumbnail"] == "http://images.test/iiif/2-0/100,100,400,300/160,/0/default.jpg"
    assert cell["view"].startswith(f"http://collation.test{API}/view?link=2-")
    assert 0 < cell["confidence"] <= 1 and cell["verdict"] is None


def test_sort_and_min_score(finished_api: Any) -> None:
    by_c = finished_api.get(f"{API}/concordance?sort=2").get_json()
    assert members(by_c)[-1] == [(0, 0), (1, 0), None]  # no illustration of C: after C's order
    strict = finished_api.get(f"{API}/concordance?min_score=0.5&score=raw").get_json()
    # A4-B4 (raw 0.3) is dropped, but A4-C3 and B4-C3 hold: the group stays whole through C
    assert [(0, 4), (1, 4), (2, 3)] in members(strict)
    stricter = finished_api.get(f"{API}/concordance?min_score=100").get_json()
    assert stricter["matched"] == 0 and stricter["unmatched"] == 14
    assert finished_api.get(f"{API}/concordance?sort=7").status_code == 400
    assert finished_api.get(f"{API}/concordance?min_score=abc").status_code == 400


def test_concordance_csv(finished_api: Any) -> None:
    r = finished_api.get(f"{API}/concordance.csv?sort=1")
    assert r.mimetype == "text/csv" and "attachment" in r.headers["Content-Disposition"]
    table = list(csv.reader(io.StringIO(r.get_data(as_text=True))))
    # headers in words, each witness by its label; illustrations counted from 1 (issue 39, items 5 and 9)
    assert table[0][:6] == [
        "Group",
        "Witnesses",
        "Confidence (0 to 1)",
        "Codex A — No.",
        "Codex A — folio",
        "Codex A — region",
    ]
    assert table[0][-4:] == ["Reviewers", "Notes", "Weak match left out", SHARE] and len(table) == 6
    assert table[1][:2] == ["1", "2"] and table[2][1] == "3"
    assert table[2][3 + 6 * 2 + 2] == "100,100,400,300"  # C's region


def test_concordance_xlsx_holds_the_cells_of_the_csv(finished_api: Any) -> None:
    """The workbook, read back with the standard library (an .xlsx is a zip of XML): the CSV's cells,
    the numbers as numbers."""
    import xml.etree.ElementTree as ET
    import zipfile

    r = finished_api.get(f"{API}/concordance.xlsx?sort=1")
    assert r.mimetype.endswith("spreadsheetml.sheet")
    assert 'filename="Concordance of Codex A Codex B Codex C.xlsx"' in r.headers["Content-Disposition"]
    ns = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}
    with zipfile.ZipFile(io.BytesIO(r.get_data())) as book:
        strings = [t.text or "" for t in ET.fromstring(book.read("xl/sharedStrings.xml")).iter(f"{{{ns['m']}}}t")]
        sheet = ET.fromstring(book.read("xl/worksheets/sheet1.xml"))
    rows = []
    for row in sheet.iterfind(".//m:sheetData/m:row", ns):
        line = {}
        for cell in row.iterfind("m:c", ns):
            column = "".join(ch for ch in cell.get("r") if ch.isalpha())
            value = cell.findtext("m:v", default="", namespaces=ns)
            line[column] = (strings[int(value)], "s") if cell.get("t") == "s" else (float(value), "n")
        rows.append(line)
    table = list(csv.reader(io.StringIO(finished_api.get(f"{API}/concordance.csv?sort=1").get_data(as_text=True))))
    assert len(rows) == len(table) == 6
    # the workbook's columns are the CSV's, by header, plus a picture column before each witness's
    header = {letter: name for letter, (name, _) in rows[0].items()}
    assert [name for name in header.values() if name.endswith("— picture")] == [
        "Codex A — picture",
        "Codex B — picture",
        "Codex C — picture",
    ]
    for line, cells in zip(rows[1:], table[1:], strict=True):
        by_name = {header[letter]: value for letter, value in line.items()}
        for name, cell in zip(table[0], cells, strict=True):
            value, kind = by_name.get(name, ("", "s"))
            assert (float(cell) if kind == "n" else cell) == value, name
    assert rows[1]["B"] == (2.0, "n") and rows[1]["A"] == (1.0, "n")  # sizes and group numbers are numbers


def test_correspondences_min_score(finished_api: Any) -> None:
    doc = finished_api.get(f"{API}/correspondences?pair=0,1&score=raw&top=3&min_score=0.5").get_json()
    assert doc["min_score"] == 0.5
    assert [[c["index"] for c in i["candidates"]] for i in doc["items"]] == [[0], [1], [2], [3], []]


def p_s(finished_api: Any, pair: str, source: int, target: int) -> dict[str, Any]:
    doc = finished_api.get(f"{API}/correspondences?pair={pair}&top=5").get_json()
    return next(c for c in doc["items"][source]["candidates"] if c["index"] == target)


def test_verdict_categories_are_stored_shown_and_used(finished_api: Any) -> None:
    before_diag, before_off = p_s(finished_api, "0,1", 2, 2), p_s(finished_api, "0,1", 2, 3)
    # no match on an automatic seed: it stops being one (P_S falls) and splits the group
    r = finished_api.post(f"{API}/assessments", json={"pair": [0, 1], "source": 2, "target": 2, "verdict": "none"})
    assert r.status_code == 201 and r.get_json()["category"] == "none"
    assert r.get_json()["annotation"]["body"]["value"] == "none"
    after = p_s(finished_api, "0,1", 2, 2)
    assert after["category"] == "none" and after["assessment"] == "none" and after["P_S"] < before_diag["P_S"]
    doc = finished_api.get(f"{API}/concordance").get_json()
    assert not any(row[0] == (0, 2) and row[1] == (1, 2) for row in members(doc))
    # semantic (same subject) on a pair that is no cycle: it becomes a seed (P_S rises) and links groups
    r = finished_api.post(f"{API}/assessments", json={"pair": [1, 0], "source": 3, "target": 2, "verdict": "semantic"})
    assert r.get_json()["annotation"]["body"]["value"] == "semantic"
    assert (
        p_s(finished_api, "0,1", 2, 3)["P_S"] > before_off["P_S"]
        and p_s(finished_api, "0,1", 2, 3)["category"] == "semantic"
    )
    # the old vocabulary still works: rejected is none, confirmed is exact
    r = finished_api.post(f"{API}/assessments", json={"pair": [0, 2], "source": 1, "target": 0, "verdict": "confirmed"})
    assert r.get_json()["verdict"] == "confirmed" and r.get_json()["category"] == "exact"
    items = finished_api.get(f"{API}/assessments").get_json()["items"]
    assert [i["category"] for i in items] == ["none", "semantic", "exact"]
    # annotations show the category
    page = finished_api.get(f"{API}/annotations?page=1").get_json()
    verdicts = {a["id"].rsplit("/", 1)[-1]: a.get("imcol:verdict") for a in page["items"]}
    assert verdicts["0-1-2-3"] == "semantic" and verdicts["0-1-2-2"] == "none"


def test_batch_verdict_on_a_group(finished_api: Any) -> None:
    group = [{"manuscript": 0, "index": 0}, {"manuscript": 1, "index": 1}, {"manuscript": 2, "index": 1}]
    r = finished_api.post(
        f"{API}/assessments/batch", json={"members": group, "verdict": "partial", "creator": "J. Doe"}
    )
    assert r.status_code == 201
    items = r.get_json()["items"]
    assert [(i["pair"], i["source"], i["target"], i["category"]) for i in items] == [
        ([0, 1], 0, 1, "partial"),
        ([0, 2], 0, 1, "partial"),
        ([1, 2], 1, 1, "partial"),
    ]
    doc = finished_api.get(f"{API}/concordance").get_json()
    row = next(row for row in doc["rows"] if row["cells"][0] and row["cells"][0]["index"] == 0)
    assert [(c["index"], c["verdict"], c["confidence"]) for c in row["cells"]] == [
        (0, "partial", 1.0),
        (1, "partial", 1.0),
        (1, "partial", 1.0),
    ]
    bad = finished_api.post(f"{API}/assessments/batch", json={"members": group[:1] * 2, "verdict": "exact"})
    assert bad.status_code == 400
    bad = finished_api.post(
        f"{API}/assessments/batch", json={"members": [{"manuscript": 0, "index": 9}, group[1]], "verdict": "exact"}
    )
    assert bad.status_code == 400


def test_a_verdict_reads_and_writes_only_its_own_pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Checking the regions reads the two manuscripts' region lists, and P_S is recomputed for the pair
    judged: the results of the other pairs are neither read nor written."""
    from collation.service import assessments

    store = write_three_witnesses(tmp_path / "data")
    loaded, saved = [], []
    load, save = store.load_results, store.save_results
    monkeypatch.setattr(store, "load_results", lambda cid, a, b: loaded.append((a, b)) or load(cid, a, b))
    monkeypatch.setattr(store, "save_results", lambda cid, res: saved.append((res.a, res.b)) or save(cid, res))
    before = {pair: load(CID, *pair).P_S for pair in ((0, 1), (0, 2), (1, 2))}
    body = {"pair": [2, 0], "source": 0, "target": 3, "verdict": "exact"}  # not an automatic seed
    assessments.add_assessment(store, CID, body, "http://collation.test/api/v1")
    assert loaded == [(0, 2)] and saved == [(0, 2)]
    assert not np.array_equal(load(CID, 0, 2).P_S, before[(0, 2)])  # the verdict's seed moved P_S
    loaded.clear(), saved.clear()
    batch = {"members": [{"manuscript": 0, "index": 1}, {"manuscript": 1, "index": 1}], "verdict": "none"}
    assessments.add_batch(store, CID, batch, "http://collation.test/api/v1")
    assert loaded == [(0, 1)] and saved == [(0, 1)]
    assert np.array_equal(load(CID, 1, 2).P_S, before[(1, 2)])


def test_the_workbook_reads_each_manuscript_once_not_once_per_region(
    finished_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its thumbnails come from the stored regions: a manuscript of 400 regions is one document of 400
    regions, so reading it per region made a 3 x 400 workbook take 6.6 s (0.6 s once per manuscript)."""
    reads: list[int] = []
    load = DataStore.load_manuscript
    monkeypatch.setattr(DataStore, "load_manuscript", lambda self, cid, m: reads.append(m) or load(self, cid, m))
    assert finished_api.get(f"{API}/concordance.csv").status_code == 200
    table = len(reads)  # the concordance itself (its own reads, which the region count does not change)
    assert finished_api.get(f"{API}/concordance.xlsx").status_code == 200
    assert sorted(reads[2 * table :]) == [0, 1, 2], reads  # then each manuscript once for the thumbnails

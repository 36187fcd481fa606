"""``collate match`` on IIIF manifests served by a real image server, and ``collate regions``."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from test_iiif_server import p2_v21_manifest, p3_v3_manifest

from collation.cli.main import main

pytestmark = pytest.mark.slow


@pytest.fixture
def loopback_allowed(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("COLLATION_ALLOWED_HOSTS", "127.0.0.1")
    monkeypatch.setenv("COLLATION_IIIF_CACHE_DIR", str(tmp_path / "cache"))


def test_match_two_manifests_finds_every_pair(
    iipsrv: Any, static_server: Any, loopback_allowed: None, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    p2, boxes2 = p2_v21_manifest(iipsrv, static_server)
    p3, _ = p3_v3_manifest(iipsrv, static_server)
    out = tmp_path / "out"
    assert main(["match", f"P2={p2}", f"P3={p3}", "--out", str(out), "--device", "cpu"]) == 0
    s = np.load(out / "P2-P3" / "P_S.npy")
    n = len(boxes2)
    assert s.shape == (n, n) and (s.argmax(axis=1) == np.arange(n)).all() and (s.argmax(axis=0) == np.arange(n)).all()
    meta = json.loads((out / "collation.json").read_text())
    first = meta["manuscripts"][0]["illustrations"][0]
    assert first["manifest"].endswith("/p2/manifest.json") and first["xywh"] == list(boxes2[0])
    assert first["id"] == f"{first['canvas']}#xywh={','.join(map(str, boxes2[0]))}"


def test_loopback_is_refused_unless_allowed(
    iipsrv: Any, static_server: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("COLLATION_ALLOWED_HOSTS", raising=False)
    monkeypatch.setenv("COLLATION_IIIF_CACHE_DIR", str(tmp_path / "cache"))
    p2, _ = p2_v21_manifest(iipsrv, static_server)
    assert main(["regions", p2]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("collate: error: ") and "127.0.0.1" in err and "\n" not in err


def test_regions_lists_canvas_xywh_and_label(
    iipsrv: Any, static_server: Any, loopback_allowed: None, capsys: pytest.CaptureFixture[str]
) -> None:
    p3, boxes3 = p3_v3_manifest(iipsrv, static_server)
    assert main(["regions", p3]) == 0
    report = capsys.readouterr().out
    assert "IIIF Presentation 3" in report and f"{len(boxes3)} regions" in report
    assert ",".join(map(str, boxes3[0])) in report

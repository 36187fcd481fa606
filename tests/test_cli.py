"""The collate command: outputs on disk, evaluation, and one-line errors with status 2."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from synthetic import drawing, restyled_copy

from collation.cli import main


@pytest.fixture(scope="module")
def two_folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("manuscripts")
    for name, make in (("A", drawing), ("B", lambda k: restyled_copy(drawing(k)))):
        folder = root / name
        folder.mkdir()
        # Natural order: f2 before f10. B stores its illustrations in reverse order of A.
        order = range(3) if name == "A" else reversed(range(3))
        for position, k in enumerate(order):
            make(k).save(folder / f"f{[2, 10, 11][position]}.png")
        (folder / "notes.txt").write_text("not an image")
    return root


@pytest.fixture(scope="module")
def matched(two_folders, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    args = ["match", f"A={two_folders / 'A'}", f"B={two_folders / 'B'}", "--out", str(out), "--device", "cpu"]
    assert main(args) == 0
    return out


def test_match_writes_matrices_and_readable_correspondences(matched):
    s = np.load(matched / "A-B" / "S.npy")
    assert s.shape == (3, 3)
    assert s.argmax(axis=1).tolist() == [2, 1, 0]  # B holds A's drawings in reverse order
    for name in ("N_S", "P_S"):
        assert np.load(matched / "A-B" / f"{name}.npy").argmax(axis=1).tolist() == [2, 1, 0]
    meta = json.loads((matched / "collation.json").read_text())
    assert [ill["id"] for ill in meta["manuscripts"][0]["illustrations"]] == ["f2.png", "f10.png", "f11.png"]
    assert meta["options"]["similarity"] == "s_trans" and meta["options"]["backbone"] == "efficientnet-lite0"
    corr = json.loads((matched / "correspondences.json").read_text())["pairs"][0]
    assert corr["pair"] == ["A", "B"] and corr["two_cycles"] == [[0, 2], [1, 1], [2, 0]]
    first = corr["matches"][0]
    assert first["source"] == {"index": 0, "id": "f2.png"} and first["match"] == {"index": 2, "id": "f11.png"}
    assert first["two_cycle"] is True and first["P_S"] > first["N_S"] > 0


def test_evaluate_json_and_table(matched, tmp_path, capsys):
    gt = tmp_path / "A-B.json"
    gt.write_text("[[0, 2], [1, 1], [2, 0]]")
    assert main(["evaluate", str(matched), "--ground-truth", str(gt), "--pair", "A,B", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report == {"pair": "A-B", "n_gt": 3, "similarity": "s_trans",
                      "accuracy": {"S": 1.0, "N_S": 1.0, "P_S": 1.0}}
    gt.write_text("[[2, 0], [1, 1]]")  # the same truth seen from B: indices of B first
    assert main(["evaluate", str(matched), "--ground-truth", str(gt), "--pair", "B,A"]) == 0
    table = capsys.readouterr().out
    assert "2 ground-truth pairs" in table and "P_S (propagated)" in table and "100.0 %" in table


def _error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("collate: error: "), err
    return err[0]


def test_bad_inputs_end_with_one_line_and_status_2(two_folders, matched, tmp_path, capsys):
    out = str(tmp_path / "o")
    assert main(["match", f"A={tmp_path / 'absent'}", f"B={two_folders / 'B'}", "--out", out]) == 2
    assert "absent: no such folder" in _error(capsys)

    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["match", f"A={empty}", f"B={two_folders / 'B'}", "--out", out]) == 2
    assert "no images" in _error(capsys)

    broken = tmp_path / "broken"
    shutil.copytree(two_folders / "A", broken)
    (broken / "f3.jpg").write_bytes(b"\xff\xd8 this is no jpeg")
    assert main(["match", f"A={broken}", f"B={two_folders / 'B'}", "--out", out]) == 2
    assert "f3.jpg: not a readable image" in _error(capsys)

    assert main(["match", f"A={two_folders / 'A'}", "--out", out]) == 2
    assert "two or more manuscripts" in _error(capsys)

    assert main(["match", f"{two_folders / 'A'}", f"B={two_folders / 'B'}", "--out", out]) == 2
    assert "NAME=PATH" in _error(capsys)

    gt = tmp_path / "gt.json"
    gt.write_text("[[0, 0], [7, 1]]")
    assert main(["evaluate", str(matched), "--ground-truth", str(gt), "--pair", "A,B"]) == 2
    assert "(7, 1) is outside the 3 x 3 score matrix" in _error(capsys)
    assert main(["evaluate", str(matched), "--ground-truth", str(gt), "--pair", "A,C"]) == 2
    assert "no results for the pair A,C" in _error(capsys)


def test_installed_command_prints_no_traceback(tmp_path):
    collate = Path(sys.executable).parent / "collate"
    proc = subprocess.run([str(collate), "evaluate", str(tmp_path), "--ground-truth", "x.json", "--pair", "A,B"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    expected = f"collate: error: {tmp_path}: not a collation output folder (no readable collation.json)"
    assert proc.stderr.strip() == expected

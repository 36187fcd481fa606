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

from collation.cli.main import build_parser, main
from collation.core.errors import InputError, OptionError
from collation.core.options import CollationOptions
from collation.engine.pipeline import run_collation


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


@pytest.mark.heavy
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
    assert report == {"pair": "A-B", "n_gt": 3, "similarity": "s_trans", "accuracy": {"S": 1.0, "N_S": 1.0, "P_S": 1.0}}
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


@pytest.mark.heavy
def test_installed_command_prints_no_traceback(tmp_path):
    collate = Path(sys.executable).parent / "collate"
    proc = subprocess.run(
        [str(collate), "evaluate", str(tmp_path), "--ground-truth", "x.json", "--pair", "A,B"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    expected = f"collate: error: {tmp_path}: not a collation output folder (no readable collation.json)"
    assert proc.stderr.strip() == expected


@pytest.mark.parametrize("module", ["collation.cli.serve", "collation.cli.manifest_options"])
def test_a_subcommand_that_cannot_be_imported_is_an_error_not_a_missing_command(monkeypatch, module):
    monkeypatch.setitem(sys.modules, module, None)  # what a missing optional dependency looks like
    with pytest.raises(ImportError, match=module):
        build_parser()
    with pytest.raises(ImportError):
        main(["evaluate", ".", "--ground-truth", "x.json", "--pair", "A,B"])


def test_every_subcommand_is_there():
    commands = build_parser()._subparsers._group_actions[0].choices
    assert {"match", "evaluate", "regions", "serve", "worker"} <= set(commands)


@pytest.fixture()
def captured_run(monkeypatch):
    """Replaces run_collation: records its keyword arguments and the backbone option, then stops the command."""
    import collation.engine.pipeline

    calls: list[dict] = []

    def fake(manuscripts, options, **kwargs):
        calls.append({**kwargs, "backbone": options.backbone})
        raise InputError("stopped by the test")

    monkeypatch.setattr(collation.engine.pipeline, "run_collation", fake)
    for name in ("COLLATION_WEIGHTS_DIR", "COLLATION_DEVICE", "COLLATION_BACKBONE"):
        monkeypatch.delenv(name, raising=False)
    return calls


def test_settings_come_from_the_environment_once_and_flags_win(
    two_folders, tmp_path, monkeypatch, capsys, captured_run
):
    args = ["match", f"A={two_folders / 'A'}", f"B={two_folders / 'B'}", "--out", str(tmp_path / "o")]
    monkeypatch.setenv("COLLATION_WEIGHTS_DIR", str(tmp_path / "weights"))
    monkeypatch.setenv("COLLATION_DEVICE", "cpu")
    monkeypatch.setenv("COLLATION_BACKBONE", "resnet50-conv4")
    assert main(args) == 2
    assert "stopped by the test" in capsys.readouterr().err
    assert captured_run[-1]["weights_dir"] == tmp_path / "weights"
    assert captured_run[-1]["device"] == "cpu" and captured_run[-1]["backbone"] == "resnet50-conv4"
    assert main([*args, "--weights-dir", "flag", "--device", "auto", "--backbone", "efficientnet-lite0"]) == 2
    assert captured_run[-1]["weights_dir"] == "flag"
    assert captured_run[-1]["device"] == "auto" and captured_run[-1]["backbone"] == "efficientnet-lite0"
    monkeypatch.delenv("COLLATION_WEIGHTS_DIR")
    assert main(args) == 2
    assert captured_run[-1]["weights_dir"] is None


def test_a_bad_setting_ends_with_one_line(two_folders, tmp_path, monkeypatch, capsys, captured_run):
    monkeypatch.setenv("COLLATION_DEVICE", "tpu")
    assert main(["match", f"A={two_folders / 'A'}", f"B={two_folders / 'B'}", "--out", str(tmp_path)]) == 2
    assert "COLLATION_DEVICE" in _error(capsys) and not captured_run


def test_every_option_is_checked_before_a_backbone_is_loaded(two_folders):
    from collation.engine.pipeline import Manuscript

    manuscripts = [Manuscript("A", []), Manuscript("B", [])]  # no images: work would fail much later
    good = {
        "backbone": "efficientnet-lite0",
        "similarity": "s_trans",
        "seed": 0,
        "kernel": "reference",
        "normalization": "max",
        "propagation": "2-cycles",
        "orientation": "forward",
    }
    # the record names every option, but orientation, transpositions and partial only when set (transpositions
    # is turns by default, so recorded; none is not)
    recorded = {k: v for k, v in good.items() if k != "orientation"}
    assert CollationOptions(**good, candidates=None).to_record() == {
        **recorded,
        "candidates": None,
        "transpositions": "turns",
    }
    assert "transpositions" not in CollationOptions(**good, transpositions="none").to_record()
    assert CollationOptions(**{**good, "orientation": "both"}).to_record()["orientation"] == "both"
    assert CollationOptions.parse({**good, "candidates": 5}).candidates == 5
    with pytest.raises(InputError, match="candidates"):
        CollationOptions(candidates=0)
    for option, bad in (
        ("backbone", "vgg"),
        ("similarity", "s_cos"),
        ("kernel", "gauss"),
        ("normalization", "median"),
        ("propagation", "4-cycles"),
        ("orientation", "up"),
    ):
        with pytest.raises(OptionError) as e:
            CollationOptions.parse({**good, option: bad})
        assert e.value.option == option and "choose one of" in str(e.value)
    with pytest.raises(OptionError, match="device"):
        run_collation(manuscripts, device="tpu")
    with pytest.raises(InputError, match="seed"):
        CollationOptions(seed="0")
    with pytest.raises(InputError, match="three or more"):
        run_collation(manuscripts, CollationOptions(propagation="3-cycles"))


def test_a_worker_on_a_gpu_takes_compute_jobs_only():
    from collation.cli.serve import worker_placement
    from collation.core.settings import Settings, SettingsError

    settings = Settings.from_env({}, redis_url="redis://127.0.0.1:1/0")
    gpu, queues = worker_placement(settings, "cuda:1", None)
    assert gpu.device == "cuda:1" and queues == ["compute"]  # one compute worker per GPU
    assert worker_placement(settings, "cuda:0", "io,compute")[1] == ["io", "compute"]  # as asked
    cpu, queues = worker_placement(settings, None, None)
    assert cpu.device == settings.device and queues == ["io", "compute"]
    assert worker_placement(settings, None, "io")[1] == ["io"]
    with pytest.raises(SettingsError, match="cuda:N"):
        worker_placement(settings, "tpu", None)
    args = build_parser().parse_args(["worker", "--device", "cuda:2"])
    assert args.device == "cuda:2" and args.queues is None

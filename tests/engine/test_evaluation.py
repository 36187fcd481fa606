"""The paper's metric and the ground-truth format."""

from __future__ import annotations

import json

import numpy as np
import pytest

from collation.core.errors import GroundTruthError, ShapeError
from collation.engine.evaluation import accuracy, check_ground_truth, load_ground_truth


def test_accuracy_averages_both_directions_with_argmax_over_everything():
    m = np.array([[0.9, 0.1, 0.0], [0.2, 0.5, 0.6], [0.1, 0.7, 0.3]])
    gt = np.array([[0, 0], [1, 1]])
    # rows: 0 -> 0 right, 1 -> 2 wrong; columns: 0 -> 0 right, 1 -> 2 wrong
    assert accuracy(m, gt) == 0.5
    assert accuracy(m, np.array([[0, 0], [2, 1]])) == 1.0


def test_ground_truth_file_errors(tmp_path):
    path = tmp_path / "gt.json"
    path.write_text(json.dumps([[0, 1], [2, 3]]))
    assert load_ground_truth(path).tolist() == [[0, 1], [2, 3]]
    for bad in ("{}", "[[0, 1, 2]]", "[[0, -1]]", "[]", "not json", '[["a", 1]]'):
        path.write_text(bad)
        with pytest.raises(GroundTruthError):
            load_ground_truth(path)
    with pytest.raises(GroundTruthError, match="no such file"):
        load_ground_truth(tmp_path / "absent.json")


def test_out_of_range_pairs_are_an_error_unless_restricted():
    gt = np.array([[0, 0], [5, 1]])
    with pytest.raises(GroundTruthError, match=r"\(5, 1\) is outside the 3 x 3"):
        check_ground_truth(gt, (3, 3))
    assert check_ground_truth(gt, (3, 3), restrict=True).tolist() == [[0, 0]]


def test_accuracy_checks_its_inputs():
    with pytest.raises(ShapeError, match="matrix"):
        accuracy(np.ones(3), np.array([[0, 0]]))
    with pytest.raises(GroundTruthError, match="outside"):
        accuracy(np.eye(3), np.array([[0, 3]]))
    for bad in (np.array([0, 1]), np.array([[0.0, 1.0]]), np.zeros((0, 2), np.int64), np.array([[-1, 0]])):
        with pytest.raises(GroundTruthError, match=r"\(G, 2\)"):
            check_ground_truth(bad, (3, 3))

"""The paper's metric: top-1 accuracy over the ground-truth pairs, averaged over both directions (A.1)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from collation.core.errors import GroundTruthError
from collation.engine.checks import check_shape, is_integer


def load_ground_truth(path: str | Path) -> np.ndarray:
    """Reads the authors' format: a JSON list of [a, b] index pairs. Returns ``(G, 2)`` int64."""
    path = Path(path)
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        raise GroundTruthError(f"ground truth {path}: no such file") from None
    except OSError as e:
        raise GroundTruthError(f"ground truth {path}: not a JSON file ({e})") from None
    return parse_ground_truth(text, str(path))


def parse_ground_truth(text: bytes, name: str) -> np.ndarray:
    """The ``(G, 2)`` int64 pairs of a ground truth's bytes (``name`` says where they come from)."""
    path = name
    try:
        data = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise GroundTruthError(f"ground truth {path}: not a JSON file ({e})") from None
    pairs = np.asarray(data, dtype=object)
    ok = (
        pairs.ndim == 2
        and pairs.shape[1] == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in pairs.ravel())
    )
    if not ok or len(pairs) == 0:
        raise GroundTruthError(f"ground truth {path}: expected a non-empty list of [a, b] index pairs")
    return pairs.astype(np.int64)


def _check_pairs(ground_truth: np.ndarray) -> np.ndarray:
    """``(G, 2)`` non-negative integer pairs, else ``GroundTruthError``."""
    pairs = np.asarray(ground_truth)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or len(pairs) == 0 or not is_integer(pairs) or (pairs < 0).any():
        raise GroundTruthError(
            f"ground truth must be a non-empty (G, 2) array of index pairs, not an array of "
            f"shape {pairs.shape} and type {pairs.dtype}"
        )
    return pairs.astype(np.int64, copy=False)


def check_ground_truth(ground_truth: np.ndarray, shape: tuple[int, int], *, restrict: bool = False) -> np.ndarray:
    """The pairs of ``(G, 2)`` ground truth that fit a matrix of ``shape`` ``(n0, n1)``.

    Out-of-range pairs are an error unless ``restrict``; then they are left out.
    """
    ground_truth = _check_pairs(ground_truth)
    inside = (ground_truth[:, 0] < shape[0]) & (ground_truth[:, 1] < shape[1])
    if not inside.all() and not restrict:
        a, b = ground_truth[~inside][0]
        raise GroundTruthError(
            f"ground truth pair ({a}, {b}) is outside the {shape[0]} x {shape[1]} score matrix "
            f"({int((~inside).sum())} of {len(ground_truth)} pairs); check the pair order, or restrict "
            "the evaluation to the illustrations present"
        )
    if not inside.any():
        raise GroundTruthError(f"no ground-truth pair falls inside the {shape[0]} x {shape[1]} score matrix")
    return ground_truth[inside]


def accuracy(matrix: np.ndarray, ground_truth: np.ndarray) -> float:
    """Mean of the two directions' top-1 accuracy; argmax over all illustrations of the other side.

    Args:
        matrix: ``(n0, n1)`` scores.
        ground_truth: ``(G, 2)`` pairs inside the matrix (see ``check_ground_truth``).
    """
    matrix = np.asarray(matrix)
    check_shape("matrix", matrix, ("n0", "n1"))
    ground_truth = check_ground_truth(ground_truth, matrix.shape)
    a, b = ground_truth[:, 0], ground_truth[:, 1]
    forward = (matrix[a].argmax(axis=1) == b).mean()
    backward = (matrix[:, b].argmax(axis=0) == a).mean()
    return float((forward + backward) / 2)

"""The device x dtype grid of the engine tests, in the manner of Kornia's ``(device, dtype)`` tests.

Decorate a test with ``@device_dtype_grid`` (arguments ``device``, ``dtype``: the storage type of
descriptors) or ``@device_grid`` (argument ``device``: for geometry, which always runs in float32 or
float64). The rows:

- ``cpu-float32``: always; the reference.
- ``cpu-bfloat16``: decisions (mutual nearest neighbours, argmax of score matrices) must equal the
  float32 ones; values may differ by ``tolerance(dtype)``.
- ``cuda-float16``: the GPU path with half-precision storage and compute; skipped without CUDA.

This is a helper module, not a conftest: tests import it (``from engine_grid import ...``) as they
import ``synthetic``.
"""

from __future__ import annotations

import pytest
import torch

NO_CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")

DEVICE_DTYPES = [
    pytest.param("cpu", torch.float32, id="cpu-float32"),
    pytest.param("cpu", torch.bfloat16, id="cpu-bfloat16"),
    pytest.param("cuda", torch.float16, id="cuda-float16", marks=NO_CUDA),
]
"""(device, dtype) rows of the grid."""

DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=NO_CUDA)]
"""Device rows, for functions whose dtype is fixed."""

device_dtype_grid = pytest.mark.parametrize(("device", "dtype"), DEVICE_DTYPES)
device_grid = pytest.mark.parametrize("device", DEVICES)

SCORE_TOLERANCE = {torch.float32: 1e-6, torch.bfloat16: 0.05, torch.float16: 0.05}
"""Largest difference of an S_trans or S_matching score (in [0, 2]) from the CPU float32 one.

bfloat16 keeps 8 bits of mantissa: a descriptor's rounding moves cosines by about 4e-3, which can
swap a near-tied nearest neighbour and then the RANSAC winner; measured on the synthetic drawings:
0.027 (bfloat16) and 0.010 (float16) for S_trans, 0.003 and 3e-4 for S_matching. The argmax of
every row and column stays the same.
"""

COSINE_TOLERANCE = {torch.float32: 1e-6, torch.bfloat16: 1e-2, torch.float16: 2e-3}
"""Largest difference of a cosine of unit vectors from the CPU float32 one (relative rounding 2⁻⁸, 2⁻¹¹)."""


def tolerance(dtype: torch.dtype, table: dict[torch.dtype, float] = SCORE_TOLERANCE) -> float:
    """The grid's tolerance for values computed from ``dtype`` storage."""
    return table[dtype]


def full_scores_transposed(feats0, feats1, n_transpositions: int = 1, **options):
    """S ``(n0, n1)`` float64 and T ``(n0, n1)`` int8 of every pair, through the one scoring function
    (``score_pairs`` over ``all_pairs``): the tests' score matrix."""
    from collation.engine.similarity import all_pairs, score_pairs

    n0, n1 = len(feats0), len(feats1) // n_transpositions
    scores, winners = score_pairs(feats0, feats1, all_pairs(n0, n1), n_transpositions=n_transpositions, **options)
    return scores.numpy().reshape(n0, n1), winners.numpy().reshape(n0, n1)


def full_scores(feats0, feats1, **options):
    """S ``(n0, n1)`` float64 of every pair (``full_scores_transposed`` with one transposition)."""
    return full_scores_transposed(feats0, feats1, 1, **options)[0]

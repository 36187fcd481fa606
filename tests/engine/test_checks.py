"""The boundary checks and the typed errors they raise."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

from collation.core.errors import DTypeError, IndexRangeError, InputError, OptionError, ShapeError
from collation.core.options import check_option
from collation.engine.checks import as_index_pairs, check_dtype, check_positive_float, check_positive_int, check_shape


def test_option_error_names_the_option_and_every_allowed_value():
    assert check_option("kernel", "paper", ("reference", "paper")) == "paper"
    with pytest.raises(OptionError) as e:
        check_option("kernel", "gauss", ("reference", "paper"))
    assert str(e.value) == "unknown kernel 'gauss': choose one of reference, paper"
    assert (e.value.option, e.value.value, e.value.allowed, e.value.field) == (
        "kernel",
        "gauss",
        ("reference", "paper"),
        "kernel",
    )
    assert isinstance(e.value, InputError)
    with pytest.raises(OptionError):
        check_option("kernel", None, ("reference", "paper"))


def test_shapes_bind_names_across_arguments():
    a, b = torch.zeros(4, 3, 2), torch.zeros(4, 5)
    dims = check_shape("a", a, ("B", "M", 2))
    assert dims == {"B": 4, "M": 3}
    assert check_shape("b", b, ("B", "K"), dims) == {"B": 4, "M": 3, "K": 5}
    with pytest.raises(ShapeError) as e:
        check_shape("b", torch.zeros(2, 5), ("B", "K"), dims)
    assert e.value.actual == (2, 5) and e.value.expected == ("B", "K") and e.value.field == "b"
    assert "B is 4 elsewhere" in str(e.value)


@pytest.mark.parametrize(("shape", "expected"), [((4, 3), ("B", "M", 2)), ((4, 3, 3), ("B", "M", 2)), ((), ("N",))])
def test_wrong_rank_or_fixed_size_is_a_shape_error(shape, expected):
    with pytest.raises(ShapeError) as e:
        check_shape("x", np.zeros(shape), expected)
    assert e.value.actual == shape
    assert str(e.value).startswith(f"x must have shape ({', '.join(map(str, expected))}), not {shape}")


def test_leading_ellipsis_accepts_any_batch_dimensions():
    assert check_shape("src", torch.zeros(2, 7, 3, 2), ("...", "n", 2)) == {"n": 3}
    assert check_shape("src", torch.zeros(3, 2), ("...", "n", 2)) == {"n": 3}
    with pytest.raises(ShapeError):
        check_shape("src", torch.zeros(2), ("...", "n", 2))


def test_dtype_kinds():
    check_dtype("i", torch.zeros(2, dtype=torch.int32), "integer")
    check_dtype("f", np.zeros(2, np.float32), "floating")
    check_dtype("m", torch.zeros(2, dtype=torch.bool), "bool")
    with pytest.raises(DTypeError) as e:
        check_dtype("i", torch.zeros(2), "integer")
    assert e.value.actual == "torch.float32" and "integer" in e.value.expected
    with pytest.raises(DTypeError):
        check_dtype("i", torch.zeros(2, dtype=torch.bool), "integer")  # booleans are no indices


def test_index_pairs_are_checked_for_shape_type_and_range():
    pairs = as_index_pairs("pairs", [[0, 1], [2, 0]], (3, 2))
    assert pairs.dtype == torch.int64 and pairs.tolist() == [[0, 1], [2, 0]]
    assert as_index_pairs("pairs", [], (3, 2)).shape == (0, 2)
    assert as_index_pairs("pairs", np.zeros((0, 2)), (3, 2)).shape == (0, 2)
    with pytest.raises(ShapeError) as e:
        as_index_pairs("pairs", [0, 1], (3, 2))
    assert e.value.actual == (2,) and e.value.expected == ("P", 2)
    with pytest.raises(DTypeError):
        as_index_pairs("pairs", [[0.0, 1.5]], (3, 2))
    with pytest.raises(IndexRangeError) as e:
        as_index_pairs("pairs", [[0, 2]], (3, 2))
    assert e.value.bounds == (3, 2) and "out of range for 3 x 2" in str(e.value)
    with pytest.raises(IndexRangeError):
        as_index_pairs("pairs", torch.tensor([[-1, 0]]), (3, 2))


def test_numbers():
    assert check_positive_int("n", 3) == 3
    assert check_positive_float("t", 2) == 2.0
    for bad in (0, -1, True, 1.5, "2"):
        with pytest.raises(InputError, match="positive integer"):
            check_positive_int("n", bad)
    for bad in (0, -1.0, float("inf"), float("nan"), "1"):
        with pytest.raises(InputError, match="above 0"):
            check_positive_float("t", bad)


@pytest.mark.heavy
def test_checks_survive_python_optimizations():
    # Boundary checks are request validation, not asserts: `python -O` must not remove them.
    code = (
        "from collation.core.options import check_option\n"
        "try:\n    check_option('kernel', 'x', ('reference', 'paper'))\n"
        "except Exception as e:\n    print(type(e).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "OptionError"

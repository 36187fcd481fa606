"""Checks at the engine's boundary: option values, shapes, data types and index ranges.

In the manner of Kornia's ``KORNIA_CHECK_SHAPE``, but these are plain ``if ...: raise`` statements:
they are request validation too (the service and the command line pass user options straight to the
engine), so ``python -O`` must not switch them off. Every failure is one of the project's typed
errors (``collation.core.errors``), which the command line and the service already report.

Shapes are written as in the docstrings, ``("B", "N", 2)``: a string names a free size, which must
be the same wherever the name appears among the tensors checked together (pass the returned ``dims``
on), an integer is a fixed size, and a leading ``"..."`` accepts any number of leading dimensions.
The shape and type checks never read tensor values, so they cost no device synchronization.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from collation.core.errors import DTypeError, IndexRangeError, InputError, ShapeError

Dim = int | str
Array = torch.Tensor | np.ndarray


def check_shape(name: str, x: Array, expected: Sequence[Dim], dims: Mapping[str, int] | None = None) -> dict[str, int]:
    """Checks ``x.shape`` against ``expected``, binding named sizes consistently with ``dims``.

    Args:
        name: the argument's name, for the message.
        x: a tensor or array.
        expected: e.g. ``("B", "S", "L", "C")``, ``("P", 2)`` or ``("...", "n", 2)``.
        dims: sizes already bound by earlier checks of the same call.

    Returns:
        ``dims`` with the sizes bound by ``x`` added.

    Raises:
        ShapeError: wrong number of dimensions, a fixed size that differs, or a named size that
            differs from its earlier binding.
    """
    if not isinstance(x, torch.Tensor | np.ndarray):
        raise InputError(f"{name} must be a tensor or an array, not {type(x).__name__}", field=name)
    shape = tuple(x.shape)
    pattern = tuple(expected)
    leading = bool(pattern) and pattern[0] == "..."
    if leading:
        pattern = pattern[1:]
    wrong_rank = len(shape) < len(pattern) if leading else len(shape) != len(pattern)
    if wrong_rank:
        raise ShapeError(name, shape, tuple(expected), f"{len(shape)} dimensions")
    bound = dict(dims or {})
    for size, want in zip(shape[len(shape) - len(pattern) :], pattern, strict=True):
        if isinstance(want, int):
            if size != want:
                raise ShapeError(name, shape, tuple(expected))
        elif want in bound and bound[want] != size:
            raise ShapeError(name, shape, tuple(expected), f"{want} is {bound[want]} elsewhere")
        else:
            bound[want] = size
    return bound


def is_integer(x: Array) -> bool:
    """Integer (not boolean) data type."""
    if isinstance(x, torch.Tensor):
        return not x.dtype.is_floating_point and not x.dtype.is_complex and x.dtype != torch.bool
    return np.issubdtype(x.dtype, np.integer)


def check_dtype(name: str, x: Array, kind: str) -> None:
    """Raises ``DTypeError`` unless ``x`` has a data type of ``kind``: "integer", "floating" or "bool"."""
    if kind == "integer":
        ok = is_integer(x)
    elif kind == "floating":
        ok = x.dtype.is_floating_point if isinstance(x, torch.Tensor) else np.issubdtype(x.dtype, np.floating)
    elif kind == "bool":
        ok = x.dtype in (torch.bool, np.bool_)
    else:
        raise ValueError(f"unknown dtype kind {kind!r}")  # a bug in the caller, not an input error
    if not ok:
        raise DTypeError(name, x.dtype, f"a {kind} data type" if kind != "integer" else "an integer data type")


def as_index_pairs(name: str, pairs: Any, bounds: tuple[int, ...], device: torch.device | None = None) -> torch.Tensor:
    """Index tuples as an int64 tensor ``(P, k)``, each column inside ``[0, bounds[c])``.

    Accepts tensors, arrays and nested lists of integers; an empty input is ``(0, k)``.

    Raises:
        ShapeError: not ``(P, k)``. DTypeError: not integers. IndexRangeError: an index outside its bound.
    """
    k = len(bounds)
    if isinstance(pairs, torch.Tensor):
        tensor = pairs.to(device) if device is not None else pairs
    else:
        array = np.asarray(pairs)
        if array.size == 0:
            array = array.astype(np.int64)
        if array.dtype == object:
            raise DTypeError(name, array.dtype, "an integer data type")
        tensor = torch.as_tensor(array, device=device)
    if tensor.numel() == 0:
        return torch.zeros((0, k), dtype=torch.int64, device=tensor.device)
    check_shape(name, tensor, ("P", k))
    check_dtype(name, tensor, "integer")
    tensor = tensor.long()
    upper = torch.tensor(bounds, dtype=torch.int64, device=tensor.device)
    if bool(((tensor < 0) | (tensor >= upper)).any()):  # one synchronization per call
        raise IndexRangeError(name, bounds)
    return tensor


def check_positive_int(name: str, value: Any) -> int:
    """Returns ``value`` if it is an integer of at least 1 (not a bool); else raises ``InputError``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise InputError(f"{name} must be a positive integer, not {value!r}", field=name)
    return int(value)


def check_integer(name: str, value: Any) -> int:
    """Returns ``value`` if it is an integer (not a bool); else raises ``InputError``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise InputError(f"{name} must be an integer, not {value!r}", field=name)
    return int(value)


def check_positive_float(name: str, value: Any) -> float:
    """Returns ``value`` as a float if it is a finite number above 0; else raises ``InputError``."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.number) or not 0 < value < float("inf"):
        raise InputError(f"{name} must be a finite number above 0, not {value!r}", field=name)
    return float(value)


def check_flag(name: str, value: Any) -> bool:
    """Returns ``value`` if it is a bool (numpy's too); else raises ``InputError``."""
    if not isinstance(value, bool | np.bool_):
        raise InputError(f"{name} must be true or false, not {value!r}", field=name)
    return bool(value)
